import { type CallProgress, checkedProgress } from '../domain/call-progress.ts';
import type { ElicitationAnswer, ElicitationAsked } from '../domain/human-request.ts';
import { HumanRequestLimits } from '../domain/human-request-limits.ts';
import type { McpServerConfig } from '../domain/mcp-server.ts';
import type { JsonValue, ToolArtifact } from '../domain/tool-result.ts';
import { ToolFailure, ToolResult } from '../domain/tool-result.ts';
import { isServiceStopping } from './in-flight-calls.ts';
import type { McpPolicy } from './outbound-policy.ts';
import { type CallAnswer, type McpSession, McpSessions } from './sessions.ts';
import { clipRemoteText, McpFault, type McpFaultCode, McpTransportError } from './transport-error.ts';
import { asTransportError } from './transport-error-mapping.ts';

/** What became of one attempt at a call: the result, whether the server answered, how long it took. */
export interface ToolCallAttempt {
  result: ToolResult;
  /** True when the server answered at all (an isError answer included). */
  answered: boolean;
  /** The call's own time: from the request on an open session to its answer or fault. */
  latencyMs: number;
  /** How long opening the session took, when this call opened it (spawn or connect, then initialize); else null. */
  sessionStartMs: number | null;
  /** The stable code of the fault when the call did not come back ok or isError; null otherwise. */
  fault: McpFaultCode | null;
  /** The last progress the server reported on the way; null when it reported none. */
  progress: CallProgress | null;
}

/** Two JSON values equal as data (key order aside). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((key) =>
    sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  );
}

/** The text block that only repeats the structured content (MCP asks servers to send both). */
function repeatsStructured(text: string, structured: Record<string, unknown>): boolean {
  try {
    return sameJson(JSON.parse(text), structured);
  } catch {
    return false;
  }
}

/**
 * A server's answer as a tool result: isError is failed (TOOL_ERROR); text
 * is the content; anything else an artifact. Structured content is stored
 * once, as an artifact, not again as the text block that serialises it.
 */
export function fromAnswer(answer: CallAnswer): ToolResult {
  const parts = answer.content ?? [];
  const structured = answer.structuredContent;
  const text = parts
    .filter((part) => part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text as string)
    .filter((part) => !structured || !repeatsStructured(part, structured))
    .join('\n');
  if (answer.isError) return ToolResult.failed(text, ToolFailure.ToolError);
  const artifacts: ToolArtifact[] = parts
    .filter((part) => part.type !== 'text')
    .map((part) => ({ title: part.type, type: 'json', content: part as unknown as JsonValue }));
  if (structured) {
    artifacts.push({ title: 'structuredContent', type: 'json', content: structured as JsonValue });
  }
  return ToolResult.ok(text, artifacts);
}

export interface CallOptions {
  /** The operator's cancel: aborted when the run is cancelled. */
  signal: AbortSignal;
  /** Everything the caller waits for, opening the session included. */
  timeoutMs: number;
  /** Each progress report of the server while the call runs, checked. */
  onProgress?: (progress: CallProgress) => void;
  /**
   * A person asked on the server's behalf (elicitation): the call's deadline
   * stops while this runs, bounded by HumanRequestLimits.maxElicitationWaitMs.
   * Without it, the server is answered `cancel`.
   */
  onElicitation?: (asked: ElicitationAsked, signal: AbortSignal) => Promise<ElicitationAnswer>;
}

/** A deadline that stops while a person is asked, and runs on after. */
class PausableDeadline {
  readonly #controller = new AbortController();
  #left: number;
  #startedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #pauses = 0;

  constructor(ms: number) {
    this.#left = ms;
    this.#run();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  #run(): void {
    this.#startedAt = performance.now();
    this.#timer = setTimeout(() => this.#controller.abort(new Error('deadline')), Math.max(this.#left, 0));
  }

