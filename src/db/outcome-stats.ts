import { type SQL, sql } from 'drizzle-orm';
import { DURATION_BUCKETS } from '../domain/duration-histogram.ts';
import type { OutcomeDimension, StatsCell } from '../domain/outcome-stats.ts';
import type { BucketSpec, StatsRange } from '../domain/time-buckets.ts';
import type { ToolOutcome } from '../domain/tool-outcome.ts';
import { type Database, selectRows } from './connection.ts';
import { outcomeTallySql, statedOutcomeSql } from './stated-outcome-sql.ts';
import { bucketSql, epochMsSql, inList } from './stats-sql.ts';

export interface StatsQuery {
  groupBy: readonly OutcomeDimension[];
  range: StatsRange;
  spec: BucketSpec | null;
  servers?: readonly string[] | null;
  tools?: readonly string[] | null;
  configurations?: readonly string[] | null;
  owners?: readonly string[] | null;
  outcomes?: readonly ToolOutcome[] | null;
  /** Count durations into histograms (for percentiles); without them the counts alone cost far less. */
  durations?: boolean;
}

/** `raw` reads run_steps only; `auto` answers whole UTC hours and days from the rollups where it can. */
export type StatsStrategy = 'auto' | 'raw';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

// Counts arrive as bigint (text or BigInt, by driver) and are read with Number().
interface Row {
  server?: string;
  tool?: string;
  configuration?: string;
  owner?: string;
  bucket?: string | number | null;
  ok: number | string | bigint;
  failed: number | string | bigint;
  cancelled: number | string | bigint;
  duration_bucket?: number;
  histogram?: Array<number | string | bigint>;
}

function toCell(row: Row, histogram: number[]): StatsCell {
  const nullIfEmpty = (value: string | undefined) => (value === undefined || value === '' ? null : value);
  return {
    server: nullIfEmpty(row.server),
    toolName: nullIfEmpty(row.tool),
    configuration: row.configuration ?? null,
    owner: row.owner ?? null,
    bucket: row.bucket === undefined || row.bucket === null ? null : Number(row.bucket),
    tally: { ok: Number(row.ok), failed: Number(row.failed), cancelled: Number(row.cancelled) },
    histogram,
  };
}

/** Tool calls in [from, to), straight from run_steps: one row per group and duration bucket. */
async function rawCells(db: Database, query: StatsQuery, from: Date, to: Date): Promise<StatsCell[]> {
  const outcome = statedOutcomeSql({
    kind: sql`s.kind`,
    toolIsError: sql`s.tool_is_error`,
    toolOutcome: sql`s.tool_outcome`,
  });
  const needsRuns =
    query.groupBy.includes('configuration') ||
    query.groupBy.includes('owner') ||
    Boolean(query.configurations?.length) ||
    Boolean(query.owners?.length);
  const keys: SQL[] = [];
  if (query.groupBy.includes('server')) keys.push(sql`coalesce(s.server, '') as server`);
  if (query.groupBy.includes('tool')) keys.push(sql`coalesce(s.tool_name, '') as tool`);
  if (query.groupBy.includes('configuration')) keys.push(sql`r.configuration as configuration`);
  if (query.groupBy.includes('owner')) keys.push(sql`r.owner as owner`);
  if (query.spec) keys.push(sql`${bucketSql(query.spec, epochMsSql(sql`s.occurred_at`))} as bucket`);
  const conditions = [
    sql`s.kind = 'tool'`,
    sql`s.occurred_at >= ${from.toISOString()}::timestamptz`,
    sql`s.occurred_at < ${to.toISOString()}::timestamptz`,
    sql`${outcome} is not null`,
    inList(sql`s.server`, query.servers),
    inList(sql`s.tool_name`, query.tools),
    inList(sql`r.configuration`, query.configurations),
    inList(sql`r.owner`, query.owners),
    inList(outcome, query.outcomes),
  ].filter((c): c is SQL => c !== null);
  const durations = query.durations ?? true;
  const tally = outcomeTallySql(outcome);
  const groupColumns = [
    ...keys.map((_, i) => sql.raw(String(i + 1))),
    ...(durations ? [sql.raw(String(keys.length + 1))] : []),
  ];
  const statement = sql`
    select ${sql.join([...keys, sql``], sql`, `)}
           ${durations ? sql`tool_duration_bucket(s.duration_ms)` : sql`0`} as duration_bucket,
           ${tally.ok} as ok, ${tally.failed} as failed, ${tally.cancelled} as cancelled
      from run_steps s ${needsRuns ? sql`join runs r on r.id = s.run_id` : sql``}
     where ${sql.join(conditions, sql` and `)}
     ${groupColumns.length > 0 ? sql`group by ${sql.join(groupColumns, sql`, `)}` : sql``}`;
  const rows = await selectRows<Row>(db, statement);
  return rows.map((row) => {
    const histogram = new Array<number>(DURATION_BUCKETS).fill(0);
    if (durations)
      histogram[row.duration_bucket ?? 0] = Number(row.ok) + Number(row.failed) + Number(row.cancelled);
    return toCell(row, histogram);
  });
}

