import { findMcpServer, recordContact } from '../db/mcp-servers.ts';
import { findRunsByUuids } from '../db/runs.ts';
import type { CallProgress } from '../domain/call-progress.ts';
import { InvalidInputError, RunNotFoundError } from '../domain/errors.ts';
import type { ElicitationAnswer, ElicitationAsked } from '../domain/human-request.ts';
import { checkInteger, Limits } from '../domain/limits.ts';
import type { McpServerConfig } from '../domain/mcp-server.ts';
import { recordableOwners, requirePermission } from '../domain/permissions.ts';
import { checkRunTakesCalls } from '../domain/run-lifecycle.ts';
import type { RunStatus } from '../domain/run-status.ts';
import type { JsonValue } from '../domain/tool-result.ts';
import { checkUuid } from '../domain/uuid.ts';
import { askForCall } from './human-requests.ts';
import type { McpDependencies } from './mcp.ts';
import { serverNotFound } from './mcp-servers.ts';
import { type AppendResult, recordPermitted } from './record-steps.ts';
import type { Scope } from './scope.ts';
import { checkToolCallFacts, type ToolCallFacts } from './step-input.ts';

export interface CallToolInput {
  runUuid: string;
  /** The identifier of a registered server. */
  server: string;
  toolName: string;
  arguments?: JsonValue | null;
  timeoutMs: number;
  round: number;
}

/** The input's field for each fact of the call, as callTool names them. */
const CALL_TOOL_FIELDS: Record<keyof ToolCallFacts, string> = {
  round: 'round',
  toolName: 'toolName',
  server: 'server',
  arguments: 'arguments',
};

/** Everything the input says, checked before anything goes on the wire. */
function checkedCall(input: CallToolInput) {
  const runUuid = checkUuid(input.runUuid);
  const args = input.arguments ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new InvalidInputError('VALUE_INVALID', 'arguments must be a JSON object', 'arguments');
  }
  const facts = checkToolCallFacts(
    { round: input.round, toolName: input.toolName, server: input.server, arguments: args },
    (name) => CALL_TOOL_FIELDS[name],
    Limits.shortNameLength,
  );
  return {
    runUuid,
    /** The registered server's identifier, checked with the facts. */
    server: input.server,
    facts,
    arguments: args,
    timeoutMs: checkInteger(input.timeoutMs, 'timeoutMs', 1, Limits.maxToolCallTimeoutMs),
  };
}

/**
 * Calls a tool on a registered MCP server inside one of the actor's runs and
 * records the step. The path of a tool result (docs/architecture.md), top to bottom:
 *
 * 1. who may do it: record permission, the actor's own run, a run not ended;
 * 2. the adapter (src/mcp) makes one call on the server's session and hands
 *    back a domain `ToolResult`: ok, failed with its code (TOOL_ERROR for an
 *    isError answer, an MCP_* transport fault, the deadline) or cancelled
 *    (the run was cancelled while the call was on the wire);
 * 3. RunTrace bounds the result (bounding.ts) and builds the RunStep, isError
 *    derived from the outcome;
 * 4. the repository stores it, in the transaction that numbers it.
 *
 * Never retried: a call that was cut off may already have acted on the other side.
 */
export function callTool(scope: Scope, input: CallToolInput, mcp: McpDependencies): Promise<AppendResult> {
  // Held whole, its step stored included: a shutdown cuts it off, then waits for the step.
  return mcp.inFlight.track(callAndRecord(scope, input, mcp));
}

