import { type SQL, sql } from 'drizzle-orm';
import { DURATION_BUCKETS } from '../domain/duration-histogram.ts';
import type { BucketSpec, OutcomeDimension, StatsCell, StatsRange } from '../domain/outcome-stats.ts';
import type { ToolOutcome } from '../domain/tool-outcome.ts';
import { type Database, selectRows } from './connection.ts';
import { outcomeTallySql, statedOutcomeSql } from './stated-outcome-sql.ts';

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

/** `raw` reads run_steps only; `auto` answers whole UTC days from tool_outcome_daily where it can. */
export type StatsStrategy = 'auto' | 'raw';

const DAY_MS = 86_400_000;

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

function inList(column: SQL, values: readonly string[] | null | undefined): SQL | null {
  if (!values?.length) return null;
  return sql`${column} in (${sql.join(
    values.map((v) => sql`${v}`),
    sql`, `,
  )})`;
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

/** The SQL for a bucket index from an epoch-milliseconds expression. */
function bucketSql(spec: BucketSpec, epochMs: SQL): SQL {
  return sql`floor((${epochMs} + ${sql.raw(String(spec.shiftMs))}) / ${sql.raw(String(spec.sizeMs))})::bigint`;
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
  if (query.spec)
    keys.push(sql`${bucketSql(query.spec, sql`(extract(epoch from s.occurred_at) * 1000)`)} as bucket`);
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

/** Whole UTC days [from, to) from the daily table. */
async function dailyCells(db: Database, query: StatsQuery, from: Date, to: Date): Promise<StatsCell[]> {
  const keys: SQL[] = [];
  if (query.groupBy.includes('server')) keys.push(sql`server`);
  if (query.groupBy.includes('tool')) keys.push(sql`tool_name as tool`);
  if (query.spec)
    keys.push(sql`${bucketSql(query.spec, sql`(extract(epoch from day::timestamp) * 1000)`)} as bucket`);
  const conditions = [
    sql`day >= ${from.toISOString().slice(0, 10)}::date`,
    sql`day < ${to.toISOString().slice(0, 10)}::date`,
    inList(sql`server`, query.servers),
    inList(sql`tool_name`, query.tools),
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
      from tool_outcome_daily
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

/** The daily table knows days, servers and tools, every outcome together, in UTC. */
function dailyTableAnswers(query: StatsQuery): boolean {
  return (
    query.groupBy.every((dimension) => dimension === 'server' || dimension === 'tool') &&
    !query.configurations?.length &&
    !query.owners?.length &&
    !query.outcomes?.length &&
    (query.spec === null || (query.spec.bucket !== 'hour' && query.spec.shiftMs % DAY_MS === 0))
  );
}

function startOfUtcDay(at: Date, roundUp: boolean): Date {
  const day = Math.floor(at.getTime() / DAY_MS) * DAY_MS;
  return new Date(roundUp && day < at.getTime() ? day + DAY_MS : day);
}

/**
 * Tool calls counted by outcome, with duration histograms, in slices the
 * domain's `summarise` merges. Whole days come from the daily table when it
 * can answer; the partial days at the edges, and everything else, from run_steps.
 */
export async function outcomeStatsCells(
  db: Database,
  query: StatsQuery,
  strategy: StatsStrategy = 'auto',
): Promise<StatsCell[]> {
  const { from, to } = query.range;
  if (strategy === 'raw' || !dailyTableAnswers(query)) return rawCells(db, query, from, to);
  const wholeFrom = startOfUtcDay(from, true);
  const wholeTo = startOfUtcDay(to, false);
  if (wholeFrom.getTime() >= wholeTo.getTime()) return rawCells(db, query, from, to);
  const parts = await Promise.all([
    from < wholeFrom ? rawCells(db, query, from, wholeFrom) : [],
    dailyCells(db, query, wholeFrom, wholeTo),
    wholeTo < to ? rawCells(db, query, wholeTo, to) : [],
  ]);
  return parts.flat();
}
