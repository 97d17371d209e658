import { eq, sql } from 'drizzle-orm';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { DomainError } from '../domain/errors.ts';
import { isTerminalStatus, type RunStatus, type TerminationReason } from '../domain/run-status.ts';
import type { RunStep } from '../domain/run-step.ts';
import { RunTrace } from '../domain/run-trace.ts';
import type { Database } from './connection.ts';
import type { RunRow } from './runs.ts';
import type { StepRow } from './steps.ts';

export interface NewRun {
  uuid?: string;
  owner: string;
  configuration: string;
  status?: RunStatus;
  createdAt?: Date;
  startedAt?: Date | null;
}

export async function createRun(db: Database, run: NewRun): Promise<RunRow> {
  const now = new Date();
  const [row] = await db
    .insert(runs)
    .values({
      uuid: run.uuid ?? crypto.randomUUID(),
      owner: run.owner,
      configuration: run.configuration,
      status: run.status ?? 'running',
      createdAt: run.createdAt ?? now,
      startedAt: run.startedAt === undefined ? (run.createdAt ?? now) : run.startedAt,
    })
    .returning();
  if (!row) throw new Error('insert returned no run');
  return row;
}

function numberFact(step: RunStep, name: string): number {
  const value = step.metadata[name];
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/**
 * Appends steps to a run in one transaction: the run row is locked, sequence
 * numbers continue from the last stored one, and the run's rollups (rounds,
 * tokens, cost) follow the new steps before the transaction commits.
 */
export async function appendSteps(
  db: Database,
  runUuid: string,
  build: (trace: RunTrace) => void,
  options: { clock?: () => Date } = {},
): Promise<StepRow[]> {
  return db.transaction(async (tx) => {
    const [run] = await tx.select().from(runs).where(eq(runs.uuid, runUuid)).for('update');
    if (!run) throw new DomainError('RUN_NOT_FOUND', `no run ${runUuid}`);
    const [last] = await tx
      .select({ sequence: sql<number>`coalesce(max(${runSteps.sequence}), 0)::int` })
      .from(runSteps)
      .where(eq(runSteps.runId, run.id));
    const trace = new RunTrace({ nextSequence: (last?.sequence ?? 0) + 1, clock: options.clock });
    build(trace);
    if (trace.steps.length === 0) return [];
    const inserted = await tx
      .insert(runSteps)
      .values(trace.steps.map((step) => ({ runId: run.id, ...step.toRecord() })))
      .returning();
    await tx
      .update(runs)
      .set({
        rounds: Math.max(run.rounds, ...trace.steps.map((s) => s.round)),
        promptTokens: run.promptTokens + sum(trace.steps, (s) => numberFact(s, 'promptTokens')),
        completionTokens: run.completionTokens + sum(trace.steps, (s) => numberFact(s, 'completionTokens')),
        estimatedCost: sql`${runs.estimatedCost} + ${sum(trace.steps, (s) => numberFact(s, 'estimatedCost'))}`,
      })
      .where(eq(runs.id, run.id));
    return inserted;
  });
}

function sum<T>(items: readonly T[], value: (item: T) => number): number {
  return items.reduce((total, item) => total + value(item), 0);
}

export async function finishRun(
  db: Database,
  runUuid: string,
  status: RunStatus,
  reason: TerminationReason,
  finishedAt: Date = new Date(),
): Promise<RunRow> {
  if (!isTerminalStatus(status))
    throw new DomainError('RUN_STATUS_NOT_TERMINAL', `${status} is not terminal`);
  const [row] = await db
    .update(runs)
    .set({ status, terminationReason: reason, finishedAt })
    .where(eq(runs.uuid, runUuid))
    .returning();
  if (!row) throw new DomainError('RUN_NOT_FOUND', `no run ${runUuid}`);
  return row;
}