/** A rollup of tool calls: its table, its time column, and whether its key holds the run's owner and configuration. */
interface Rollup {
  table: 'tool_outcome_daily' | 'tool_outcome_owner_daily' | 'tool_outcome_hourly';
  since: (at: Date) => SQL;
  until: (at: Date) => SQL;
  epochMs: SQL;
  byRun: boolean;
}

const dayText = (at: Date) => at.toISOString().slice(0, 10);
const daySince = (at: Date) => sql`day >= ${dayText(at)}::date`;
const dayUntil = (at: Date) => sql`day < ${dayText(at)}::date`;
const dayEpochMs = epochMsSql(sql`day::timestamp`);

const ROLLUPS = {
  /** (UTC day, server, tool): the smallest, for what needs neither owner nor configuration. */
  daily: { table: 'tool_outcome_daily', since: daySince, until: dayUntil, epochMs: dayEpochMs, byRun: false },
  /** (UTC day, owner, configuration, server, tool): every grouping, every actor, by whole days. */
  ownerDaily: {
    table: 'tool_outcome_owner_daily',
    since: daySince,
    until: dayUntil,
    epochMs: dayEpochMs,
    byRun: true,
  },
  /** (UTC hour, owner, configuration, server, tool): hours, and days that start on another hour. */
  hourly: {
    table: 'tool_outcome_hourly',
    since: (at) => sql`hour >= ${at.toISOString()}::timestamptz`,
    until: (at) => sql`hour < ${at.toISOString()}::timestamptz`,
    epochMs: epochMsSql(sql`hour`),
    byRun: true,
  },
} as const satisfies Record<string, Rollup>;

/** Whole units [from, to) of a rollup's time column, summed per group (and time bucket). */
async function rollupCells(
  db: Database,
  rollup: Rollup,
  query: StatsQuery,
  from: Date,
  to: Date,
): Promise<StatsCell[]> {
  const keys: SQL[] = [];
  if (query.groupBy.includes('server')) keys.push(sql`server`);
  if (query.groupBy.includes('tool')) keys.push(sql`tool_name as tool`);
  if (query.groupBy.includes('configuration')) keys.push(sql`configuration`);
  if (query.groupBy.includes('owner')) keys.push(sql`owner`);
  if (query.spec) keys.push(sql`${bucketSql(query.spec, rollup.epochMs)} as bucket`);
  const conditions = [
    rollup.since(from),
    rollup.until(to),
    inList(sql`server`, query.servers),
    inList(sql`tool_name`, query.tools),
    rollup.byRun ? inList(sql`configuration`, query.configurations) : null,
    rollup.byRun ? inList(sql`owner`, query.owners) : null,
  ].filter((c): c is SQL => c !== null);
  // Histograms summed element by element, one sum per bucket: of the ways to add arrays across rows
  // in plain SQL (unnest ... with ordinality grouped by bucket, a custom aggregate) this is the one
  // that costs no more than summing one column per bucket did. Left out when no percentile is asked for.
  const histogram =
    (query.durations ?? true)
      ? sql`, array[${sql.raw(
          Array.from({ length: DURATION_BUCKETS }, (_, bucket) => `sum(durations[${bucket + 1}])`).join(', '),
        )}]::bigint[] as histogram`
      : sql``;
  const statement = sql`
    select ${sql.join([...keys, sql``], sql`, `)}
           sum(ok)::bigint as ok, sum(failed)::bigint as failed, sum(cancelled)::bigint as cancelled
           ${histogram}
      from ${sql.raw(rollup.table)}
     where ${sql.join(conditions, sql` and `)}
     ${
       keys.length > 0
         ? sql`group by ${sql.join(
             keys.map((_, i) => sql.raw(String(i + 1))),
             sql`, `,
           )}`
         : sql``
     }
    having sum(ok) + sum(failed) + sum(cancelled) > 0`;
  const rows = await selectRows<Row>(db, statement);
  return rows.map((row) =>
    toCell(
      row,
      Array.from({ length: DURATION_BUCKETS }, (_, i) => Number(row.histogram?.[i] ?? 0)),
    ),
  );
}