  pause(): void {
    this.#pauses += 1;
    if (this.#pauses > 1 || this.#controller.signal.aborted) return;
    clearTimeout(this.#timer);
    this.#left -= performance.now() - this.#startedAt;
  }

  resume(): void {
    this.#pauses -= 1;
    if (this.#pauses === 0 && !this.#controller.signal.aborted) this.#run();
  }

  clear(): void {
    clearTimeout(this.#timer);
  }
}

/**
 * Calls one tool once, on the server's session: never retried, since a call
 * that was cut off may already have acted on the other side, and nothing
 * here can know. What ended it decides the outcome, by its own evidence:
 * the operator's cancel (the signal) is cancelled; the deadline failed with
 * MCP_DEADLINE_EXHAUSTED; a broken session failed with its fault. Both the
 * cancel and the deadline send notifications/cancelled, on either transport.
 */
export async function callOnSession(
  sessions: McpSessions,
  server: McpServerConfig,
  tool: string,
  args: Record<string, unknown>,
  options: CallOptions,
): Promise<ToolCallAttempt> {
  const waitStarted = performance.now();
  const deadline = new PausableDeadline(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, deadline.signal]);
  const elicit = async (asked: ElicitationAsked): Promise<ElicitationAnswer> => {
    if (!options.onElicitation) return { action: 'cancel' };
    deadline.pause();
    const bound = AbortSignal.timeout(HumanRequestLimits.maxElicitationWaitMs);
    try {
      return await options.onElicitation(asked, AbortSignal.any([signal, bound]));
    } finally {
      deadline.resume();
    }
  };
  let session = null as McpSession | null;
  let sessionStartMs: number | null = null;
  let callStarted: number | null = null;
  let lastProgress: CallProgress | null = null;
  const progressed = (report: { progress: number; total?: number; message?: string }) => {
    const progress = checkedProgress({
      ...report,
      message: typeof report.message === 'string' ? clipRemoteText(report.message) : null,
    });
    if (!progress) return;
    lastProgress = progress;
    options.onProgress?.(progress);
  };
  const attempt = (result: ToolResult, answered: boolean, fault: McpFaultCode | null): ToolCallAttempt => ({
    result,
    answered,
    latencyMs: callStarted === null ? 0 : Math.round(performance.now() - callStarted),
    // A call that never reached an open session spent its time waiting for one.
    sessionStartMs: callStarted === null ? Math.round(performance.now() - waitStarted) : sessionStartMs,
    fault,
    progress: lastProgress,
  });
  try {
    if (options.signal.aborted) throw options.signal.reason;
    const spec = sessions.specFor(server);
    const callOn = async () => {
      const opened = await sessions.sessionFor(spec, signal);
      const current = opened.session;
      session = current;
      // A retry's new session is part of the call's own time: the call began on the first one.
      if (callStarted === null) {
        sessionStartMs = opened.opened;
        callStarted = performance.now();
      }
      return current.callTool(tool, args, signal, options.timeoutMs, progressed, elicit);
    };
    let answer: CallAnswer;
    try {
      answer = await callOn();
    } catch (error) {
      // A session the server no longer knows: the request was never processed, so it is sent once
      // more, on a new session. The only retry there is: any other fault may have acted on the other side.
      if (!(error instanceof McpTransportError && error.code === McpFault.SessionExpired)) throw error;
      answer = await callOn();
    }
    sessions.answered(spec);
    return attempt(fromAnswer(answer), true, null);
  } catch (error) {
    const fault = options.signal.aborted
      ? isServiceStopping(options.signal)
        ? McpTransportError.forStoppingService()
        : McpTransportError.forCancelledCall()
      : (session?.fault ??
        (deadline.signal.aborted
          ? McpTransportError.exhaustedDeadline(options.timeoutMs)
          : asTransportError(error, null, 'tools/call')));
    const result = fault.isCancellation()
      ? ToolResult.cancelled(fault.message, fault.code)
      : ToolResult.failed(fault.message, fault.code);
    return attempt(result, false, fault.code);
  } finally {
    deadline.clear();
  }
}

/** One call on a session of its own, closed after: for one-off use (a check, a comparison), not the service. */
export async function callMcpTool(
  server: McpServerConfig,
  tool: string,
  args: Record<string, unknown>,
  options: CallOptions & { policy: McpPolicy },
): Promise<ToolCallAttempt> {
  const sessions = new McpSessions(options.policy);
  try {
    return await callOnSession(sessions, server, tool, args, options);
  } finally {
    await sessions.close();
  }
}

/** A tool a server lists (`tools/list`), its texts made safe to show. */
export interface ListedTool {
  name: string;
  title: string | null;
  description: string | null;
  /** The JSON Schema of its arguments, as the server states it. */
  inputSchema: Record<string, unknown>;
}

/** The most tools a listing keeps, and pages it reads: a server that lists more is cut off there. */
export const MAX_LISTED_TOOLS = 1_000;
const MAX_LIST_PAGES = 50;

/**
 * Every tool a registered server lists, page after page, on its kept session
 * (opened if need be), within `timeoutMs` in all. A session the server no
 * longer knows is opened again once, as for a call. Faults are transport
 * faults with their MCP_* codes.
 */
export async function listToolsOnSession(
  sessions: McpSessions,
  server: McpServerConfig,
  timeoutMs: number,
): Promise<ListedTool[]> {
  const signal = AbortSignal.timeout(timeoutMs);
  const spec = sessions.specFor(server);
  const listAll = async () => {
    const { session } = await sessions.sessionFor(spec, signal);
    const tools: ListedTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES && tools.length < MAX_LISTED_TOOLS; page += 1) {
      const answer = await session.client.listTools(cursor === undefined ? undefined : { cursor }, {
        signal,
        timeout: timeoutMs,
      });
      for (const tool of answer.tools.slice(0, MAX_LISTED_TOOLS - tools.length)) {
        tools.push({
          name: tool.name,
          title: typeof tool.title === 'string' ? clipRemoteText(tool.title) : null,
          description: typeof tool.description === 'string' ? clipRemoteText(tool.description) : null,
          inputSchema: tool.inputSchema,
        });
      }
      cursor = answer.nextCursor;
      if (cursor === undefined) break;
    }
    sessions.answered(spec);
    return tools;
  };
  const fault = (error: unknown) =>
    signal.aborted && !(error instanceof McpTransportError)
      ? McpTransportError.exhaustedDeadline(timeoutMs)
      : asTransportError(error, null, 'tools/list');
  try {
    return await listAll();
  } catch (error) {
    const first = fault(error);
    if (first.code !== McpFault.SessionExpired) throw first;
    try {
      return await listAll();
    } catch (again) {
      throw fault(again);
    }
  }
}