async function callAndRecord(
  scope: Scope,
  input: CallToolInput,
  mcp: McpDependencies,
): Promise<AppendResult> {
  const { db, actor } = scope;
  // 1. Who may do it.
  requirePermission(actor, 'record');
  const call = checkedCall(input);
  const server = await findMcpServer(db, call.server);
  if (!server) throw serverNotFound(call.server);
  const owners = recordableOwners(actor);
  const [found] = await findRunsByUuids(db, [call.runUuid], owners);
  if (!found) throw new RunNotFoundError(call.runUuid);
  // In flight, for live streams on every instance, from before the status is read until the step is
  // stored: a stream of the run ends only once no call is left that could still add a step.
  const release = await scope.events?.holdCall(found.id);
  try {
    const [run] = release ? await findRunsByUuids(db, [call.runUuid], owners) : [found];
    if (!run) throw new RunNotFoundError(call.runUuid);
    checkRunTakesCalls({ uuid: run.uuid, status: run.status as RunStatus, finishedAt: run.finishedAt });

    // 2. The adapter's answer, already a domain result; its progress shown live on the way.
    const progress = liveProgress(scope, call.runUuid, {
      toolName: call.facts.toolName,
      server: server.identifier,
    });
    const asking = (asked: ElicitationAsked, signal: AbortSignal) =>
      askForCall(scope, call.runUuid, asked, signal);
    const attempt = await callOnTheWire(mcp, server, call, progress.report, asking).finally(progress.stop);
    if (attempt.answered) await recordContact(db, server.identifier, attempt.latencyMs);

    // 3 and 4. RunTrace bounds it and builds the step; the repository stores it.
    return await recordPermitted(scope, { runUuid: call.runUuid }, { runUuid: call.runUuid }, (now) => [
      {
        type: 'toolResult',
        call: {
          ...call.facts,
          server: server.identifier,
          // The call's own time; opening the session, when this call did, is stated apart.
          durationMs: attempt.latencyMs,
          sessionStartMs: attempt.sessionStartMs,
          progress: attempt.progress,
          occurredAt: now,
        },
        result: attempt.result,
      },
    ]);
  } finally {
    if (release) {
      await release();
      // A stream waiting for this call to let go looks again.
      await scope.events?.runChanged(call.runUuid);
    }
  }
}

/** One call, registered as in flight for its run while it lasts, so that a cancel of the run cuts it off. */
async function callOnTheWire(
  mcp: McpDependencies,
  server: McpServerConfig,
  call: ReturnType<typeof checkedCall>,
  onProgress: (progress: CallProgress) => void,
  onElicitation: (asked: ElicitationAsked, signal: AbortSignal) => Promise<ElicitationAnswer>,
) {
  const controller = mcp.inFlight.begin(call.runUuid);
  try {
    return await mcp.callTool(server, call.facts.toolName, call.arguments, {
      signal: controller.signal,
      timeoutMs: call.timeoutMs,
      onProgress,
      onElicitation,
    });
  } finally {
    mcp.inFlight.end(call.runUuid, controller);
  }
}

/** A call's progress goes out at most this often; the latest report waits for the next slot, never lost. */
export const PROGRESS_INTERVAL_MS = 100;

/**
 * The live side of a call's progress: each report to the run's streams on
 * every instance, at most one per PROGRESS_INTERVAL_MS (a server may report a
 * thousand times a second), the last one always sent; nothing once stopped.
 */
function liveProgress(scope: Scope, runUuid: string, of: { toolName: string; server: string }) {
  const call = { id: crypto.randomUUID(), ...of };
  let sentAt = 0;
  let pending: CallProgress | null = null;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let sending: Promise<void> = Promise.resolve();
  const send = (progress: CallProgress) => {
    sentAt = Date.now();
    sending = scope.events?.callProgress(runUuid, call, progress) ?? sending;
  };
  return {
    report: (progress: CallProgress) => {
      if (stopped || !scope.events) return;
      const wait = sentAt + PROGRESS_INTERVAL_MS - Date.now();
      if (wait <= 0 && timer === undefined) return send(progress);
      pending = progress;
      timer ??= setTimeout(
        () => {
          timer = undefined;
          if (!stopped && pending) send(pending);
          pending = null;
        },
        Math.max(wait, 0),
      );
    },
    /** No more reports; resolves once the last one is sent, so that it reaches streams before the step does. */
    stop: () => {
      stopped = true;
      clearTimeout(timer);
      return sending;
    },
  };
}
