import { and, desc, eq, gte, inArray, lt, or, type SQL, sql } from 'drizzle-orm';
import { runSteps, runs } from '../../drizzle/schema.ts';
import type { Owners } from '../domain/permissions.ts';
import type { RunStatus } from '../domain/run-status.ts';
import type { ToolOutcome } from '../domain/tool-outcome.ts';
import type { Database } from './connection.ts';
import { statedOutcomeSql } from './stated-outcome-sql.ts';

export type RunRow = typeof runs.$inferSelect;

export interface RunFilter {
  statuses?: readonly RunStatus[] | null;
  configurations?: readonly string[] | null;
  owners?: readonly string[] | null;
  /** Inclusive. */
  createdFrom?: Date | null;
  /** Exclusive: ranges are half-open, [from, to). */
  createdTo?: Date | null;
  /** Only runs with at least one tool step stating this outcome (boolean-first rule). */
  hasToolOutcome?: ToolOutcome | null;
}

/** A position in the newest-first run list: created_at to the microsecond, then id. */
export interface RunPosition {
  createdAt: string;
  id: number;
}

export interface RunPageRow extends RunRow {
  position: RunPosition;
}

// Microsecond precision survives the round trip as text; a JS Date would cut it to milliseconds.
const createdAtText = sql<string>`to_char(${runs.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

function filterConditions(filter: RunFilter): SQL[] {
  const conditions: SQL[] = [];
  if (filter.statuses?.length) conditions.push(inArray(runs.status, [...filter.statuses]));
  if (filter.configurations?.length) conditions.push(inArray(runs.configuration, [...filter.configurations]));
  if (filter.owners?.length) conditions.push(inArray(runs.owner, [...filter.owners]));
  if (filter.createdFrom) conditions.push(gte(runs.createdAt, filter.createdFrom));
  if (filter.createdTo) conditions.push(lt(runs.createdAt, filter.createdTo));
  if (filter.hasToolOutcome) {
    conditions.push(sql`exists (
      select 1 from ${runSteps}
       where ${runSteps.runId} = ${runs.id} and ${runSteps.kind} = 'tool'
         and ${statedOutcomeSql()} = ${filter.hasToolOutcome})`);
  }
  return conditions;
}

/** Newest first; returns up to `limit` rows after `after`. */
export async function listRuns(
  db: Database,
  options: { filter: RunFilter; limit: number; after: RunPosition | null },
): Promise<RunPageRow[]> {
  const conditions = filterConditions(options.filter);
  if (options.after) {
    const { createdAt, id } = options.after;
    conditions.push(
      or(
        lt(runs.createdAt, sql`${createdAt}::timestamptz`),
        and(eq(runs.createdAt, sql`${createdAt}::timestamptz`), lt(runs.id, id)),
      ) as SQL,
    );
  }
  const rows = await db
    .select({ run: runs, createdAtText })
    .from(runs)
    .where(and(...conditions))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(options.limit);
  return rows.map(({ run, createdAtText }) => ({
    ...run,
    position: { createdAt: createdAtText, id: run.id },
  }));
}

/** How many runs the filter selects: one count statement, whatever the size. */
export async function countRuns(db: Database, filter: RunFilter): Promise<number> {
  return db.$count(runs, and(...filterConditions(filter)));
}

/**
 * Only runs of these owners (null: any). A run of another owner is filtered
 * out by the statement that finds it: it is never sent back, nor locked, and a
 * refusal costs what the refusal of a run that does not exist costs.
 */
export function ofOwners(owners: Owners): SQL | undefined {
  return owners === null ? undefined : inArray(runs.owner, [...owners]);
}

/** The runs of these uuids among the owners' (default: any owner's); no statement when none can match. */
export async function findRunsByUuids(
  db: Database,
  uuids: readonly string[],
  owners: Owners = null,
): Promise<RunRow[]> {
  if (uuids.length === 0 || owners?.length === 0) return [];
  return db
    .select()
    .from(runs)
    .where(and(inArray(runs.uuid, [...uuids]), ofOwners(owners)));
}

export async function findRunsByIds(
  db: Database,
  ids: readonly number[],
  owners: Owners = null,
): Promise<RunRow[]> {
  if (ids.length === 0 || owners?.length === 0) return [];
  return db
    .select()
    .from(runs)
    .where(and(inArray(runs.id, [...ids]), ofOwners(owners)));
}
