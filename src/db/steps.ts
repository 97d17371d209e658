import { and, asc, eq, getTableColumns, gt, inArray, lte, type SQL, sql } from 'drizzle-orm';
import { runSteps } from '../../drizzle/schema.ts';
import { NO_OUTCOMES, type OutcomeTally } from '../domain/outcome-counts.ts';
import type { StepKind } from '../domain/step-kind.ts';
import type { ToolOutcome } from '../domain/tool-outcome.ts';
import type { Database } from './connection.ts';
import { outcomeTallySql, statedOutcomeSql } from './stated-outcome-sql.ts';

export type StepRow = typeof runSteps.$inferSelect;

export interface StepSlice {
  /** Steps after this sequence number. */
  afterSequence: number | null;
  limit: number;
  kinds?: readonly StepKind[] | null;
  outcomes?: readonly ToolOutcome[] | null;
}

function sliceConditions(slice: StepSlice): SQL[] {
  const conditions: SQL[] = [];
  if (slice.afterSequence !== null) conditions.push(gt(runSteps.sequence, slice.afterSequence));
  if (slice.kinds?.length) conditions.push(inArray(runSteps.kind, [...slice.kinds]));
  if (slice.outcomes?.length) conditions.push(inArray(statedOutcomeSql(), [...slice.outcomes]));
  return conditions;
}

/**
 * The first `limit` steps of each run, in sequence order, in one statement
 * whatever the number of runs.
 */
export async function sliceStepsOfRuns(
  db: Database,
  runIds: readonly number[],
  slice: StepSlice,
): Promise<Map<number, StepRow[]>> {
  const byRun = new Map<number, StepRow[]>(runIds.map((id) => [id, []]));
  if (runIds.length === 0) return byRun;
  const ranked = db
    .select({
      ...getTableColumns(runSteps),
      rank: sql<number>`row_number() over (partition by ${runSteps.runId} order by ${runSteps.sequence})`.as(
        'rank',
      ),
    })
    .from(runSteps)
    .where(and(inArray(runSteps.runId, [...runIds]), ...sliceConditions(slice)))
    .as('ranked');
  const rows = await db
    .select()
    .from(ranked)
    .where(lte(ranked.rank, slice.limit))
    .orderBy(asc(ranked.runId), asc(ranked.sequence));
  for (const { rank: _rank, ...step } of rows) byRun.get(step.runId)?.push(step);
  return byRun;
}

/** Every step of each run, in sequence order. */
export async function allStepsOfRuns(
  db: Database,
  runIds: readonly number[],
): Promise<Map<number, StepRow[]>> {
  const byRun = new Map<number, StepRow[]>(runIds.map((id) => [id, []]));
  if (runIds.length === 0) return byRun;
  const rows = await db
    .select()
    .from(runSteps)
    .where(inArray(runSteps.runId, [...runIds]))
    .orderBy(asc(runSteps.runId), asc(runSteps.sequence));
  for (const row of rows) byRun.get(row.runId)?.push(row);
  return byRun;
}

export async function findStepsByIds(db: Database, ids: readonly number[]): Promise<StepRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(runSteps)
    .where(inArray(runSteps.id, [...ids]));
}

/** Tool outcomes per run, counted in SQL by the boolean-first rule. */
export async function tallyToolOutcomesOfRuns(
  db: Database,
  runIds: readonly number[],
): Promise<Map<number, OutcomeTally>> {
  const tallies = new Map<number, OutcomeTally>(runIds.map((id) => [id, NO_OUTCOMES]));
  if (runIds.length === 0) return tallies;
  const outcome = statedOutcomeSql();
  const rows = await db
    .select({
      runId: runSteps.runId,
      ...outcomeTallySql(outcome),
    })
    .from(runSteps)
    .where(and(inArray(runSteps.runId, [...runIds]), eq(runSteps.kind, 'tool')))
    .groupBy(runSteps.runId);
  for (const { runId, ...tally } of rows) tallies.set(runId, tally);
  return tallies;
}

/** Up to `limit` steps of one run after a sequence number, in sequence order. */
export async function stepsOfRunAfter(
  db: Database,
  runId: number,
  afterSequence: number,
  limit: number,
): Promise<StepRow[]> {
  return db
    .select()
    .from(runSteps)
    .where(and(eq(runSteps.runId, runId), gt(runSteps.sequence, afterSequence)))
    .orderBy(asc(runSteps.sequence))
    .limit(limit);
}
