import { type SQL, sql } from 'drizzle-orm';
import type { RunDimension, RunStatsCell } from '../domain/run-stats.ts';
import type { RunStatus, TerminationReason } from '../domain/run-status.ts';
import type { BucketSpec, StatsRange } from '../domain/time-buckets.ts';
import { type Database, selectRows } from './connection.ts';
import { bucketSql, epochMsSql, inList } from './stats-sql.ts';

export interface RunStatsQuery {
  groupBy: readonly RunDimension[];
  range: StatsRange;
  spec: BucketSpec | null;
  configurations?: readonly string[] | null;
  owners?: readonly string[] | null;
  statuses?: readonly RunStatus[] | null;
  /** How many groups to answer, the first in order. */
  groups: number;
}

/** Each dimension's column, in the order group keys compare. */
const COLUMNS: ReadonlyArray<readonly [RunDimension, string]> = [
  ['configuration', 'configuration'],
  ['owner', 'owner'],
  ['status', 'status'],
  ['terminationReason', 'termination_reason'],
];

// Counts arrive as bigint (text or BigInt, by driver) and are read with Number().
interface Row {
  configuration?: string;
  owner?: string;
  status?: RunStatus;
  termination_reason?: TerminationReason | null;
  bucket?: string | number | bigint | null;
  runs: string | number | bigint;
  group_rank: string | number | bigint;
}

/**
 * Runs created in [from, to) counted per group (and time bucket) by one
 * GROUP BY, the groups ranked in the same statement: runs descending, then
 * the key (configuration, owner, status, termination reason; bytewise, a run
 * without a termination reason first). Only the cells of the first `groups`
 * groups come back, ordered by rank, then bucket.
 */
export async function runStatsCells(db: Database, query: RunStatsQuery): Promise<RunStatsCell[]> {
  const columns = COLUMNS.filter(([dimension]) => query.groupBy.includes(dimension)).map(([, column]) =>
    sql.raw(`r.${column}`),
  );
  const bucket = query.spec ? bucketSql(query.spec, epochMsSql(sql`r.created_at`)) : null;
  const names = COLUMNS.filter(([dimension]) => query.groupBy.includes(dimension)).map(([, column]) =>
    sql.raw(column),
  );
  const conditions = [
    sql`r.created_at >= ${query.range.from.toISOString()}::timestamptz`,
    sql`r.created_at < ${query.range.to.toISOString()}::timestamptz`,
    inList(sql`r.configuration`, query.configurations),
    inList(sql`r.owner`, query.owners),
    inList(sql`r.status`, query.statuses),
  ].filter((c): c is SQL => c !== null);
  const keyOrder = names.map((name) => sql`${name} collate "C" asc nulls first`);
  const statement = sql`
    select ${sql.join(names, sql`, `)}, ${bucket ? sql`bucket` : sql`null`} as bucket, runs, group_rank
      from (
        select cells.*,
               dense_rank() over (order by group_runs desc, ${sql.join(keyOrder, sql`, `)}) as group_rank
          from (
            select ${sql.join(columns, sql`, `)}, ${bucket ?? sql`null::bigint`} as bucket,
                   count(*)::bigint as runs,
                   sum(count(*)) over (partition by ${sql.join(columns, sql`, `)})::bigint as group_runs
              from runs r
             where ${sql.join(conditions, sql` and `)}
             group by ${sql.raw(Array.from({ length: columns.length + (bucket ? 1 : 0) }, (_, i) => i + 1).join(', '))}
          ) cells
      ) ranked
     where group_rank <= ${query.groups}
     order by group_rank, bucket`;
  const rows = await selectRows<Row>(db, statement);
  return rows.map((row) => ({
    configuration: row.configuration ?? null,
    owner: row.owner ?? null,
    status: row.status ?? null,
    terminationReason: row.termination_reason ?? null,
    bucket: row.bucket === undefined || row.bucket === null ? null : Number(row.bucket),
    runs: Number(row.runs),
    groupRank: Number(row.group_rank),
  }));
}

/** The requests of the runs a RunStatsQuery counts, by kind, stored state and what bears on how they read now. */
export interface RunWaitRow {
  kind: string;
  state: string;
  pastExpiry: boolean;
  runEnded: boolean;
  /** The runs' ids: rows that read as one state count a run once. */
  runIds: number[];
  requests: number;
  waitMs: number;
  longestWaitMs: number;
}

/**
 * Requests of runs created in the range (with the query's filters), grouped
 * by kind, stored state, whether past their expiry and whether their run
 * ended: the domain reads the state from these (requestStateAt). A wait
 * lasts from the request to its decision, its expiry or its run's end,
 * whichever came first, or to now while open.
 */
export async function runWaitRows(
  db: Database,
  query: Omit<RunStatsQuery, 'groupBy' | 'spec' | 'groups'>,
  now: Date,
): Promise<RunWaitRow[]> {
  const at = sql`${now.toISOString()}::timestamptz`;
  const conditions = [
    sql`r.created_at >= ${query.range.from.toISOString()}::timestamptz`,
    sql`r.created_at < ${query.range.to.toISOString()}::timestamptz`,
    inList(sql`r.configuration`, query.configurations),
    inList(sql`r.owner`, query.owners),
    inList(sql`r.status`, query.statuses),
  ].filter((c): c is SQL => c !== null);
  // A wait ends at the first of its decision, its expiry and its run's end (least() skips nulls), else now:
  // a request left open in a run that ended, or past its expiry before the sweep closed it, waits no longer.
  const waited = sql`greatest(extract(epoch from (least(h.decided_at, h.expires_at, r.finished_at, ${at}) - h.requested_at)) * 1000, 0)`;
  const rows = await selectRows<Record<keyof RunWaitRow, unknown>>(
    db,
    sql`select h.kind, h.state,
               coalesce(h.expires_at <= ${at}, false) as "pastExpiry",
               r.finished_at is not null as "runEnded",
               array_agg(distinct r.id) as "runIds", count(*)::bigint as requests,
               coalesce(sum(${waited}), 0)::float8 as "waitMs", coalesce(max(${waited}), 0)::float8 as "longestWaitMs"
          from human_requests h join runs r on r.id = h.run_id
         where ${sql.join(conditions, sql` and `)}
         group by 1, 2, 3, 4`,
  );
  return rows.map((row) => ({
    kind: String(row.kind),
    state: String(row.state),
    pastExpiry: row.pastExpiry === true,
    runEnded: row.runEnded === true,
    runIds: (row.runIds as Array<number | string>).map(Number),
    requests: Number(row.requests),
    waitMs: Math.round(Number(row.waitMs)),
    longestWaitMs: Math.round(Number(row.longestWaitMs)),
  }));
}
