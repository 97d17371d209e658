import { randomUUID } from 'node:crypto';
import {
  closeRequest,
  findRequestByKey,
  findRequestsByUuids,
  type HumanRequestRow,
  insertRequest,
  lockRequest,
  openKindsOfRun,
  openRequests,
  overdueRequests,
  type RequestOfRun,
  setWaitingStatus,
} from '../db/human-requests.ts';
import { insertSteps, lastSequence, lockRun, type Transaction } from '../db/run-writes.ts';
import type { RunRow } from '../db/runs.ts';
import type { StepRow } from '../db/steps.ts';
import { repairText } from '../domain/bounding.ts';
import { IdempotencyKeyReusedError, RunNotFoundError, RunTerminalError } from '../domain/errors.ts';
import {
  APPROVAL_DECISIONS,
  type ApprovalDecision,
  checkExpiry,
  checkFourEyes,
  checkInputSchema,
  checkInputValues,
  checkStoredInputSchema,
  type ElicitationAnswer,
  type ElicitationAsked,
  INPUT_ANSWERS,
  type InputSchema,
  type RequestKind,
  RequestNotFoundError,
  RequestNotOpenError,
  type RequestSource,
  type RequestState,
  requestStateAt,
  WAITING_STATUS,
} from '../domain/human-request.ts';
import { HumanRequestLimits } from '../domain/human-request-limits.ts';
import { requestFingerprint } from '../domain/idempotency.ts';
import { checkName, checkText, Limits } from '../domain/limits.ts';
import {
  decidableOwners,
  type Owners,
  recordableOwners,
  requestReadableOwners,
  requirePermission,
} from '../domain/permissions.ts';
import { isTerminalStatus, type RunStatus } from '../domain/run-status.ts';
import type { JsonObject } from '../domain/run-step.ts';
import { RunTrace } from '../domain/run-trace.ts';
import type { JsonValue } from '../domain/tool-result.ts';
import { checkUuid } from '../domain/uuid.ts';
import { BackgroundLoop } from './background-loop.ts';
import type { Scope } from './scope.ts';

/** What a request or a decision stored. */
export interface RequestRecorded {
  request: HumanRequestRow;
  run: RunRow;
  /** The step it appended to the timeline; null for a replay. */
  step: StepRow | null;
  /** True when a retry: nothing new was written. */
  replayed: boolean;
}

/** A request as it reads at an instant (an open one past its expiry reads as expired). */
export function stateOf(entry: RequestOfRun, now = new Date()): RequestState {
  return requestStateAt(
    { state: entry.request.state as RequestState, expiresAt: entry.request.expiresAt },
    entry.run,
    now,
  );
}

interface NewRequest {
  kind: RequestKind;
  source: RequestSource;
  toolName?: string | null;
  server?: string | null;
  arguments?: JsonValue | null;
  reason?: string | null;
  prompt?: string | null;
  schema?: InputSchema | null;
  expiresAt?: Date | null;
}

/** The step a request appends: what is asked in the private payload, its facts in the metadata. */
function requestStep(request: HumanRequestRow, round: number): { payload: JsonObject; metadata: JsonObject } {
  const metadata: JsonObject = { request: request.uuid, phase: 'requested', source: request.source };
  if (request.toolName !== null) metadata.toolName = request.toolName;
  if (request.server !== null) metadata.server = request.server;
  if (request.expiresAt) metadata.expiresAt = request.expiresAt.toISOString();
  metadata.round = round;
  const payload: JsonObject =
    request.kind === 'approval'
      ? { arguments: (request.arguments ?? null) as JsonValue, reason: request.reason ?? null }
      : { prompt: request.prompt ?? '', schema: (request.schema ?? {}) as JsonValue };
  return { payload, metadata };
}

/** Appends one step of a request's kind under the run's lock. */
async function appendRequestStep(
  tx: Transaction,
  run: RunRow,
  kind: RequestKind,
  at: Date,
  content: { payload: JsonObject; metadata: JsonObject },
): Promise<StepRow> {
  const trace = new RunTrace({ nextSequence: (await lastSequence(tx, run.id)) + 1, clock: () => at });
  const { round: _round, ...metadata } = content.metadata;
  trace.recordStep({ kind, round: run.rounds, durationMs: 0, occurredAt: at, ...content, metadata });
  const [step] = await insertSteps(tx, run.id, trace.steps);
  if (!step) throw new Error('the step was not stored');
  return step;
}

