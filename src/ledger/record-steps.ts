import { forgetKey, isKeyActive } from '../db/api-keys.ts';
import type { Database } from '../db/connection.ts';
import { appendInOneStatement, type OneStatementOutcome } from '../db/run-writes.ts';
import type { RunRow } from '../db/runs.ts';
import type { StepRow } from '../db/steps.ts';
import {
  DomainError,
  IdempotencyKeyReusedError,
  KeyNotActiveError,
  RunNotFoundError,
} from '../domain/errors.ts';
import { requestFingerprint } from '../domain/idempotency.ts';
import { checkBoolean, checkName, checkString, Limits } from '../domain/limits.ts';
import { requirePermission } from '../domain/permissions.ts';
import { checkRunAcceptsSteps } from '../domain/run-lifecycle.ts';
import { type RunRollups, stepRollups } from '../domain/run-rollups.ts';
import { isTerminalStatus, RUN_STATUSES, type RunStatus } from '../domain/run-status.ts';
import type { RunStep } from '../domain/run-step.ts';
import { RunTrace, type StepCommand } from '../domain/run-trace.ts';
import { checkUuid } from '../domain/uuid.ts';
import type { Scope } from './scope.ts';
import {
  type BatchStepInput,
  batchCommands,
  type PlainStepInput,
  plainStep,
  type ToolCallInput,
  type ToolResultInput,
  toolCall,
  toolResult,
} from './step-input.ts';

export interface AppendRequest {
  runUuid: string;
  /**
   * The only owner whose run takes the steps: a run of another is not found,
   * by the same statements as a run that does not exist. Omitted by trusted
   * writers only.
   */
  owner?: string;
  /** A client's retry key, scoped to the run. */
  idempotencyKey?: string | null;
  /** What the request said, for telling a retry from a different request with the same key. */
  fingerprint?: string;
  /** The hash of an API key remembered, not read, in this request: the append checks it is still active. */
  keyHash?: string | null;
  build: (trace: RunTrace) => void;
  clock?: () => Date;
  /**
   * Whether the append may send the run's live notice through PostgreSQL
   * itself, in its own statement (LISTEN/NOTIFY; AppendResult.announced says
   * whether it did). Otherwise, and when it did not, the caller announces.
   */
  announce?: boolean;
}

export interface AppendResult {
  run: RunRow;
  steps: StepRow[];
  /** True when the key had been seen: nothing was written and the stored steps are returned. */
  replayed: boolean;
  /** True when the append's own statement sent the run's live notice (see AppendRequest.announce). */
  announced?: boolean;
}

/** The statuses in which a run takes any step; in the others the domain decides step by step. */
const OPEN_STATUSES = RUN_STATUSES.filter((status) => !isTerminalStatus(status));

const NO_ROLLUPS: RunRollups = { rounds: 0, promptTokens: 0, completionTokens: 0, estimatedCost: 0 };

/**
 * Appends steps to a run, all or nothing. Appends to one run are serialised
 * on its row: sequence numbers continue from the last stored one without
 * gaps, an idempotency key is checked and claimed without a race, and the
 * run's rollups (rounds, tokens, cost) change in the same transaction as its
 * steps. Trusted writers (demo data) call this directly; clients go through
 * `recordSteps`.
 *
 * Every append writes through one statement, `append_run_steps`
 * (`appendInOneStatement`), which holds the append's mechanics: the key, the
 * run's lock, the retry key, the numbering, the claim and the totals. The
 * rules of which steps a run takes are stated here alone (`RunTrace`,
 * `checkRunAcceptsSteps`, `stepRollups`). The common case, an open run of the
 * writer's own within every limit, takes the steps at once: one statement,
 * one round trip. Whatever needs a rule's judgement (a terminal run, a limit,
 * steps the trace refuses) is judged by `appendJudged`. This is the one point
 * where an append is known committed.
 */
