import { createHmac } from 'node:crypto';
import { InvalidInputError, RunTerminalError } from './errors.ts';
import { isTerminalStatus, type RunStatus, type TerminationReason } from './run-status.ts';
import type { RunStep } from './run-step.ts';
import { isToolOutcome, ToolOutcome } from './tool-outcome.ts';

/**
 * What a span says about how it ended, and the rules that turn it into an
 * outcome. OpenTelemetry has no status for a cancellation: a cancelled call
 * arrives as ERROR or as UNSET/OK, so the outcome is decided by evidence, in a
 * fixed order. The evidence is what the instrumentation libraries really send:
 * `error.type`, `exception` events (type and message), an MCP
 * `notifications/cancelled`, an MCP result that says `isError`.
 */
export interface SpanEvidence {
  /** `runledger.tool.outcome`, as sent (any value: an unknown one is refused). */
  statedOutcome: string | null;
  /** `error.type`, as sent. */
  errorType: string | null;
  /** The span's status code. */
  status: 'unset' | 'ok' | 'error';
  /** An MCP `notifications/cancelled` was sent for this call. */
  cancelNotified: boolean;
  /** The span's `exception` events: `exception.type` and `exception.message`. */
  exceptions?: readonly SpanException[];
  /** The tool's result says it failed (an MCP result with `isError: true`). */
  resultIsError?: boolean;
}

export interface SpanException {
  type: string | null;
  message: string | null;
}

/** The attribute a sender states the outcome with, ahead of every other piece of evidence. */
export const STATED_OUTCOME_ATTRIBUTE = 'runledger.tool.outcome';

/**
 * Messages of a cancellation as libraries word them: `AbortError: This
 * operation was aborted`, `Request was aborted.` (OpenAI's client), `Abort`
 * (LangGraph's), `CancelledError`, `… was cancelled`.
 */
const CANCELLATION_MESSAGE =
  /\bAbortError\b|\boperation was aborted\b|\b(?:was|been) (?:cancell?ed|canceled|aborted)\b|\bCancelledError\b|^\s*(?:\w*Error:\s*)?(?:abort(?:ed)?|cancell?ed|canceled)\b/i;

/** A timeout, whatever else the name says ("aborted due to timeout"): a failure, never a cancel. */
const TIMEOUT = /time[ _-]?d?[ _-]?out|deadline/i;

/**
 * An `error.type` or `exception.type` that names a cancellation or an abort
 * rather than a fault: `cancelled`, `canceled`, `AbortError`, `ABORT_ERR`,
 * `CancelledError`, `OperationCanceledException`, `context.Canceled`,
 * `RequestAborted`, `tool_cancelled`, … (the words "cancel" and "abort", any
 * case, either spelling), and `20`, the code of a DOMException ABORT_ERR as
 * some libraries record it. A timeout is not one (`TimeoutError`).
 */
export function isCancellationErrorType(errorType: string): boolean {
  const type = errorType.trim();
  if (TIMEOUT.test(type)) return false;
  return /cancel|abort/i.test(type) || type === '20';
}

/**
 * An exception that is a cancellation: its type says so, or its message does
 * where the type is generic — the MCP SDK reports its own abort as code
 * -32001 "MCP error -32001: AbortError: This operation was aborted", and the
 * same code "Request timed out" for a timeout, which is a failure.
 */
export function isCancellationException(exception: SpanException): boolean {
  const type = exception.type?.trim() ?? '';
  const message = exception.message ?? '';
  if (TIMEOUT.test(type) || TIMEOUT.test(message)) return false;
  if (type !== '' && isCancellationErrorType(type)) return true;
  return CANCELLATION_MESSAGE.test(message);
}

/** A stated outcome that is not one of the three: VALUE_INVALID on the attribute. */
function unknownStatedOutcome(value: string): InvalidInputError {
  return new InvalidInputError(
    'VALUE_INVALID',
    `${STATED_OUTCOME_ATTRIBUTE} must be ok, failed or cancelled, not ${JSON.stringify(value.slice(0, 40))}`,
    STATED_OUTCOME_ATTRIBUTE,
  );
}

/**
 * The outcome of a tool span, by evidence in this order:
 * 1. `runledger.tool.outcome` when set (ok, failed or cancelled; anything else is refused);
 * 2. a cancellation: an `error.type` or an `exception` event naming a
 *    cancellation or abort (not a timeout), or an MCP `notifications/cancelled`
 *    for the call: `cancelled`;
 * 3. status ERROR, any other `error.type` (`tool_error`, `timeout`, ...), an
 *    `exception` event, or a result with `isError: true`: `failed`;
 * 4. otherwise `ok`.
 */
export function toolOutcomeFromEvidence(evidence: SpanEvidence): ToolOutcome {
  if (evidence.statedOutcome !== null) {
    if (!isToolOutcome(evidence.statedOutcome)) throw unknownStatedOutcome(evidence.statedOutcome);
    return evidence.statedOutcome;
  }
  const errorType = evidence.errorType?.trim() || null;
  const exceptions = evidence.exceptions ?? [];
  const timedOut = exceptions.some((e) => TIMEOUT.test(e.type ?? '') || TIMEOUT.test(e.message ?? ''));
  const cancelled =
    (errorType !== null && isCancellationErrorType(errorType)) ||
    exceptions.some(isCancellationException) ||
    evidence.cancelNotified;
  if (cancelled && !timedOut) return ToolOutcome.Cancelled;
  if (evidence.status === 'error' || errorType !== null || exceptions.length > 0 || evidence.resultIsError) {
    return ToolOutcome.Failed;
  }
  return ToolOutcome.Ok;
}