/** After a request closes: the run waits for the oldest request still open, or runs again. */
async function statusAfter(tx: Transaction, run: RunRow, now: Date): Promise<RunRow> {
  const [oldest] = await openKindsOfRun(tx, run.id, now);
  const status: RunStatus = oldest ? WAITING_STATUS[oldest as RequestKind] : 'running';
  if (status === run.status) return run;
  return (await setWaitingStatus(tx, run.id, status)) ?? run;
}

/**
 * Opens a request in a run the actor records into: the run waits for it. A
 * retry with the same key answers the first request and writes nothing.
 */
export async function openRequest(
  scope: Scope,
  target: { runUuid: string; idempotencyKey?: string | null },
  asked: NewRequest,
): Promise<RequestRecorded> {
  const { db, actor, events } = scope;
  const runUuid = checkUuid(target.runUuid);
  const key = target.idempotencyKey ?? null;
  if (key !== null) checkName(key, 'idempotencyKey', Limits.idempotencyKeyLength);
  const now = new Date();
  const expiresAt = checkExpiry(asked.expiresAt, now);
  const fingerprint =
    key === null ? '' : requestFingerprint({ ...asked, expiresAt: expiresAt?.toISOString() ?? null });
  const done = await db.transaction(async (tx) => {
    const run = await lockRun(tx, runUuid, recordableOwners(actor));
    if (!run) throw new RunNotFoundError(runUuid);
    if (key !== null) {
      const seen = await findRequestByKey(tx, run.id, key);
      if (seen) {
        if (seen.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError(key);
        return { request: seen, run, step: null, replayed: true };
      }
    }
    if (isTerminalStatus(run.status as RunStatus)) {
      throw new RunTerminalError(run.uuid, run.status, 'an ended run asks nobody');
    }
    const request = await insertRequest(tx, {
      uuid: randomUUID(),
      runId: run.id,
      kind: asked.kind,
      source: asked.source,
      requestedBy: actor.name,
      requestedAt: now,
      expiresAt,
      toolName: asked.toolName ?? null,
      server: asked.server ?? null,
      arguments: asked.arguments ?? null,
      reason: asked.reason ?? null,
      prompt: asked.prompt ?? null,
      schema: asked.schema ?? null,
      idempotencyKey: key,
      fingerprint,
    });
    const step = await appendRequestStep(tx, run, asked.kind, now, requestStep(request, run.rounds));
    const waiting = (await setWaitingStatus(tx, run.id, WAITING_STATUS[asked.kind])) ?? run;
    return { request, run: waiting, step, replayed: false };
  });
  if (!done.replayed && done.step) await events?.runChanged(runUuid, done.step.sequence);
  return done;
}

const optionalText = (value: string | null | undefined, field: string, max: number) =>
  value == null ? null : checkText(value, field, max);

/** The recorder asks for approval of a tool call it proposes: the run waits for it. */
export function requestApproval(
  scope: Scope,
  input: {
    runUuid: string;
    toolName: string;
    server?: string | null;
    arguments?: JsonValue | null;
    reason?: string | null;
    expiresAt?: Date | null;
    idempotencyKey?: string | null;
  },
): Promise<RequestRecorded> {
  requirePermission(scope.actor, 'record');
  return openRequest(scope, input, {
    kind: 'approval',
    source: 'api',
    toolName: checkName(input.toolName, 'toolName'),
    server: input.server == null ? null : checkName(input.server, 'server'),
    arguments: input.arguments ?? null,
    reason: optionalText(input.reason, 'reason', HumanRequestLimits.reasonLength),
    expiresAt: input.expiresAt ?? null,
  });
}

/** The recorder asks a person for input against a schema: the run waits for it. */
export function requestInput(
  scope: Scope,
  input: {
    runUuid: string;
    prompt: string;
    schema: unknown;
    expiresAt?: Date | null;
    idempotencyKey?: string | null;
  },
  source: RequestSource = 'api',
): Promise<RequestRecorded> {
  requirePermission(scope.actor, 'record');
  return openRequest(scope, input, {
    kind: 'input',
    source,
    prompt: checkText(input.prompt, 'prompt', HumanRequestLimits.promptLength),
    schema: checkInputSchema(input.schema),
    expiresAt: input.expiresAt ?? null,
  });
}

interface Decision {
  runUuid: string;
  request: string;
  kind: RequestKind;
  /** Who decides; null for the service itself (an expiry, a call cut off). */
  state: Exclude<RequestState, 'open'>;
  comment?: string | null;
  answer?: Record<string, unknown> | null;
  /** Checks what needs the stored request (an answer against its schema). */
  check?: (request: HumanRequestRow) => void;
}

/** The step a decision appends. */
function decisionStep(
  request: HumanRequestRow,
  decidedBy: string | null,
  comment: string | null,
  answer: unknown,
) {
  const metadata: JsonObject = { request: request.uuid, phase: 'decided', decision: request.state };
  if (decidedBy !== null) metadata.decidedBy = decidedBy;
  const payload: JsonObject = {};
  if (comment !== null) payload.comment = comment;
  if (answer != null) payload.values = answer as JsonValue;
  return { payload, metadata };
}

/** Whether a retry asks what the stored decision already says. */
function sameDecision(request: HumanRequestRow, decidedBy: string, decision: Decision): boolean {
  return (
    request.decidedBy === decidedBy &&
    request.state === decision.state &&
    (request.comment ?? null) === (decision.comment ?? null) &&
    requestFingerprint(request.answer ?? null) === requestFingerprint(decision.answer ?? null)
  );
}

/**
 * A person decides an open request of a run it may decide for, never its own
 * (four eyes). Repeating a decision answers it again and writes nothing; a
 * different one, or one after the request closed, is refused.
 */
async function decide(scope: Scope, decision: Decision, owners: Owners): Promise<RequestRecorded> {
  const { db, actor, events } = scope;
  const runUuid = checkUuid(decision.runUuid, 'runUuid');
  const requestUuid = checkUuid(decision.request, 'request');
  const now = new Date();
  const done = await db.transaction(async (tx) => {
    const run = await lockRun(tx, runUuid, owners);
    if (!run) throw new RunNotFoundError(runUuid);
    const request = await lockRequest(tx, run.id, requestUuid);
    if (!request || request.kind !== decision.kind) throw new RequestNotFoundError(requestUuid);
    checkFourEyes(actor, run, request);
    const state = stateOf({ request, run }, now);
    if (state !== 'open') {
      if (sameDecision(request, actor.name, decision)) return { request, run, step: null, replayed: true };
      throw new RequestNotOpenError(requestUuid, state);
    }
    decision.check?.(request);
    const closed = await closeRequest(tx, request.id, {
      state: decision.state,
      decidedBy: actor.name,
      decidedAt: now,
      comment: decision.comment ?? null,
      answer: decision.answer ?? null,
    });
    if (!closed) throw new RequestNotOpenError(requestUuid, state);
    const step = await appendRequestStep(
      tx,
      run,
      request.kind as RequestKind,
      now,
      decisionStep(closed, actor.name, closed.comment, closed.answer),
    );
    return { request: closed, run: await statusAfter(tx, run, now), step, replayed: false };
  });
  if (!done.replayed && done.step) await events?.runChanged(runUuid, done.step.sequence);
  return done;
}

/** Approve or deny a proposed tool call (approve_runs, four eyes). */
export function decideApproval(
  scope: Scope,
  input: { runUuid: string; request: string; decision: ApprovalDecision; comment?: string | null },
): Promise<RequestRecorded> {
  requirePermission(scope.actor, 'approve_runs');
  return decide(
    scope,
    {
      runUuid: input.runUuid,
      request: input.request,
      kind: 'approval',
      state: APPROVAL_DECISIONS[input.decision],
      comment: optionalText(input.comment, 'comment', HumanRequestLimits.commentLength),
    },
    decidableOwners(scope.actor),
  );
}

/** Answer a request for input, or decline it (approve_runs, four eyes); the values must match its schema. */
export function provideInput(
  scope: Scope,
  input: {
    runUuid: string;
    request: string;
    values?: unknown;
    decline?: boolean | null;
    comment?: string | null;
  },
): Promise<RequestRecorded> {
  requirePermission(scope.actor, 'approve_runs');
  const declined = input.decline === true;
  const answer = declined ? null : (input.values ?? null);
  return decide(
    scope,
    {
      runUuid: input.runUuid,
      request: input.request,
      kind: 'input',
      state: declined ? INPUT_ANSWERS.decline : INPUT_ANSWERS.answer,
      comment: optionalText(input.comment, 'comment', HumanRequestLimits.commentLength),
      answer: answer as Record<string, unknown> | null,
      check: (request) => {
        // A schema stored before today's allow-list is checked again before any validator is built of it.
        if (!declined) checkInputValues(checkStoredInputSchema(request.schema), input.values ?? null);
      },
    },
    decidableOwners(scope.actor),
  );
}

/**
 * The service closes a request nobody decided: expired, or cancelled with
 * its call. A request already closed is left as it is (null).
 */
export async function closeUndecided(
  scope: Pick<Scope, 'db' | 'events'>,
  target: { runUuid: string; request: string },
  state: Extract<RequestState, 'expired' | 'cancelled'>,
): Promise<RequestRecorded | null> {
  const now = new Date();
  const done = await scope.db.transaction(async (tx) => {
    const run = await lockRun(tx, target.runUuid, null);
    if (!run) return null;
    const request = await lockRequest(tx, run.id, target.request);
    if (request?.state !== 'open') return null;
    const closed = await closeRequest(tx, request.id, { state, decidedBy: null, decidedAt: now });
    if (!closed) return null;
    const step = await appendRequestStep(
      tx,
      run,
      request.kind as RequestKind,
      now,
      decisionStep(closed, null, null, null),
    );
    const after = isTerminalStatus(run.status as RunStatus) ? run : await statusAfter(tx, run, now);
    return { request: closed, run: after, step, replayed: false };
  });
  if (done?.step) await scope.events?.runChanged(target.runUuid, done.step.sequence);
  return done;
}

/** Closes every open request past its expiry, each with its step; returns how many. */
export async function expireRequests(scope: Pick<Scope, 'db' | 'events'>, now = new Date()): Promise<number> {
  const due = await overdueRequests(scope.db, now, EXPIRIES_PER_PASS);
  let closed = 0;
  for (const entry of due) {
    if (await closeUndecided(scope, { runUuid: entry.run.uuid, request: entry.request.uuid }, 'expired'))
      closed += 1;
  }
  return closed;
}

/** Expiries closed in one pass; the next pass takes the rest. */
const EXPIRIES_PER_PASS = 100;

/** The open requests an actor may decide, oldest first: the inbox. */
export async function inbox(scope: Scope, first = 50): Promise<RequestOfRun[]> {
  if (!scope.actor.permissions.has('approve_runs')) return [];
  // A person is never shown their own runs' requests to decide (four eyes, as checkFourEyes).
  return openRequests(
    scope.db,
    decidableOwners(scope.actor),
    new Date(),
    Math.min(Math.max(first, 1), 200),
    scope.actor.name,
  );
}

/** Requests by uuid that the actor may see (their runs visible to it) or decide. */
export function requestsByUuid(scope: Scope, uuids: readonly string[]): Promise<RequestOfRun[]> {
  return findRequestsByUuids(scope.db, uuids, requestReadableOwners(scope.actor));
}

/** The longest awaitDecision waits: 5 minutes. */
export const MAX_AWAIT_MS = 300_000;

/**
 * Waits until a request is no longer open, or `timeoutMs` passes, and answers
 * it as it then stands: the agent's blocking form, woken by the run's notices
 * on every instance (and a recheck, should one be lost).
 */
export async function awaitDecision(
  scope: Scope,
  input: { runUuid: string; request: string; timeoutMs: number },
  signal?: AbortSignal,
): Promise<RequestOfRun> {
  const runUuid = checkUuid(input.runUuid, 'runUuid');
  const requestUuid = checkUuid(input.request, 'request');
  const timeoutMs = Math.min(Math.max(Math.trunc(input.timeoutMs), 0), MAX_AWAIT_MS);
  const deadline = Date.now() + timeoutMs;
  const read = async () => {
    const [entry] = await requestsByUuid(scope, [requestUuid]);
    if (!entry || entry.run.uuid !== runUuid) throw new RequestNotFoundError(requestUuid);
    return entry;
  };
  const watching = scope.events?.watchRun(runUuid);
  try {
    for (;;) {
      const seen = watching?.count() ?? 0;
      const entry = await read();
      const left = deadline - Date.now();
      if (stateOf(entry) !== 'open' || left <= 0 || signal?.aborted) return entry;
      const until = entry.request.expiresAt ? entry.request.expiresAt.getTime() - Date.now() + 5 : left;
      await (watching?.wait(seen, Math.max(1, Math.min(left, until, 1_000)), signal) ??
        new Promise((resolve) => setTimeout(resolve, Math.min(left, 1_000))));
    }
  } finally {
    watching?.stop();
  }
}

/** How often each instance closes the requests past their expiry. */
export const EXPIRY_SWEEP_MS = 1_000;

/**
 * Closes expired requests in the background, on every instance (a request is
 * closed once, under its run's lock, whoever gets there first): each gets its
 * EXPIRED step and its run runs again, live.
 */
export class RequestExpiries {
  readonly #loop: BackgroundLoop;

  constructor(scope: Pick<Scope, 'db' | 'events'>, log: (line: string) => void) {
    this.#loop = new BackgroundLoop({
      name: 'closing expired requests',
      intervalMs: EXPIRY_SWEEP_MS,
      retryMs: EXPIRY_SWEEP_MS,
      log,
      pass: async () => {
        const closed = await expireRequests(scope);
        if (closed > 0) log(`${closed} expired`);
        return false;
      },
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}

/** Text a server sent, made storable: control characters out, cut to `max`. */
function storableText(text: unknown, max: number): string {
  // Cut first, then repaired: a cut through a surrogate pair leaves a lone half, which the repair replaces.
  const cleaned = repairText(
    String(text ?? '')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters (but tab and newlines) are what this removes
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, ' ')
      .slice(0, max),
  ).trim();
  return cleaned.length > 0 ? cleaned : '(no message)';
}

/**
 * An MCP server asks a person during a call made by callTool (elicitation):
 * the run waits for input with the server's message and schema, and the
 * answer goes back as `accept` (the values), `decline`, or `cancel` (the run
 * was cancelled, or nobody answered within the bound: the request expires).
 * A schema a form cannot ask is answered `cancel` and nothing is stored.
 */
export async function askForCall(
  scope: Scope,
  runUuid: string,
  asked: ElicitationAsked,
  signal: AbortSignal,
): Promise<ElicitationAnswer> {
  let schema: InputSchema;
  try {
    // The same allow-list as the API's: a server is a peer, not trusted with a regex or a $ref.
    schema = checkInputSchema(asked.requestedSchema);
  } catch {
    return { action: 'cancel' };
  }
  const opened = await openRequest(
    scope,
    { runUuid },
    {
      kind: 'input',
      source: 'mcp',
      prompt: storableText(asked.message, HumanRequestLimits.promptLength),
      schema,
      expiresAt: new Date(Date.now() + HumanRequestLimits.maxElicitationWaitMs),
    },
  );
  const target = { runUuid, request: opened.request.uuid };
  const watching = scope.events?.watchRun(runUuid);
  try {
    for (;;) {
      const seen = watching?.count() ?? 0;
      const [entry] = await findRequestsByUuids(scope.db, [target.request], null);
      const state = entry ? stateOf(entry) : 'cancelled';
      if (state === 'answered') {
        return {
          action: 'accept',
          content: (entry?.request.answer ?? {}) as Record<string, string | number | boolean>,
        };
      }
      if (state === 'declined') return { action: 'decline' };
      if (state !== 'open' || signal.aborted) {
        // The bound ran out (a TimeoutError): nobody answered. Anything else cut the call off.
        const timedOut = signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError';
        await closeUndecided(scope, target, state === 'expired' || timedOut ? 'expired' : 'cancelled');
        return { action: 'cancel' };
      }
      await (watching?.wait(seen, 1_000, signal) ?? new Promise((resolve) => setTimeout(resolve, 250)));
    }
  } finally {
    watching?.stop();
  }
}