export async function appendSteps(db: Database, request: AppendRequest): Promise<AppendResult> {
  let prepared: { steps: readonly RunStep[]; rollups: RunRollups };
  try {
    // Numbered from 1 here; the statement numbers them from the run's last sequence.
    const trace = new RunTrace({ nextSequence: 1, clock: request.clock });
    request.build(trace);
    // The run's own totals are checked by the statement, against the same limit.
    prepared = {
      steps: trace.steps,
      rollups: stepRollups(trace.steps, { promptTokens: 0, completionTokens: 0 }),
    };
  } catch (error) {
    // A refusal is answered in the order the rules give: the run and the key first.
    if (error instanceof DomainError) return appendJudged(db, request);
    throw error;
  }
  const done = await appendInOneStatement(db, {
    ...statementOf(request),
    mode: 'append',
    steps: prepared.steps,
    rollups: prepared.rollups,
  });
  if (done.outcome === 'judge') return appendJudged(db, { ...request, keyHash: null });
  return answerOf(db, request, done);
}

/** What every statement of an append is asked, but its mode and steps. */
function statementOf(request: AppendRequest) {
  return {
    runUuid: request.runUuid,
    owner: request.owner ?? null,
    keyHash: request.keyHash ?? null,
    idempotencyKey: request.idempotencyKey ?? null,
    fingerprint: request.fingerprint ?? '',
    openStatuses: OPEN_STATUSES,
    maxSequence: Limits.maxSequence,
    maxRunTokens: Limits.maxRunTokens,
    announce: request.announce ?? false,
  };
}

/** The answer to a statement that did not ask for judgement. */
function answerOf(
  db: Database,
  request: AppendRequest,
  done: Exclude<OneStatementOutcome, { outcome: 'judge' }>,
): AppendResult {
  switch (done.outcome) {
    case 'unauthenticated':
      // The key is revoked: the next request with it reads it, and is refused there.
      if (request.keyHash) forgetKey(db, request.keyHash);
      throw new KeyNotActiveError();
    case 'not_found':
      throw new RunNotFoundError(request.runUuid);
    case 'replayed':
      if (done.fingerprint !== (request.fingerprint ?? '')) {
        throw new IdempotencyKeyReusedError(request.idempotencyKey ?? '');
      }
      return { run: done.run, steps: done.steps, replayed: true };
    case 'appended':
      return { run: done.run, steps: done.steps, replayed: false, announced: done.announced };
  }
}

/**
 * The append with the rules applied to the run as it is: in one transaction,
 * the run held (`hold`: the key, the lock, the retry key, the next sequence),
 * the steps built from that sequence and judged, then written by the same
 * statement (`judged`). Two statements of the one append, nothing stated twice.
 */
async function appendJudged(db: Database, request: AppendRequest): Promise<AppendResult> {
  return db.transaction(async (tx) => {
    const statement = statementOf(request);
    const held = await appendInOneStatement(tx, {
      ...statement,
      mode: 'hold',
      steps: [],
      rollups: NO_ROLLUPS,
    });
    if (held.outcome !== 'judge') return answerOf(db, request, held);
    if (!held.held) throw new Error('append_run_steps held no run');
    const { run, firstSequence } = held.held;
    const trace = new RunTrace({ nextSequence: firstSequence, clock: request.clock });
    request.build(trace);
    const built = trace.steps;
    checkRunAcceptsSteps(
      { uuid: run.uuid, status: run.status as RunStatus, finishedAt: run.finishedAt },
      built,
    );
    const done = await appendInOneStatement(tx, {
      ...statement,
      // Checked by the statement that held the run, in this transaction.
      keyHash: null,
      mode: 'judged',
      steps: built,
      rollups: stepRollups(built, run),
    });
    if (done.outcome === 'judge')
      throw new Error('append_run_steps asked again for the judgement it was given');
    return answerOf(db, request, done);
  });
}

/** Where a client's steps go: a run of its own, and an optional retry key. */
export interface RecordTarget {
  runUuid: string;
  idempotencyKey?: string | null;
}

/**
 * Every way of recording steps ends here: record permission, the actor's own
 * run, one transaction, an optional retry key. `request` is what the client
 * sent, fingerprinted to tell a retry from a different request under the same key.
 */