/** The (day, server, tool) rollup knows neither owners nor configurations. */
function needsRunKey(query: StatsQuery): boolean {
  return (
    query.groupBy.some((dimension) => dimension === 'configuration' || dimension === 'owner') ||
    Boolean(query.configurations?.length) ||
    Boolean(query.owners?.length)
  );
}

/**
 * The largest time unit whose whole units the buckets are built from: a day
 * when buckets (if any) start at UTC midnight, an hour when they start on a
 * whole UTC hour, else none (an offset such as +05:30 reads run_steps). A
 * duration histogram mixes every outcome, so an outcome filter reads run_steps too.
 */
function rollupUnit(query: StatsQuery): 'day' | 'hour' | null {
  if (query.outcomes?.length) return null;
  if (query.spec === null) return 'day';
  if (query.spec.bucket !== 'hour' && query.spec.shiftMs % DAY_MS === 0) return 'day';
  return query.spec.shiftMs % HOUR_MS === 0 ? 'hour' : null;
}

function floorTo(at: Date, unitMs: number, roundUp: boolean): Date {
  const floor = Math.floor(at.getTime() / unitMs) * unitMs;
  return new Date(roundUp && floor < at.getTime() ? floor + unitMs : floor);
}

/**
 * Tool calls counted by outcome, with duration histograms, in slices the
 * domain's `summarise` merges. Whole UTC days come from a daily rollup, the
 * whole hours around them from the hourly one, and the partial hours at the
 * edges (and what no rollup answers) from run_steps.
 */
export async function outcomeStatsCells(
  db: Database,
  query: StatsQuery,
  strategy: StatsStrategy = 'auto',
): Promise<StatsCell[]> {
  const { from, to } = query.range;
  const unit = strategy === 'raw' ? null : rollupUnit(query);
  const hourFrom = floorTo(from, HOUR_MS, true);
  const hourTo = floorTo(to, HOUR_MS, false);
  if (unit === null || hourFrom.getTime() >= hourTo.getTime()) return rawCells(db, query, from, to);
  const dayFrom = floorTo(from, DAY_MS, true);
  const dayTo = floorTo(to, DAY_MS, false);
  const parts: Array<Promise<StatsCell[]>> = [];
  if (from < hourFrom) parts.push(rawCells(db, query, from, hourFrom));
  if (hourTo < to) parts.push(rawCells(db, query, hourTo, to));
  if (unit === 'day' && dayFrom < dayTo) {
    parts.push(
      rollupCells(db, needsRunKey(query) ? ROLLUPS.ownerDaily : ROLLUPS.daily, query, dayFrom, dayTo),
    );
    if (hourFrom < dayFrom) parts.push(rollupCells(db, ROLLUPS.hourly, query, hourFrom, dayFrom));
    if (dayTo < hourTo) parts.push(rollupCells(db, ROLLUPS.hourly, query, dayTo, hourTo));
  } else {
    parts.push(rollupCells(db, ROLLUPS.hourly, query, hourFrom, hourTo));
  }
  return (await Promise.all(parts)).flat();
}
