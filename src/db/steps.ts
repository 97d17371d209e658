import { and, asc, eq, getTableColumns, gt, inArray, lte, type SQL, sql } from 'drizzle-orm';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { NO_OUTCOMES, type OutcomeTally } from '../domain/outcome-counts.ts';
import type { Owners } from '../domain/permissions.ts';
import type { StepKind } from '../domain/step-kind.ts';
import type { TimelineRecord } from '../domain/timeline.ts';
import type { ToolOutcome } from '../domain/tool-outcome.ts';
import { type Database, selectRows } from './connection.ts';
import { ofOwners } from './runs.ts';
import { outcomeTallySql, statedOutcomeSql } from './stated-outcome-sql.ts';
import { isoInstantOfTimestamp } from './timestamps.ts';

export type StepRow = typeof runSteps.$inferSelect;

/**
 * A step as reads load it: every column but the payload (tool output,
 * arguments, prompts: up to a megabyte a step), which is read only when a
 * client asks for it, by `payloadsOfSteps`.
 */
export type StepMetaRow = Omit<StepRow, 'payload'> & { payload?: StepRow['payload'] };

const { payload: _payload, ...stepMetaColumns } = getTableColumns(runSteps);

/**
 * A timeline row as the driver returns it, under the names of a TimelineRow:
 * the id may come as text (bigint), the instant as text (or a Date).
 */
type RawTimelineRow = Omit<TimelineRow, 'id' | 'occurredAt'> & {
  id?: number | string;
  occurredAt: string | Date;
};

/** What a timeline line is built from (never the payload). */
export interface TimelineRow extends TimelineRecord {
  /** The step's id, read only when asked for: TimelineEntry.step loads the step by it. */
  id?: number;
}

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
): Promise<Map<number, StepMetaRow[]>> {
  const byRun = new Map<number, StepMetaRow[]>(runIds.map((id) => [id, []]));
  if (runIds.length === 0) return byRun;
  const ranked = db
    .select({
      ...stepMetaColumns,
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

/**
 * A run's timeline rows in sequence order, after `afterSequence`, at most
 * `limit`: the columns a line shows and the step's metadata (public facts,
 * small; the line keeps only the allow-listed ones), never the payload.
 * Picking the facts out in SQL (jsonb_build_object) costs more than reading
 * the whole metadata.
 */
export async function timelineRowsOfRun(
  db: Database,
  runId: number,
  options: { afterSequence: number | null; limit: number; stepIds: boolean },
): Promise<TimelineRow[]> {
  const s = runSteps;
  // Plain rows under the record's names rather than the query builder's mapping: thousands of rows.
  const rows = await selectRows<RawTimelineRow>(
    db,
    sql`select ${options.stepIds ? sql`${s.id} as id,` : sql``} ${s.sequence} as sequence, ${s.kind} as kind, ${s.occurredAt} as "occurredAt",
               ${s.round} as round, ${s.durationMs} as "durationMs", ${s.toolName} as "toolName",
               ${s.server} as server, ${statedOutcomeSql()} as outcome, ${s.metadata} as facts
          from ${s}
         where ${s.runId} = ${runId}
               ${options.afterSequence === null ? sql`` : sql`and ${s.sequence} > ${options.afterSequence}`}
         order by ${s.sequence}
         limit ${options.limit}`,
  );
  // Made TimelineRows in place, not copied: every row of a long run is held until its entries are made.
  for (const row of rows) {
    if (row.id !== undefined) row.id = Number(row.id);
    row.occurredAt = isoInstantOfTimestamp(row.occurredAt);
  }
  return rows as TimelineRow[];
}

/** The steps of these ids in runs of the owners (default: any owner's run), in one statement. */
export async function findStepsByIds(
  db: Database,
  ids: readonly number[],
  owners: Owners = null,
): Promise<StepMetaRow[]> {
  if (ids.length === 0 || owners?.length === 0) return [];
  const byId = inArray(runSteps.id, [...ids]);
  if (owners === null) return db.select(stepMetaColumns).from(runSteps).where(byId);
  return db
    .select(stepMetaColumns)
    .from(runSteps)
    .innerJoin(runs, eq(runs.id, runSteps.runId))
    .where(and(byId, ofOwners(owners)));
}

/** The payloads of these steps, read only when a client asks for them. */
export async function payloadsOfSteps(
  db: Database,
  ids: readonly number[],
): Promise<Map<number, StepRow['payload']>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .select({ id: runSteps.id, payload: runSteps.payload })
    .from(runSteps)
    .where(inArray(runSteps.id, [...ids]));
  return new Map(rows.map((row) => [row.id, row.payload]));
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