export async function recordSteps(
  scope: Scope,
  target: RecordTarget,
  request: unknown,
  commands: (now: Date) => StepCommand[],
): Promise<AppendResult> {
  await refusedWithKeyChecked(scope, () => requirePermission(scope.actor, 'record'));
  return recordPermitted(scope, target, request, commands);
}

/**
 * A refusal before the database is reached, for an actor remembered from its
 * key rather than read: the key is read first, so a revoked key is answered
 * as such from the next request on, whatever else is wrong with the request.
 */
async function refusedWithKeyChecked<T>(scope: Scope, work: () => T): Promise<T> {
  try {
    return work();
  } catch (error) {
    if (scope.rememberedKey && !(await isKeyActive(scope.db, scope.rememberedKey))) {
      throw new KeyNotActiveError();
    }
    throw error;
  }
}

/** `recordSteps` once the record permission has been checked (callTool checks it before the call). */
export async function recordPermitted(
  scope: Scope,
  target: RecordTarget,
  request: unknown,
  commands: (now: Date) => StepCommand[],
): Promise<AppendResult> {
  const { db, actor, events } = scope;
  const now = new Date();
  const checked = await refusedWithKeyChecked(scope, () => {
    const runUuid = checkUuid(target.runUuid);
    const key = target.idempotencyKey ?? null;
    if (key !== null) checkName(key, 'idempotencyKey', Limits.idempotencyKeyLength);
    return { runUuid, key, built: commands(now) };
  });
  const result = await appendSteps(db, {
    runUuid: checked.runUuid,
    // The record permission was checked: the actor's own runs take its steps.
    owner: actor.name,
    idempotencyKey: checked.key,
    // Only a request with a retry key is ever compared with another.
    fingerprint: checked.key === null ? '' : requestFingerprint(request),
    keyHash: scope.rememberedKey ?? null,
    clock: () => now,
    build: (trace) => {
      for (const command of checked.built) trace.apply(command);
    },
    // Through PostgreSQL, the append's own statement sends the notice: no statement and round trip of its own.
    announce: events?.channelKind === 'postgres',
  });
  // Committed: live streams on every instance may read it now. A replay stored nothing new.
  const lastStep = result.steps.at(-1);
  if (events && !result.replayed && !result.announced && lastStep) {
    await events.runChanged(checked.runUuid, lastStep.sequence);
  }
  return result;
}

/** The fields of a step request that are not the request itself. */
function split<T extends RecordTarget>(input: T) {
  const { runUuid, idempotencyKey, ...request } = input;
  return { target: { runUuid, idempotencyKey }, request: { runUuid, ...request } };
}

/** A tool call known by its boolean only: false is OK, true is FAILED. */
export function recordToolExecution(
  scope: Scope,
  input: ToolCallInput & RecordTarget & { result: string; isError: boolean },
): Promise<AppendResult> {
  const { target, request } = split(input);
  return recordSteps(scope, target, request, (now) => [
    {
      type: 'toolExecution',
      call: toolCall(input, now),
      content: checkString(input.result, 'result'),
      isError: checkBoolean(input.isError, 'isError'),
    },
  ]);
}

/** A tool call with a typed result. */
export function recordToolResult(
  scope: Scope,
  input: ToolCallInput & RecordTarget & { result: ToolResultInput },
): Promise<AppendResult> {
  const { target, request } = split(input);
  return recordSteps(scope, target, request, (now) => [
    { type: 'toolResult', call: toolCall(input, now), result: toolResult(input.result) },
  ]);
}

/** Any step but a tool call. */
export function recordStep(scope: Scope, input: PlainStepInput & RecordTarget): Promise<AppendResult> {
  const { target, request } = split(input);
  return recordSteps(scope, target, request, (now) => [{ type: 'plain', step: plainStep(input, now) }]);
}

/** Up to 1,000 steps, all or nothing. */
export function recordBatch(
  scope: Scope,
  input: RecordTarget & { steps: readonly BatchStepInput[] },
): Promise<AppendResult> {
  const { target, request } = split(input);
  return recordSteps(scope, target, request, (now) => batchCommands(input.steps, now));
}
