import { and, asc, eq, gte, lt, sql } from 'drizzle-orm';
import { runSteps, runs, stepRequests } from '../../drizzle/schema.ts';
import { IdempotencyKeyReusedError, RunAlreadyExistsError, RunNotFoundError } from '../domain/errors.ts';
import { checkRunTokenTotal } from '../domain/limits.ts';
import { checkRunAcceptsSteps, checkRunCanEnd, checkTermination } from '../domain/run-lifecycle.ts';
import type { RunStatus, TerminationReason } from '../domain/run-status.ts';
import type { RunStep } from '../domain/run-step.ts';
import { RunTrace } from '../domain/run-trace.ts';
import type { Database } from './connection.ts';
import type { RunRow } from './runs.ts';
import type { StepRow } from './steps.ts';

export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

export interface NewRun {
  uuid?: string;
  owner: string;
  configuration: string;
  status?: Extract<RunStatus, 'queued' | 'running'>;
  createdAt?: Date;
}

/**
 * Starts a run. Starting again with the same uuid, owner and configuration
 * returns the run already there, so a client may retry a start safely.
 */
export async function createRun(db: Database, run: NewRun): Promise<RunRow> {
  const now = run.createdAt ?? new Date();
  const status = run.status ?? 'running';
  const uuid = run.uuid ?? crypto.randomUUID();
  const [row] = await db
    .insert(runs)
    .values({
      uuid,
      owner: run.owner,
      configuration: run.configuration,
      status,
      createdAt: now,
      startedAt: status === 'running' ? now : null,
    })
    .onConflictDoNothing({ target: runs.uuid })
    .returning();
  if (row) return row;
  const [existing] = await db.select().from(runs).where(eq(runs.uuid, uuid));
  if (existing && existing.owner === run.owner && existing.configuration === run.configuration)
    return existing;
  throw new RunAlreadyExistsError(uuid);
}

/** Locks the run for the rest of the transaction; a run the caller does not own is not found. */
async function lockRun(tx: Transaction, runUuid: string, owner: string | undefined): Promise<RunRow> {
  const [run] = await tx.select().from(runs).where(eq(runs.uuid, runUuid)).for('update');
  if (!run || (owner !== undefined && run.owner !== owner)) throw new RunNotFoundError(runUuid);
  return run;
}

/**
 * The run, locked, and the last sequence stored in it. Two statements on
 * purpose: a statement that waited for the lock still sees the snapshot it
 * started with, so a max(sequence) read in the same statement would miss the
 * step the previous lock holder just committed.
 */
export async function lockRunForAppend(
  tx: Transaction,
  runUuid: string,
  owner: string | undefined,
): Promise<{ run: RunRow; lastSequence: number }> {
  const run = await lockRun(tx, runUuid, owner);
  const [last] = await tx
    .select({ sequence: sql<number>`coalesce(max(${runSteps.sequence}), 0)::int` })
    .from(runSteps)
    .where(eq(runSteps.runId, run.id));
  return { run, lastSequence: last?.sequence ?? 0 };
}

