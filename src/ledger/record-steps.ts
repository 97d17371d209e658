import type { Database } from '../db/connection.ts';
import {
  addRollups,
  claimKey,
  findKeyedRequest,
  insertSteps,
  lastSequence,
  lockRun,
} from '../db/run-writes.ts';
import type { RunRow } from '../db/runs.ts';
import type { StepRow } from '../db/steps.ts';
import { IdempotencyKeyReusedError, RunNotFoundError } from '../domain/errors.ts';
import { requestFingerprint } from '../domain/idempotency.ts';
import { checkName, Limits } from '../domain/limits.ts';
import { canRecordIntoRunOf, requirePermission } from '../domain/permissions.ts';
import { checkRunAcceptsSteps } from '../domain/run-lifecycle.ts';
import { stepRollups } from '../domain/run-rollups.ts';
import type { RunStatus } from '../domain/run-status.ts';
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
  /** Whether the run's owner lets the writer in; a run it may not write to is not found. Omitted by trusted writers only. */
  mayWriteTo?: (owner: string) => boolean;
  /** A client's retry key, scoped to the run. */
  idempotencyKey?: string | null;
  /** What the request said, for telling a retry from a different request with the same key. */
  fingerprint?: string;
  build: (trace: RunTrace) => void;
  clock?: () => Date;
}

export interface AppendResult {
  run: RunRow;
  steps: StepRow[];
  /** True when the key had been seen: nothing was written and the stored steps are returned. */
  replayed: boolean;
}

/**
 * Appends steps to a run, all or nothing. The run row is locked first, so
 * appends to one run are serialised: sequence numbers continue from the last
 * stored one without gaps, an idempotency key is checked and claimed without
 * a race, and the run's rollups (rounds, tokens, cost) change in the same
 * transaction as its steps. Trusted writers (demo data) call this directly;
 * clients go through `recordSteps`.
 */
export async function appendSteps(db: Database, request: AppendRequest): Promise<AppendResult> {
  return db.transaction(async (tx) => {
    const run = await lockRun(tx, request.runUuid);
    if (!run || (request.mayWriteTo && !request.mayWriteTo(run.owner))) {
      throw new RunNotFoundError(request.runUuid);
    }
    const key = request.idempotencyKey ?? null;
    const fingerprint = request.fingerprint ?? '';
    if (key !== null) {
      const seen = await findKeyedRequest(tx, run.id, key);
      if (seen) {
        if (seen.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError(key);
        return { run, steps: seen.steps, replayed: true };
      }
    }

    const firstSequence = (await lastSequence(tx, run.id)) + 1;
    const trace = new RunTrace({ nextSequence: firstSequence, clock: request.clock });
    request.build(trace);
    const built = trace.steps;
    checkRunAcceptsSteps(
      { uuid: run.uuid, status: run.status as RunStatus, finishedAt: run.finishedAt },
      built,
    );
    const rollups = stepRollups(built, run);

    const steps = await insertSteps(tx, run.id, built);
    if (key !== null) {
      await claimKey(tx, {
        runId: run.id,
        idempotencyKey: key,
        fingerprint,
        firstSequence,
        stepCount: built.length,
      });
    }
    if (built.length === 0) return { run, steps, replayed: false };
    return { run: (await addRollups(tx, run.id, rollups)) ?? run, steps, replayed: false };
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
export function recordSteps(
  scope: Scope,
  target: RecordTarget,
  request: unknown,
  commands: (now: Date) => StepCommand[],
): Promise<AppendResult> {
  requirePermission(scope.actor, 'record');
  return recordPermitted(scope, target, request, commands);
}

/** `recordSteps` once the record permission has been checked (callTool checks it before the call). */
export async function recordPermitted(
  { db, actor, events }: Scope,
  target: RecordTarget,
  request: unknown,
  commands: (now: Date) => StepCommand[],
): Promise<AppendResult> {
  const runUuid = checkUuid(target.runUuid);
  const key = target.idempotencyKey ?? null;
  if (key !== null) checkName(key, 'idempotencyKey', Limits.idempotencyKeyLength);
  const now = new Date();
  const built = commands(now);
  const result = await appendSteps(db, {
    runUuid,
    mayWriteTo: (owner) => canRecordIntoRunOf(actor, owner),
    idempotencyKey: key,
    fingerprint: requestFingerprint(request),
    clock: () => now,
    build: (trace) => {
      for (const command of built) trace.apply(command);
    },
  });
  // Committed: live streams on every instance may read it now. A replay stored nothing new.
  const lastStep = result.steps.at(-1);
  if (events && !result.replayed && lastStep) await events.runChanged(runUuid, lastStep.sequence);
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
    { type: 'toolExecution', call: toolCall(input, now), content: input.result, isError: input.isError },
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