/**
 * The public code of a failed call from what the span named (`error.type`,
 * else the first exception's type), as a failure code: upper-case words
 * joined by `_` (`TypeError` → `TYPE_ERROR`, `tool_error` → `TOOL_ERROR`, the
 * MCP SDK's `-32603` → `MCP_ERROR_32603`); the class a stack in the message
 * names where the exception has no type; `EXCEPTION` for an exception that
 * names nothing; `TOOL_ERROR` for a result that says `isError` and names
 * nothing; null when the span named nothing.
 */
export function failureCodeFromEvidence(evidence: SpanEvidence): string | null {
  const exceptions = evidence.exceptions ?? [];
  const named =
    evidence.errorType?.trim() ||
    exceptions.find((e) => e.type?.trim())?.type?.trim() ||
    exceptions.map((e) => typeInMessage(e.message)).find((t) => t !== null);
  if (named) {
    if (/^-?\d+$/.test(named)) return `MCP_ERROR_${named.replace('-', '')}`.slice(0, 64);
    const words = named
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
      .replace(/[^A-Za-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .toUpperCase();
    if (words !== '') return (/^[A-Z]/.test(words) ? words : `E_${words}`).slice(0, 64);
  }
  if (exceptions.length > 0) return 'EXCEPTION';
  return evidence.resultIsError ? 'TOOL_ERROR' : null;
}

/**
 * An error's class where a library recorded only a message with its stack
 * (OpenInference: "… \n\nToolException: …"): the last `SomethingError:` or
 * `SomethingException:` that starts a line.
 */
function typeInMessage(message: string | null): string | null {
  const found = [...(message ?? '').matchAll(/^([A-Za-z_$][\w$]*(?:Error|Exception)):/gm)];
  return found.at(-1)?.[1] ?? null;
}

/** Why a call failed or was cut off, as the span told it (private: it is the library's or server's text). */
export function failureReasonFromEvidence(
  evidence: SpanEvidence,
  statusMessage: string | null,
): string | null {
  const told = evidence.exceptions?.find((e) => e.message?.trim())?.message?.trim() ?? statusMessage?.trim();
  return told ? told.slice(0, FAILURE_REASON_LENGTH) : null;
}

/** The longest reason kept of a span's error: enough for a message and the first lines of a trace. */
export const FAILURE_REASON_LENGTH = 2_000;

/** How a run ends, read off its root (or agent) span with the same evidence as a tool call. */
export interface RunEnding {
  status: Extract<RunStatus, 'completed' | 'failed' | 'cancelled'>;
  reason: TerminationReason;
}

/**
 * A run's ending from its root span: a cancellation ends it `cancelled`
 * (reason `cancelled`), an error `failed` (reason `not_retryable`: the agent
 * gave up on an error), anything else `completed`. `runledger.tool.outcome`
 * is a tool's attribute and plays no part here.
 */
export function runEndingFromEvidence(evidence: Omit<SpanEvidence, 'statedOutcome'>): RunEnding {
  switch (toolOutcomeFromEvidence({ ...evidence, statedOutcome: null })) {
    case ToolOutcome.Cancelled:
      return { status: 'cancelled', reason: 'cancelled' };
    case ToolOutcome.Failed:
      return { status: 'failed', reason: 'not_retryable' };
    case ToolOutcome.Ok:
      return { status: 'completed', reason: 'completed' };
  }
}

/** The worse of two endings: cancelled over failed over completed. */
export function worseEnding(a: RunEnding, b: RunEnding): RunEnding {
  const rank = { completed: 0, failed: 1, cancelled: 2 } as const;
  return rank[b.status] > rank[a.status] ? b : a;
}

/**
 * A trace's spans lie within its root span, so a run ended by its root (or by
 * any writer) still takes the steps of calls that started before it ended:
 * exporters deliver spans late and out of order. A step that started after
 * the end is refused as for every writer (RUN_TERMINAL).
 */
export function checkRunAcceptsSpanStep(
  run: { uuid: string; status: RunStatus; finishedAt: Date | null },
  step: Pick<RunStep, 'occurredAt' | 'durationMs'>,
): void {
  if (!isTerminalStatus(run.status)) return;
  const startedAt = step.occurredAt.getTime() - step.durationMs;
  if (run.finishedAt === null || startedAt > run.finishedAt.getTime()) {
    throw new RunTerminalError(run.uuid, run.status, 'it takes only spans that started before it ended');
  }
}

/**
 * The run a group of spans goes to, as a UUID that the sender, the kind of
 * key (`trace` or `conversation`) and the key itself decide: the same trace
 * sent again, by any instance, finds the same run, and two senders never share one.
 * An HMAC-SHA-256 of the three under the service's own secret, shaped as a
 * version 8 (custom) UUID: trace ids travel in every `traceparent` and owner
 * names are no secret, so without the key anyone could compute a sender's run
 * id, claim it first with startRun, or test whether it exists.
 */
export function spanRunUuid(
  secret: string,
  owner: string,
  kind: 'trace' | 'conversation',
  key: string,
): string {
  const hex = createHmac('sha256', secret)
    .update(`runledger-otlp\u0000${owner}\u0000${kind}\u0000${key}`)
    .digest('hex');
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