function numberFact(step: RunStep, name: string): number {
  const value = step.metadata[name];
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function sum(steps: readonly RunStep[], value: (step: RunStep) => number): number {
  return steps.reduce((total, step) => total + value(step), 0);
}

export interface AppendRequest {
  runUuid: string;
  /** The caller; the run must be theirs. Omitted by trusted internal writers only. */
  owner?: string;
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
 * transaction as its steps.
 */
export async function appendSteps(db: Database, request: AppendRequest): Promise<AppendResult> {
  return db.transaction(async (tx) => {
    const { run, lastSequence } = await lockRunForAppend(tx, request.runUuid, request.owner);
    const key = request.idempotencyKey ?? null;
    const fingerprint = request.fingerprint ?? '';
    if (key !== null) {
      const [seen] = await tx
        .select()
        .from(stepRequests)
        .where(and(eq(stepRequests.runId, run.id), eq(stepRequests.idempotencyKey, key)));
      if (seen) {
        if (seen.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError(key);
        const steps = await tx
          .select()
          .from(runSteps)
          .where(
            and(
              eq(runSteps.runId, run.id),
              gte(runSteps.sequence, seen.firstSequence),
              lt(runSteps.sequence, seen.firstSequence + seen.stepCount),
            ),
          )
          .orderBy(asc(runSteps.sequence));
        return { run, steps, replayed: true };
      }
    }

    const firstSequence = lastSequence + 1;
    const trace = new RunTrace({ nextSequence: firstSequence, clock: request.clock });
    request.build(trace);
    const built = trace.steps;
    checkRunAcceptsSteps(
      { uuid: run.uuid, status: run.status as RunStatus, finishedAt: run.finishedAt },
      built,
    );
    const promptTokens = sum(built, (s) => numberFact(s, 'promptTokens'));
    const completionTokens = sum(built, (s) => numberFact(s, 'completionTokens'));
    checkRunTokenTotal(run.promptTokens, promptTokens, 'model.promptTokens');
    checkRunTokenTotal(run.completionTokens, completionTokens, 'model.completionTokens');

    const steps =
      built.length === 0
        ? []
        : await tx
            .insert(runSteps)
            .values(built.map((step) => ({ runId: run.id, ...step.toRecord() })))
            .returning();
    if (key !== null) {
      await tx
        .insert(stepRequests)
        .values({ runId: run.id, idempotencyKey: key, fingerprint, firstSequence, stepCount: built.length });
    }
    if (built.length === 0) return { run, steps, replayed: false };
    const [updated] = await tx
      .update(runs)
      .set({
        rounds: sql`greatest(${runs.rounds}, ${Math.max(...built.map((s) => s.round))}::int)`,
        promptTokens: sql`${runs.promptTokens} + ${promptTokens}::bigint`,
        completionTokens: sql`${runs.completionTokens} + ${completionTokens}::bigint`,
        estimatedCost: sql`${runs.estimatedCost} + ${sum(built, (s) => numberFact(s, 'estimatedCost'))}::numeric`,
      })
      .where(eq(runs.id, run.id))
      .returning();
    return { run: updated ?? run, steps, replayed: false };
  });
}

async function endRun(
  db: Database,
  runUuid: string,
  owner: string | undefined,
  status: RunStatus,
  reason: TerminationReason,
  finishedAt: Date,
): Promise<RunRow> {
  checkTermination(status, reason);
  return db.transaction(async (tx) => {
    const run = await lockRun(tx, runUuid, owner);
    checkRunCanEnd({ uuid: run.uuid, status: run.status as RunStatus, finishedAt: run.finishedAt });
    const [row] = await tx
      .update(runs)
      .set({ status, terminationReason: reason, finishedAt })
      .where(eq(runs.id, run.id))
      .returning();
    if (!row) throw new RunNotFoundError(runUuid);
    return row;
  });
}

/** Ends a run in a terminal status. A run ends once; ending it again is refused and changes nothing. */
export function finishRun(
  db: Database,
  request: {
    runUuid: string;
    owner?: string;
    status: RunStatus;
    reason: TerminationReason;
    finishedAt?: Date;
  },
): Promise<RunRow> {
  return endRun(
    db,
    request.runUuid,
    request.owner,
    request.status,
    request.reason,
    request.finishedAt ?? new Date(),
  );
}

/** An operator's cancel: the run ends `cancelled`; calls still in flight may still report. */
export function cancelRun(
  db: Database,
  request: { runUuid: string; owner?: string; cancelledAt?: Date },
): Promise<RunRow> {
  return endRun(
    db,
    request.runUuid,
    request.owner,
    'cancelled',
    'cancelled',
    request.cancelledAt ?? new Date(),
  );
}
