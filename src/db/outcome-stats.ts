import { type SQL, sql } from 'drizzle-orm';
import { DURATION_BUCKETS, NO_DURATIONS } from '../domain/duration-histogram.ts';
import {
  movedParts,
  OUTCOME_ROLLUPS,
  oneRowPerGroup,
  planOutcomeStats,
  type RollupDefinition,
  type RollupGrain,
  type RollupName,
  type StatsSegment,
} from '../domain/outcome-rollups.ts';
import {
  type OutcomeDimension,
  type OutcomeGroupKey,
  type OutcomeOrderField,
  outcomeGroupKey,
  rankGroups,
  type StatsCell,
} from '../domain/outcome-stats.ts';
import { BUCKET_MS, type BucketSpec, type StatsRange } from '../domain/time-buckets.ts';
import type { ToolOutcome } from '../domain/tool-outcome.ts';
import { type Database, selectRows } from './connection.ts';
import { durationsTableOf, rollupTable } from './rollup-sql.ts';
import { outcomeTallySql, statedOutcomeSql } from './stated-outcome-sql.ts';
import { bucketSql, epochMsSql, inList, textArrayLiteral, unitStartSql } from './stats-sql.ts';

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
  /** The instant the request is answered at (see `RollupRequest.now`). */
  now?: Date;
  /** Whole UTC hours holding every call recorded, read in the same snapshot (see `RollupRequest.recorded`). */
  recorded?: StatsRange | null;
  /** Rows each rollup holds, as the database estimates them (see `RollupRequest.rollupRows`). */
  rollupRows?: Partial<Readonly<Record<RollupName, number>>> | null;
  /** Only these groups (their fields grouped by), as ranked by counts alone; null: every group. */
  onlyGroups?: readonly OutcomeGroupKey[] | null;
  /**
   * Only the histograms are wanted, as the caller has counted the groups over
   * the same range: every cell's counts are zero, and a rollup that keeps its
   * histograms beside it reads only those.
   */
  histogramsOnly?: boolean;
}

/** Each field's column in the rollups (every rollup names the fields it holds alike). */
const COLUMN_NAMES: Readonly<Record<OutcomeDimension, string>> = {
  server: 'server',
  tool: 'tool_name',
  configuration: 'configuration',
  owner: 'owner',
};
const ROLLUP_COLUMNS: Readonly<Record<OutcomeDimension, SQL>> = {
  server: sql.raw(COLUMN_NAMES.server),
  tool: sql.raw(COLUMN_NAMES.tool),
  configuration: sql.raw(COLUMN_NAMES.configuration),
  owner: sql.raw(COLUMN_NAMES.owner),
};
/** The grouped fields in the order every statement's rows hold them (toCell reads them by name). */
const ROW_FIELDS = [
  'server',
  'tool',
  'configuration',
  'owner',
] as const satisfies readonly OutcomeDimension[];
/** Each field's property in a group. */
const GROUP_FIELD = {
  server: 'server',
  tool: 'toolName',
  configuration: 'configuration',
  owner: 'owner',
} as const satisfies Record<OutcomeDimension, keyof OutcomeGroupKey>;

/**
 * Some groups as a relation `k`, a column per field (names stored empty are
 * null in a group): parallel arrays unnested, whose length the planner reads,
 * so it joins 500 groups by hash. From JSON it counted 100 rows and sorted
 * every row of the rollup to merge them with the groups (875 ms, against
 * about 250 by hash, for owner x server x tool on `teams`).
 */
function groupsRelation(groups: readonly OutcomeGroupKey[], fields: readonly OutcomeDimension[]): SQL {
  const columns = fields.map(
    (field) => sql`${textArrayLiteral(groups.map((group) => group[GROUP_FIELD[field]] ?? ''))}::text[]`,
  );
  return sql`unnest(${sql.join(columns, sql`, `)}) as k(${sql.raw(fields.join(', '))})`;
}

/**
 * The condition that keeps only `onlyGroups` in a rollup's statement: each
 * grouped field in the values those groups hold (which an index can use), and
 * with two fields or more the tuples themselves. Names stored empty are null
 * in a group. Statements on run_steps read short edges, where such a condition
 * costs more to plan than it saves: their cells are kept by key afterwards.
 */
function onlyGroupsSql(query: StatsQuery): SQL[] {
  const groups = query.onlyGroups;
  if (!groups) return [];
  const names = new Map(
    [...new Set(query.groupBy)].map((field) => [
      field,
      [...new Set(groups.map((group) => group[GROUP_FIELD[field]] ?? ''))],
    ]),
  );
  const conditions = [...names].map(([field, values]) => inList(ROLLUP_COLUMNS[field], values) ?? sql`false`);
  // A field all the groups share is fixed by its condition, and left out of the pairs: named in
  // both, the planner carried it over to the groups, took 500 of them for 3, and looked each up in
  // an index led by the day (every row of the days read for each group: 110 ms, not 3).
  const fields = [...names].filter(([, values]) => values.length > 1).map(([field]) => field);
  if (fields.length < 2) return conditions;
  return [
    ...conditions,
    sql`(${sql.join(
      fields.map((field) => ROLLUP_COLUMNS[field]),
      sql`, `,
    )}) in (select ${sql.raw(fields.map((field) => `k.${field}`).join(', '))} from ${groupsRelation(groups, fields)})`,
  ];
}

/** `raw` reads run_steps only; `auto` answers whole UTC hours and days from the rollups where it can. */
export type StatsStrategy = 'auto' | 'raw';

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
  /** The element (from 1) of `histogram`'s first count, where a row's stored histogram is read as it is (trimmed). */
  histogram_from?: number | null;
}

/** A name as a cell holds it: stored empty (no server or tool), it is null. */
function nullIfEmpty(value: string | undefined): string | null {
  return value === undefined || value === '' ? null : value;
}

function toCell(
  row: Row,
  histogram: readonly number[],
  tally: StatsCell['tally'] = {
    ok: Number(row.ok),
    failed: Number(row.failed),
    cancelled: Number(row.cancelled),
  },
): StatsCell {
  return {
    server: nullIfEmpty(row.server),
    toolName: nullIfEmpty(row.tool),
    configuration: row.configuration ?? null,
    owner: row.owner ?? null,
    bucket: row.bucket === undefined || row.bucket === null ? null : Number(row.bucket),
    tally,
    histogram,
  };
}

/** Tool calls in [from, to), straight from run_steps: one row per group and duration bucket. */
async function rawCells(db: Database, query: StatsQuery, from: Date, to: Date): Promise<StatsCell[]> {
  const durations = query.durations ?? true;
  return bucketRowCells(await selectRows<Row>(db, rawStatement(query, from, to)), durations);
}

/** Rows of one duration bucket each (or of none, without durations) as cells, each histogram its bucket's calls. */
function bucketRowCells(rows: readonly Row[], durations: boolean): StatsCell[] {
  return rows.map((row) => {
    if (!durations) return toCell(row, NO_DURATIONS);
    const histogram = new Array<number>(DURATION_BUCKETS).fill(0);
    histogram[row.duration_bucket ?? 0] = Number(row.ok) + Number(row.failed) + Number(row.cancelled);
    return toCell(row, histogram);
  });
}

/** The statement of rawCells: its key columns named as the fields, its counts `ok`, `failed`, `cancelled`. */
function rawStatement(query: StatsQuery, from: Date, to: Date): SQL {
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
  return sql`
    select ${sql.join([...keys, sql``], sql`, `)}
           ${durations ? sql`tool_duration_bucket(s.duration_ms)` : sql`0`} as duration_bucket,
           ${tally.ok} as ok, ${tally.failed} as failed, ${tally.cancelled} as cancelled
      from run_steps s ${needsRuns ? sql`join runs r on r.id = s.run_id` : sql``}
     where ${sql.join(conditions, sql` and `)}
     ${groupColumns.length > 0 ? sql`group by ${sql.join(groupColumns, sql`, `)}` : sql``}`;
}

/** A rollup of tool calls as the statements read it: its table, its time column, its key. */
interface Rollup extends RollupDefinition {
  table: string;
  /** Where its histograms are, when not in its rows: a table of calls per key and duration bucket. */
  durationsTable: string | null;
  /** Where its histograms are, when not in its rows: a table of a row per key, its histogram (all time). */
  histogramsTable: string | null;
  /** The condition on its time column of rows from an instant on, and before one; none without time. */
  since: (at: Date) => SQL | null;
  until: (at: Date) => SQL | null;
  /** Its unit's start in ms since the epoch; none without time. */
  epochMs: SQL | null;
}

/** A rollup's unit's start, to bucket its rows: a rollup of all time has none and is never bucketed. */
function epochMsOf(rollup: Rollup): SQL {
  if (!rollup.epochMs) throw new Error(`${rollup.table} has no time to bucket`);
  return rollup.epochMs;
}

const dayText = (at: Date) => at.toISOString().slice(0, 10);
const DAILY = {
  since: (at: Date) => sql`day >= ${dayText(at)}::date`,
  until: (at: Date) => sql`day < ${dayText(at)}::date`,
  epochMs: epochMsSql(sql`day::timestamp`),
};
const WEEKLY = {
  since: (at: Date) => sql`week >= ${dayText(at)}::date`,
  until: (at: Date) => sql`week < ${dayText(at)}::date`,
  epochMs: epochMsSql(sql`week::timestamp`),
};
const HOURLY = {
  since: (at: Date) => sql`hour >= ${at.toISOString()}::timestamptz`,
  until: (at: Date) => sql`hour < ${at.toISOString()}::timestamptz`,
  epochMs: epochMsSql(sql`hour`),
};

/** Every call ever recorded: the plan reads the whole table, less what lies outside the range elsewhere. */
const ALL_TIME = { since: () => null, until: () => null, epochMs: null };
const TIME_COLUMNS = { hour: HOURLY, day: DAILY, week: WEEKLY, all: ALL_TIME } as const;

const ROLLUPS = new Map<RollupName, Rollup>(
  OUTCOME_ROLLUPS.map((rollup) => [
    rollup.name,
    {
      ...rollup,
      table: rollupTable(rollup),
      durationsTable: rollup.durations === 'beside' ? durationsTableOf(rollup) : null,
      histogramsTable: rollup.durations === 'apart' ? durationsTableOf(rollup) : null,
      ...TIME_COLUMNS[rollup.grain],
    },
  ]),
);

/** A column of a statement's rows: its expression, and the name it is selected as. */
interface NamedColumn {
  name: string;
  value: SQL;
}

const aliased = ({ name, value }: NamedColumn): SQL => sql`${value} as ${sql.raw(name)}`;

/** The grouped fields of a rollup's rows, in the order of the group by (time bucket not included). */
function keyFields(rollup: Rollup, query: StatsQuery): NamedColumn[] {
  const missing = [...query.groupBy, ...filteredBy(query)].find(
    (field) => !rollup.dimensions.includes(field),
  );
  if (missing) throw new Error(`${rollup.table} has no ${missing}`);
  return ROW_FIELDS.filter((field) => query.groupBy.includes(field)).map((field) => ({
    name: field,
    value: ROLLUP_COLUMNS[field],
  }));
}

/** keyFields, each selected as its name. */
function keyColumns(rollup: Rollup, query: StatsQuery): SQL[] {
  return keyFields(rollup, query).map(aliased);
}

/** What a rollup's rows are summed by: the grouped fields, then the time bucket if the query has buckets. */
function groupFields(rollup: Rollup, query: StatsQuery): NamedColumn[] {
  const keys = keyFields(rollup, query);
  if (query.spec) keys.push({ name: 'bucket', value: bucketSql(query.spec, epochMsOf(rollup)) });
  return keys;
}

/** groupFields, each selected as its name. */
function groupColumns(rollup: Rollup, query: StatsQuery): SQL[] {
  return groupFields(rollup, query).map(aliased);
}

/** A rollup's rows of whole units [from, to) that the query's filters keep (and its `onlyGroups`, unless not). */
function rollupConditions(
  rollup: Rollup,
  query: StatsQuery,
  from: Date,
  to: Date,
  { onlyGroups = true } = {},
): SQL[] {
  return [
    rollup.since(from),
    rollup.until(to),
    ...filterValues(query).map(([field, values]) => inList(ROLLUP_COLUMNS[field], values)),
    ...(onlyGroups ? onlyGroupsSql(query) : []),
  ].filter((c): c is SQL => c !== null);
}

/**
 * Rollups with indexes led by fields of their key, then the time, that hold
 * the columns summed (the catalogue's indexes `withCounts`): each index's
 * fields in its order, and how many of the first a grouping must fix. A group
 * of those first fields is one range of the index: its units, and any other
 * field's values in them, read together (a group fixing fewer would read too
 * many such values); a ranking's first pass reads a range's counts from the
 * index, not the rows with their histograms.
 */
const INDEXED_BY_GROUP: ReadonlyMap<
  RollupName,
  ReadonlyArray<{ fields: readonly OutcomeDimension[]; least: number }>
> = new Map(
  OUTCOME_ROLLUPS.map((rollup) => [
    rollup.name,
    (rollup.indexes ?? []).flatMap((index) =>
      index.kind === 'fields' && index.withCounts && index.durations !== 'only'
        ? [
            {
              fields: index.fields.filter((field): field is OutcomeDimension => field !== 'time'),
              least: index.groupsFrom ?? index.fields.indexOf('time'),
            },
          ]
        : [],
    ),
  ]),
);

/**
 * Only some groups, each of whose rows is found by the rollup's index on its
 * key: the groups' rows summed group by group (a lateral join, one index range
 * a group), where the condition on the groups made the statement read every
 * key of every unit of the range (thousands of rows for each of 500 groups).
 */
async function indexedGroupCells(
  db: Database,
  rollup: Rollup,
  query: StatsQuery,
  groups: readonly OutcomeGroupKey[],
  from: Date,
  to: Date,
): Promise<StatsCell[]> {
  const durations = rollup.durationsTable !== null && (query.durations ?? true);
  const read = (table: string, select: EachGroupsSums) =>
    eachGroupsRows(rollup, table, query, groups, from, to, select);
  // Each group's counts (and histogram, where the rollup's rows hold one), per time bucket if any.
  const counts =
    query.histogramsOnly && durations
      ? []
      : (
          await selectRows<Row>(
            db,
            read(rollup.table, {
              sums: sql`${OUTCOME_SUMS} ${rollup.durationsTable ? sql`` : histogramSums(query)}`,
              keys: 0,
              having: sql`${CALLS_SUM} > 0`,
            }),
          )
        ).map((row) => toCell(row, histogramOf(row.histogram, row.histogram_from)));
  if (!durations || !rollup.durationsTable) return counts;
  // Each group's duration rows one range of the durations table's index by group.
  const rows = await selectRows<Row & { calls_by_bucket: Record<string, number> }>(
    db,
    read(rollup.durationsTable, {
      sums: sql`duration_bucket, ${countSum(sql`calls`)} as calls`,
      keys: 1,
      having: sql`${countSum(sql`calls`)} <> 0`,
      perGroup: sql`json_object_agg(duration_bucket, calls) as calls_by_bucket`,
    }),
  );
  return [...counts, ...rows.map((row) => toCell(row, histogramOfBuckets(row.calls_by_bucket), NO_CALLS))];
}

/** A histogram from the calls of each duration bucket that has any, keyed by the bucket's number. */
function histogramOfBuckets(callsByBucket: Readonly<Record<string, number>>): number[] {
  const histogram = new Array<number>(DURATION_BUCKETS).fill(0);
  // A key at a time, not Object.entries: no pair array for each bucket of 500 groups.
  for (const bucket in callsByBucket) histogram[Number(bucket)] = callsByBucket[bucket] ?? 0;
  return histogram;
}

/** What eachGroupsRows sums of each group's rows (see there). */
interface EachGroupsSums {
  sums: SQL;
  keys: number;
  having: SQL;
  perGroup?: SQL;
}

/**
 * The groups joined laterally with their rows of a table keyed as the rollup
 * (the rollup itself, or its durations): each group's fields, then its sums
 * per time bucket (if any) and per the first `keys` columns of `sums`; with
 * `perGroup`, those sums aggregated again into one row a group (and time
 * bucket), as `perGroup` computes it over them. A group's histogram as one row
 * of JSON, not a row for each of its duration buckets: 500 groups of
 * configuration x server x tool over 30 days on `wide` are 500 rows, not
 * 17,000 that the service parsed, keyed and summed one by one.
 */
function eachGroupsRows(
  rollup: Rollup,
  table: string,
  query: StatsQuery,
  groups: readonly OutcomeGroupKey[],
  from: Date,
  to: Date,
  select: EachGroupsSums,
): SQL {
  const fields = rollup.dimensions.filter((field) => query.groupBy.includes(field));
  const sameGroup = fields.map((field) => sql`${ROLLUP_COLUMNS[field]} = k.${sql.raw(field)}`);
  const bucket = query.spec ? sql`${bucketSql(query.spec, epochMsOf(rollup))} as bucket,` : sql``;
  const grouped = (query.spec ? 1 : 0) + select.keys;
  const sums = sql`
             select ${bucket} ${select.sums}
               from ${sql.raw(table)}
              where ${sql.join([...sameGroup, ...rollupConditions(rollup, query, from, to, { onlyGroups: false })], sql` and `)}
              ${groupByFirst(grouped)}
             having ${select.having}`;
  const perGroup = select.perGroup
    ? sql`select ${query.spec ? sql`bucket,` : sql``} ${select.perGroup} from (${sums}) as sums
           ${groupByFirst(query.spec ? 1 : 0)}
          having count(*) > 0`
    : sums;
  return sql`
    select ${sql.raw(fields.map((field) => `k.${field} as ${field}`).join(', '))}, g.*
      from ${groupsRelation(groups, fields)},
           lateral (${perGroup}) as g`;
}

/**
 * The fewest fields a group of a rollup of all time fixes for its histograms
 * to be read group by group: the groups a ranking returns, each one range of
 * the histograms' primary key (its key fields in order). With three, a group
 * holds a few rows (its configurations); the whole table read and joined to
 * the groups by hash took 125 of 165 ms for owner x server x tool over 90 days
 * on `many` (143,860 rows), where a range a group reads 15,000 rows in all.
 */
const HISTOGRAM_GROUP_FIELDS = 3;

/**
 * Whether each group of a query is one range of keys in this order: it groups
 * by their first fields, at least `least` of them.
 */
function groupsAreRanges(query: StatsQuery, keyOrder: readonly OutcomeDimension[], least: number): boolean {
  const grouped = new Set(query.groupBy);
  return (
    grouped.size >= least &&
    grouped.size <= keyOrder.length &&
    keyOrder.slice(0, grouped.size).every((field) => grouped.has(field))
  );
}

/** Whether a ranking's groups read their histograms of all time group by group: they fix its key's first fields. */
function histogramsByGroup(rollup: Rollup, query: StatsQuery): boolean {
  return rollup.grain === 'all' && groupsAreRanges(query, rollup.dimensions, HISTOGRAM_GROUP_FIELDS);
}

/** Whether a query's groups are each a range of the rollup's index by group: it groups by the index's first fields. */
function readsGroupByGroup(rollup: Rollup, query: StatsQuery): boolean {
  return (INDEXED_BY_GROUP.get(rollup.name) ?? []).some((index) =>
    groupsAreRanges(query, index.fields, index.least),
  );
}

/**
 * A count column summed over rows, as a float8: exact for every sum below
 * 2^53 (counts are SafeInt, exact to 2^53 - 1, in the API). A bigint sum keeps
 * a state allocated per group (PostgreSQL sums bigints in numeric precision),
 * a float8 sum keeps it in place: ranking the 147,501 groups of owner x server
 * x tool over 90 days on `wide` (818,063 daily rows) took 700 to 850 ms by
 * bigint sums and 550 to 570 by float8 sums (counting the rows alone, 480).
 * Read back with Number(), as every count is.
 */
function countSum(column: SQL): SQL {
  return sql`sum(${column}::float8)`;
}

/** The three counts of the rows summed, as `ok`, `failed` and `cancelled`. */
const OUTCOME_SUMS = sql`${countSum(sql`ok`)} as ok, ${countSum(sql`failed`)} as failed, ${countSum(sql`cancelled`)} as cancelled`;
/** The calls of the rows summed: a group with none is no group. */
const CALLS_SUM = sql`${countSum(sql`ok`)} + ${countSum(sql`failed`)} + ${countSum(sql`cancelled`)}`;

/**
 * The histogram of the rows summed, as a column, or nothing when no
 * percentile is asked for.
 *
 * Histograms summed element by element, one sum per bucket: of the ways to add arrays across rows
 * in plain SQL (unnest ... with ordinality grouped by bucket, a custom aggregate) this is the one
 * that costs no more than summing one column per bucket did.
 * Histograms travel as JSON: the driver parses it natively, where a bigint[] is parsed element by
 * element as text (about 5 µs a row of 65 counts, most of the time of a long hourly series).
 * Each count is summed by countSum: a bigint sum allocates a state per group and bucket, and 65
 * of them per group made a grouping of thousands of groups spill to disk and cost a third more
 * (owner x server over 90 days on 300 owners and 40 servers: 1,014 ms against 691 ms).
 */
function histogramSums(query: StatsQuery): SQL {
  if (!(query.durations ?? true)) return sql``;
  const sums = Array.from({ length: DURATION_BUCKETS }, (_, bucket) =>
    countSum(sql.raw(`durations[${bucket + 1}]`)),
  );
  return sql`, json_build_array(${sql.join(sums, sql`, `)}) as histogram`;
}

/** Whole units [from, to) of a rollup's time column, summed per group (and time bucket). */
async function rollupCells(
  db: Database,
  rollup: Rollup,
  query: StatsQuery,
  from: Date,
  to: Date,
): Promise<StatsCell[]> {
  if (query.onlyGroups && readsGroupByGroup(rollup, query))
    return indexedGroupCells(db, rollup, query, query.onlyGroups, from, to);
  if (rollup.histogramsTable && (query.durations ?? true)) {
    const counts = query.histogramsOnly
      ? []
      : await rollupCells(db, rollup, { ...query, durations: false }, from, to);
    const groups = query.onlyGroups;
    const rows = await selectRows<Row>(
      db,
      groups && histogramsByGroup(rollup, query)
        ? eachGroupsRows(rollup, rollup.histogramsTable, query, groups, from, to, {
            sums: sql`0 as ok, 0 as failed, 0 as cancelled ${histogramSums(query)}`,
            keys: 0,
            having: sql`count(*) > 0`,
          })
        : histogramStatement(
            rollup.histogramsTable,
            query,
            groupColumns(rollup, query),
            rollupConditions(rollup, query, from, to),
          ),
    );
    return [
      ...counts,
      ...rows.map((row) => toCell(row, histogramOf(row.histogram, row.histogram_from), NO_CALLS)),
    ];
  }
  if (rollup.durationsTable && (query.durations ?? true)) {
    const counts = query.histogramsOnly
      ? []
      : await rollupCells(db, rollup, { ...query, durations: false }, from, to);
    const durations = await durationRows(
      db,
      rollup.durationsTable,
      groupFields(rollup, query),
      rollupConditions(rollup, query, from, to),
    );
    return [...counts, ...durationCells(durations).map(({ cell }) => cell)];
  }
  const rows = await selectRows<Row>(db, rollupStatement(rollup, query, from, to));
  return rows.map((row) => toCell(row, histogramOf(row.histogram, row.histogram_from)));
}

/** A where clause of every condition, or none without conditions (a rollup of all time read whole). */
function whereAll(conditions: readonly SQL[]): SQL {
  return conditions.length > 0 ? sql`where ${sql.join([...conditions], sql` and `)}` : sql``;
}

/** `group by 1, 2, ...` over the first `count` columns of a select, or nothing without columns. */
function groupByFirst(count: number): SQL {
  return count > 0
    ? sql`group by ${sql.raw(Array.from({ length: count }, (_, i) => String(i + 1)).join(', '))}`
    : sql``;
}

/** The histograms of a histograms table's rows that the conditions keep, summed per key (its counts are elsewhere). */
function histogramStatement(table: string, query: StatsQuery, keys: SQL[], conditions: SQL[]): SQL {
  return sql`
    select ${sql.join([...keys, sql``], sql`, `)} 0 as ok, 0 as failed, 0 as cancelled ${histogramSums(query)}
      from ${sql.raw(table)}
     ${whereAll(conditions)}
     ${groupByFirst(keys.length)}`;
}

/** A durations table's rows summed per key: the key's fields as named, and the calls of each duration bucket. */
type DurationRow = Row & { calls_by_bucket: Record<string, number>; moved_from?: string | number };

/**
 * The calls of a durations table's rows that the conditions keep, per key (its
 * fields, `bucket`, ..., each selected as its name) and duration bucket, then
 * aggregated into one row a key: a key's histogram as
 * one row of JSON, not a row for each of its duration buckets (a daily series
 * of 500 groups over 30 days is 15,500 rows, not hundreds of thousands that
 * the service parsed, keyed and summed one by one).
 */
function durationRows(
  db: Database,
  table: string,
  keys: readonly NamedColumn[],
  conditions: SQL[],
): Promise<DurationRow[]> {
  return selectRows<DurationRow>(
    db,
    sql`
    select ${sql.join([...keys.map(({ name }) => sql.raw(name)), sql``], sql`, `)}
           json_object_agg(duration_bucket, calls) as calls_by_bucket
      from (select ${sql.join([...keys.map(aliased), sql``], sql`, `)} duration_bucket, ${countSum(sql`calls`)} as calls
              from ${sql.raw(table)}
             ${whereAll(conditions)}
             ${groupByFirst(keys.length + 1)}
            having ${countSum(sql`calls`)} <> 0) as durations
     ${groupByFirst(keys.length)}
    having count(*) > 0`,
  );
}

/** Durations rows as cells with no counts, which summing adds to the counts of the same key. */
function durationCells(rows: readonly DurationRow[]): Array<{ cell: StatsCell; row: DurationRow }> {
  return rows.map((row) => ({ cell: toCell(row, histogramOfBuckets(row.calls_by_bucket), NO_CALLS), row }));
}

const NO_CALLS: StatsCell['tally'] = Object.freeze({ ok: 0, failed: 0, cancelled: 0 });

/**
 * A rollup's rows of [from, to) as they are: their key fields as the query
 * names them, counts, histogram if asked. Only rows with calls, unless
 * `summedAfter`: the rows are summed per group and the groups without calls
 * dropped after, so a row of zeros (left by a delete) changes nothing, and
 * testing every row cost a tenth of a 30-day ranking's first pass.
 */
function rollupRows(
  rollup: Rollup,
  query: StatsQuery,
  keys: SQL[],
  conditions: SQL[],
  summedAfter = false,
): SQL {
  return sql`
    select ${sql.join([...keys, sql``], sql`, `)} ok, failed, cancelled
           ${(query.durations ?? true) ? sql`, to_json(durations) as histogram, array_lower(durations, 1) as histogram_from` : sql``}
      from ${sql.raw(rollup.table)}
     ${whereAll(summedAfter ? conditions : [...conditions, sql`ok + failed + cancelled > 0`])}`;
}

/** The statement of rollupCells for every group (or `onlyGroups` by condition), named as rawStatement's. */
function rollupStatement(rollup: Rollup, query: StatsQuery, from: Date, to: Date): SQL {
  if (rollup.durationsTable && (query.durations ?? true))
    throw new Error(`${rollup.table} keeps its histograms in ${rollup.durationsTable}`);
  const keys = groupColumns(rollup, query);
  const conditions = rollupConditions(rollup, query, from, to);
  const histogram = histogramSums(query);
  return oneRowPerGroup(rollup, {
    groupBy: query.groupBy,
    singleValued: singleValued(query),
    spec: query.spec,
  })
    ? // Each row is a group already: read it as it is, no sum over rows.
      rollupRows(rollup, query, keys, conditions)
    : sql`
    select ${sql.join([...keys, sql``], sql`, `)}
           ${OUTCOME_SUMS}
           ${histogram}
      from ${sql.raw(rollup.table)}
     ${whereAll(conditions)}
     ${groupByFirst(keys.length)}
    having ${CALLS_SUM} > 0`;
}

/**
 * The rows of [from, to) of a rollup aligned with the buckets whose bucket is
 * not the bucket of the start of their unit of `grain` (which counted them
 * when that unit was read whole): each counted in its own bucket and taken
 * away from that one.
 */
async function movedCells(
  db: Database,
  rollup: Rollup,
  query: StatsQuery,
  from: Date,
  to: Date,
  grain: RollupGrain,
): Promise<StatsCell[]> {
  const spec = query.spec;
  if (!spec) throw new Error('rows are moved between buckets only');
  const parts = movedParts({ from, to }, grain, spec);
  if (parts.length === 0) return [];
  const fields = [
    ...keyFields(rollup, query),
    { name: 'bucket', value: bucketSql(spec, epochMsOf(rollup)) },
    { name: 'moved_from', value: bucketSql(spec, unitStartSql(epochMsOf(rollup), grain)) },
  ];
  const keys = fields.map(aliased);
  // Only the rows of the parts, each part a range of the rollup's index on time.
  const inParts = sql`(${sql.join(
    parts.map((part) => sql`(${rollup.since(part.from)} and ${rollup.until(part.to)})`),
    sql` or `,
  )})`;
  const conditions = [...rollupConditions(rollup, query, from, to), inParts];
  const moved = (cell: StatsCell, row: { moved_from?: string | number }) => [
    cell,
    negated({ ...cell, bucket: Number(row.moved_from) }),
  ];
  const withDurations = query.durations ?? true;
  const statement = sql`
    select ${sql.join([...keys, sql``], sql`, `)}
           ${OUTCOME_SUMS}
           ${rollup.durationsTable ? sql`` : histogramSums(query)}
      from ${sql.raw(rollup.table)}
     ${whereAll(conditions)}
     group by ${sql.join(
       keys.map((_, i) => sql.raw(String(i + 1))),
       sql`, `,
     )}`;
  const rows = await selectRows<Row & { moved_from: string | number }>(db, statement);
  const cells = rows.flatMap((row) =>
    moved(toCell(row, histogramOf(row.histogram, row.histogram_from)), row),
  );
  if (!rollup.durationsTable || !withDurations) return cells;
  const durations = await durationRows(db, rollup.durationsTable, fields, conditions);
  return [...cells, ...durationCells(durations).flatMap(({ cell, row }) => moved(cell, row))];
}

/**
 * A row's histogram as numbers: JSON gives them as they are; none when durations were not read. A
 * stored histogram read as it is starts at its element `from` (it is trimmed to its buckets with
 * calls); sums of every bucket start at the first.
 */
function histogramOf(counts: Row['histogram'], from: number | null = 1): readonly number[] {
  if (counts === undefined) return NO_DURATIONS;
  const first = (from ?? 1) - 1;
  if (first === 0 && counts.length === DURATION_BUCKETS && counts.every((count) => typeof count === 'number'))
    return counts as number[];
  // A loop over the counts held, not a callback for each of the 65 buckets: an hourly series of 8,400
  // groups spent a tenth of its service time here.
  const histogram = new Array<number>(DURATION_BUCKETS).fill(0);
  const end = Math.min(counts.length, DURATION_BUCKETS - first);
  for (let i = Math.max(0, -first); i < end; i += 1) {
    const count = counts[i];
    if (count) histogram[i + first] = Number(count);
  }
  return histogram;
}

/** A cell whose calls are taken away when cells are summed. */
function negated(cell: StatsCell): StatsCell {
  return {
    ...cell,
    tally: { ok: -cell.tally.ok, failed: -cell.tally.failed, cancelled: -cell.tally.cancelled },
    histogram: cell.histogram === NO_DURATIONS ? NO_DURATIONS : cell.histogram.map((count) => -count),
  };
}

/** The fields a query filters to a single value. */
function singleValued(query: StatsQuery): OutcomeDimension[] {
  return filterValues(query)
    .filter(([, values]) => values?.length === 1)
    .map(([field]) => field);
}

function filterValues(query: StatsQuery): Array<[OutcomeDimension, readonly string[] | null | undefined]> {
  return [
    ['server', query.servers],
    ['tool', query.tools],
    ['configuration', query.configurations],
    ['owner', query.owners],
  ];
}

/** The fields a query filters by. */
function filteredBy(query: StatsQuery): OutcomeDimension[] {
  return filterValues(query)
    .filter(([, values]) => Boolean(values?.length))
    .map(([field]) => field);
}

/**
 * Tool calls counted by outcome, with duration histograms, in slices the
 * domain's `summarise` merges: each segment of the domain's plan read from its
 * rollup, or from run_steps (everything from run_steps with `raw`).
 */
export async function outcomeStatsCells(
  db: Database,
  query: StatsQuery,
  strategy: StatsStrategy = 'auto',
): Promise<StatsCell[]> {
  if (query.onlyGroups) return hashGrouped(db, () => cellsOfSegments(db, query, strategy));
  return cellsOfSegments(db, query, strategy);
}

/**
 * Statements whose rows are grouped by hash, never sorted to be grouped. The
 * planner takes a condition on `onlyGroups` to keep far fewer rows than it
 * does (1,784 of 16,949 durations rows of two days on `teams`, for owner x
 * configuration x tool) and sorts those rows to group them: 35 ms, against
 * 20 by hash. For the statements' transaction only, put back after them. Not
 * after a failure: the transaction is aborted and ends with it, and a statement
 * sent then would be refused and hide the failure's own error.
 */
async function hashGrouped<T>(db: Database, read: () => Promise<T>): Promise<T> {
  const [setting] = await selectRows<{ before: string }>(
    db,
    sql`select current_setting('enable_sort') as before, set_config('enable_sort', 'off', true)`,
  );
  const result = await read();
  await db.execute(sql`select set_config('enable_sort', ${setting?.before ?? 'on'}, true)`);
  return result;
}

/**
 * A part of the range read from a rollup, whose changes not folded yet are
 * added to it (taken away, for a part that is): the rows of tool_call_changes
 * of its hours, or of every hour for a rollup of all time. A part that moves
 * rows between buckets adds none: a change is counted in its own hour's bucket
 * from the start.
 */
interface TailSpan {
  from: Date | null;
  to: Date | null;
  sign: 1 | -1;
}

function tailSpans(segments: readonly StatsSegment[]): TailSpan[] {
  return segments.flatMap(({ from, to, source, subtract, movedFrom }): TailSpan[] => {
    if (source === 'raw' || movedFrom) return [];
    const rollup = ROLLUPS.get(source);
    if (!rollup) throw new Error(`no rollup named ${source}`);
    const ofAllTime = rollup.grain === 'all';
    return [{ from: ofAllTime ? null : from, to: ofAllTime ? null : to, sign: subtract ? -1 : 1 }];
  });
}

/**
 * The changes not folded yet of the spans, signed, that the query's filters
 * keep, summed per group (its fields named as rawStatement's), and per time
 * bucket and duration bucket when asked: what the spans' rollups do not hold
 * yet, read in the same snapshot as they are.
 */
function tailStatement(
  query: StatsQuery,
  spans: readonly TailSpan[],
  { buckets, durations }: { buckets: boolean; durations: boolean },
): SQL {
  const keys = ROW_FIELDS.filter((field) => query.groupBy.includes(field)).map(
    (field) => sql`c.${ROLLUP_COLUMNS[field]} as ${sql.raw(field)}`,
  );
  if (buckets && query.spec) keys.push(sql`${bucketSql(query.spec, epochMsSql(sql`c.hour`))} as bucket`);
  if (durations) keys.push(sql`c.b as duration_bucket`);
  const bounds = spans.map(
    ({ from, to, sign }) =>
      sql`(${from ? from.toISOString() : '-infinity'}::timestamptz, ${to ? to.toISOString() : 'infinity'}::timestamptz, ${sign}::bigint)`,
  );
  const conditions = filterValues(query)
    .map(([field, values]) => inList(sql`c.${ROLLUP_COLUMNS[field]}`, values))
    .filter((condition): condition is SQL => condition !== null);
  const signed = (count: string) => sql.raw(`sum(s.sign * c.${count})::bigint as ${count}`);
  return sql`
    select ${sql.join([...keys, sql``], sql`, `)} ${signed('ok')}, ${signed('failed')}, ${signed('cancelled')}
      from tool_call_changes c
      join (values ${sql.join(bounds, sql`, `)}) as s(since, until, sign) on c.hour >= s.since and c.hour < s.until
     ${whereAll(conditions)}
     ${groupByFirst(keys.length)}
    having sum(s.sign * c.ok) <> 0 or sum(s.sign * c.failed) <> 0 or sum(s.sign * c.cancelled) <> 0`;
}

/** The cells of the changes not folded yet of the spans (none without spans), as rawCells makes them. */
async function tailCells(db: Database, query: StatsQuery, spans: readonly TailSpan[]): Promise<StatsCell[]> {
  if (spans.length === 0) return [];
  const durations = query.durations ?? true;
  return bucketRowCells(
    await selectRows<Row>(db, tailStatement(query, spans, { buckets: true, durations })),
    durations,
  );
}

async function cellsOfSegments(
  db: Database,
  query: StatsQuery,
  strategy: StatsStrategy,
): Promise<StatsCell[]> {
  // One statement after another: a caller reading in one snapshot holds one connection.
  const cells: StatsCell[] = [];
  let only: Set<string> | null = null;
  const segments = statsSegments(query, strategy);
  for (const { from, to, source, subtract, movedFrom } of segments) {
    const rollup = source === 'raw' ? null : ROLLUPS.get(source);
    if (rollup === undefined) throw new Error(`no rollup named ${source}`);
    const part = !rollup
      ? await rawCells(db, query, from, to)
      : movedFrom
        ? await movedCells(db, rollup, query, from, to, movedFrom)
        : await rollupCells(db, rollup, query, from, to);
    // A rollup's statement keeps `onlyGroups` itself (rollupConditions, eachGroupsRows); run_steps'
    // statements read their short edges whole, and only their cells are kept by key here.
    if (!rollup && query.onlyGroups) only ??= new Set(query.onlyGroups.map(outcomeGroupKey));
    const kept = rollup ? null : only;
    for (const cell of part) {
      if (kept && !kept.has(outcomeGroupKey(cell))) continue;
      const signed = subtract ? negated(cell) : cell;
      cells.push(query.histogramsOnly ? { ...signed, tally: NO_CALLS } : signed);
    }
  }
  // What the rollups read do not hold yet: the changes not folded, read as run_steps' edges are.
  const kept = query.onlyGroups ? (only ?? new Set(query.onlyGroups.map(outcomeGroupKey))) : null;
  for (const cell of await tailCells(db, query, tailSpans(segments))) {
    if (kept && !kept.has(outcomeGroupKey(cell))) continue;
    cells.push(query.histogramsOnly ? { ...cell, tally: NO_CALLS } : cell);
  }
  return cells;
}

/**
 * Memory for each sort and hash of a statistics statement (PostgreSQL's
 * default is 4 MB): a first pass groups up to hundreds of thousands of keys,
 * and at 4 MB summing 400,000 rows with their histograms for 500 groups
 * sorted them on disk (teams owner x configuration x tool, before migration
 * 0023: 930 ms, 610 ms with 16 MB, where the groups are summed in a hash table).
 */
export const STATS_WORK_MEM = '16MB';

/**
 * What the planner counts for starting parallel workers in a statistics
 * statement (PostgreSQL's default is 1000, about 2 ms at its other costs).
 * Starting two workers took about 30 ms on a 2-core machine: the planner gave
 * two workers to first passes that took 30 ms run alone, and they took 60
 * (owner x server on `teams`). At 8000 a statement of that size runs alone,
 * and a heavy aggregate (tens of thousands of histograms summed) still gets
 * workers, where they save more than they cost.
 */
export const STATS_PARALLEL_SETUP_COST = '8000';

/**
 * Runs a statistics request's statements in one read-only snapshot
 * (`REPEATABLE READ`), with STATS_WORK_MEM and STATS_PARALLEL_SETUP_COST for
 * this transaction only. The settings are made by a query, which takes the
 * snapshot every later statement reads.
 */
export function inStatsSnapshot<T>(db: Database, work: (tx: Database) => Promise<T>): Promise<T> {
  return db.transaction(
    async (tx) => {
      await tx.execute(
        sql`select set_config('work_mem', ${STATS_WORK_MEM}, true),
                   set_config('parallel_setup_cost', ${STATS_PARALLEL_SETUP_COST}, true)`,
      );
      return work(tx);
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

/** How the groups rank: the domain's order (`RankOptions`), a count's or the key's. */
export interface CountRanking {
  orderBy: OutcomeOrderField;
  descending: boolean;
  minCalls: number;
  first: number;
}

/**
 * The first `first + 1` groups of a ranking, in its order, each with its
 * counts over the whole range (so more than `first` groups come back exactly
 * when some were left out): the counts of every part of the range summed per
 * group in the database, where thousands of groups stay, ordered as the
 * domain orders them (the same integers, the same division in float8, ties and
 * keys by code point: `collate "C"`). Totals do not depend on time buckets:
 * the range is read without them.
 */
export async function groupsRankedByCounts(
  db: Database,
  query: StatsQuery,
  ranking: CountRanking,
): Promise<{ cells: StatsCell[]; more: boolean }> {
  const counted: StatsQuery = { ...query, spec: null, durations: false, onlyGroups: null };
  const names = ROW_FIELDS.filter((field) => counted.groupBy.includes(field));
  const segments = statsSegments(counted);
  if (segments.length === 0) return { cells: [], more: false };
  // A rollup's rows as they are, summed once with the rest: summing each part first cost a third more.
  const rowsOf = ({ from, to, source }: StatsSegment, summedAfter: boolean) => {
    const rollup = source === 'raw' ? null : ROLLUPS.get(source);
    if (rollup === undefined) throw new Error(`no rollup named ${source}`);
    return rollup
      ? rollupRows(
          rollup,
          counted,
          keyColumns(rollup, counted),
          rollupConditions(rollup, counted, from, to),
          summedAfter,
        )
      : rawStatement(counted, from, to);
  };
  // Signed parts are always summed per group, and groups without calls dropped (rankedSums, rowsRankedOfAllTime).
  const signed = (segment: StatsSegment) => {
    const sign = segment.subtract ? sql.raw('-') : sql``;
    return sql`select ${nameColumns(names)} ${sign}ok as ok, ${sign}failed as failed, ${sign}cancelled as cancelled
                 from (${rowsOf(segment, true)}) as part`;
  };
  // The changes not folded yet of the parts read from rollups: a part of their own, summed with the rest.
  const tail = tailSpans(segments);
  const tailParts =
    tail.length > 0 ? [tailStatement(counted, tail, { buckets: false, durations: false })] : [];
  const whole = segments.find(({ source }) => {
    const rollup = source === 'raw' ? undefined : ROLLUPS.get(source);
    return rollup?.grain === 'all' && rollup.dimensions.length === names.length;
  });
  const directory = groupDirectory(names);
  // A walk reads the directory's groups in order: filtered by a field it is not keyed by (the owner,
  // for an actor who sees its own runs), most of them are someone else's, and it reads batch after
  // batch. The busiest owner of `wide` by configuration x server x tool over 30 days: by key 285 ms
  // walked, 72 summed; by calls 173 walked, 104 summed.
  const walkable = filteredBy(counted).every((field) => directory?.dimensions.includes(field));
  if (!whole && directory && walkable) {
    // A walk reads the groups the directory holds, folded: those with changes not folded yet are
    // counted beside them (a group's folded calls of all time bound its calls in a range no more).
    if (ranking.orderBy === 'key')
      return withTailGroups(db, counted, names, ranking, tailParts, () =>
        groupsWalkedByKey(db, counted, names, ranking, directory),
      );
    if (walksByCount(counted, segments, ranking, directory)) {
      const walked = await withTailGroups(db, counted, names, ranking, tailParts, () =>
        groupsWalkedByCount(db, counted, names, ranking, directory),
      );
      if (walked) return walked;
    }
  }
  const rows = await selectRows<Row>(
    db,
    whole
      ? rowsRankedOfAllTime(
          rowsOf(whole, false),
          [...segments.filter((segment) => segment !== whole).map(signed), ...tailParts],
          names,
          ranking,
        )
      : rankedSums([...segments.map(signed), ...tailParts], names, ranking),
  );
  return { cells: rows.map((row) => toCell(row, NO_DURATIONS)), more: rows.length > ranking.first };
}

/**
 * A walk's ranking with the groups that have changes not folded yet: their
 * keys (a few, from the tail's part), each counted over the range as the
 * walk counts its groups, ranked with the walk's. Every other group's calls
 * are all folded, so the walk's bounds hold for them.
 */
async function withTailGroups<Ranked extends { cells: StatsCell[]; more: boolean } | null>(
  db: Database,
  counted: StatsQuery,
  names: readonly OutcomeDimension[],
  ranking: CountRanking,
  tailParts: readonly SQL[],
  walk: () => Promise<Ranked>,
): Promise<Ranked> {
  const walked = await walk();
  if (walked === null || tailParts.length === 0) return walked;
  const keys = await selectRows<Row>(
    db,
    sql`select distinct ${sql.raw(names.join(', '))} from (${sql.join([...tailParts], sql` union all `)}) as tail`,
  );
  if (keys.length === 0) return walked;
  const counts = await outcomeStatsCells(db, {
    ...counted,
    durations: false,
    onlyGroups: keys.map((row) => toCell(row, NO_DURATIONS)),
  });
  const seen = new Set(walked.cells.map(outcomeGroupKey));
  const merged = [...walked.cells, ...counts.filter((cell) => !seen.has(outcomeGroupKey(cell)))];
  const cells = rankGroups(merged, { ...ranking, first: ranking.first + 1 }).groups;
  return { cells, more: cells.length > ranking.first } as Ranked;
}

/**
 * Columns in the order groups rank by key, each name by code point (`collate
 * "C"`, the domain's `compareNames`), for an `order by` or a row comparison.
 */
function byCodePoint(columns: readonly string[], direction = ''): SQL {
  return sql.raw(columns.map((column) => `${column} collate "C"${direction && ` ${direction}`}`).join(', '));
}

/** The rollup of all time keyed by exactly these fields: every group that ever had calls, indexed in key order (0031). */
function groupDirectory(names: readonly OutcomeDimension[]): Rollup | undefined {
  return [...ROLLUPS.values()].find(
    (rollup) =>
      rollup.grain === 'all' &&
      rollup.dimensions.length === names.length &&
      names.every((name) => rollup.dimensions.includes(name)),
  );
}

/**
 * A ranking by key over a range that no rollup of all time answers (the
 * default 30 days of a longer ledger): the groups are walked in key order
 * from the rollup of all time keyed by exactly the grouped fields (every
 * group that ever had calls, by its index in key order), a batch at a time,
 * and each batch's counts over the range are read for its groups alone, as
 * the second pass reads them, until `first + 1` groups have calls in the
 * range (and `minCalls`). Every group after a batch comes after each group of
 * it, so the first found are the first of all; the range's groups are never
 * all summed (all four fields over 30 days on `wide`: 143,336 groups).
 */
async function groupsWalkedByKey(
  db: Database,
  counted: StatsQuery,
  names: readonly OutcomeDimension[],
  ranking: CountRanking,
  directory: Rollup,
): Promise<{ cells: StatsCell[]; more: boolean }> {
  const wanted = ranking.first + 1;
  const [direction, beyond] = ranking.descending ? ['desc', '<'] : ['asc', '>'];
  const columns = names.map((name) => COLUMN_NAMES[name]);
  const filters = directoryFilters(counted, directory);
  const found: StatsCell[] = [];
  let after: string[] | null = null;
  // Twice the groups wanted first: most groups of all time have calls in a range of weeks.
  for (let batch = 2 * wanted; found.length < wanted; batch *= 2) {
    const past: SQL | null = after
      ? sql`(${byCodePoint(columns)}) ${sql.raw(beyond)} (${sql.join(
          after.map((value) => sql`${value}`),
          sql`, `,
        )})`
      : null;
    const conditions = [...filters, ...(past ? [past] : []), sql`ok + failed + cancelled > 0`];
    const rows = await selectRows<Row>(
      db,
      sql`select ${sql.raw(names.map((name) => `${COLUMN_NAMES[name]} as ${name}`).join(', '))}
            from ${sql.raw(directory.table)}
           where ${sql.join(conditions, sql` and `)}
           order by ${byCodePoint(columns, direction)}
           limit ${sql.raw(String(batch))}`,
    );
    if (rows.length === 0) break;
    const groups = rows.map((row) => toCell(row, NO_DURATIONS));
    const cells = await outcomeStatsCells(db, { ...counted, durations: false, onlyGroups: groups });
    found.push(...rankGroups(cells, { ...ranking, first: wanted - found.length }).groups);
    if (rows.length < batch) break;
    const last = rows[rows.length - 1] as Row;
    after = names.map((name) => last[name] ?? '');
  }
  return { cells: found, more: found.length > ranking.first };
}

/** The filters of the fields a directory holds; a filter on another field leaves more groups, never fewer. */
function directoryFilters(query: StatsQuery, directory: Rollup): SQL[] {
  return filterValues(query)
    .filter(([field]) => directory.dimensions.includes(field))
    .map(([field, values]) => inList(ROLLUP_COLUMNS[field], values))
    .filter((condition): condition is SQL => condition !== null);
}

/**
 * Rows of the range per group wanted (`first + 1`) from which a walk by count
 * answers sooner than ranking the range whole: it counts a few times the
 * groups wanted, each one index range of rows, and reads the edges of the
 * range twice. Measured on 300 owners, 40 servers of 15 tools over 30 days
 * (whole requests, in process, medians; rows as estimated, the parts of the
 * range outside the hours on record left out): with 92,000 rows (183 a group
 * wanted: owner x configuration x tool) ranked whole in 109 ms, walked in
 * 155; with 124,000 and 292,000 rows (248 and 583: owner x configuration x
 * server, all four) ranked whole in 168 and 580 ms, walked in 135 and 164.
 */
const WALK_ROWS_PER_GROUP = 224;

/**
 * Groups of all time per group wanted from which a walk by count answers
 * sooner: it counts about five times the groups wanted, each one index range,
 * which costs more a row than reading the range's rows in a row. On 40
 * owners, 20 servers of 10 tools (each group's calls on most days), over 30
 * days: with 6,000 and 8,000 groups of all time (configuration x server x
 * tool, owner x server x tool) ranked whole in 305 and 249 ms, walked in 343
 * and 290; with 16,000 (all four fields) ranked whole in 254, walked in 165
 * to 197.
 */
const WALK_GROUPS_PER_GROUP = 24;

/**
 * Whether a ranking walks the groups of all time by count
 * (`groupsWalkedByCount`): by calls or failures, descending (no group has
 * more of them in a range than of all time; a filter on outcomes or owners
 * only lowers them), its groups counted one index range each, and the range
 * holding many more rows, and its directory many more groups, than the walk
 * reads (as the database estimates them).
 */
function walksByCount(
  query: StatsQuery,
  segments: readonly StatsSegment[],
  ranking: CountRanking,
  directory: Rollup,
): boolean {
  if (!ranking.descending || (ranking.orderBy !== 'total' && ranking.orderBy !== 'failed')) return false;
  const wanted = ranking.first + 1;
  const rows = estimatedRows(query, segments);
  const groups = query.rollupRows?.[directory.name];
  return (
    rows !== null &&
    rows >= WALK_ROWS_PER_GROUP * wanted &&
    groups !== undefined &&
    groups >= WALK_GROUPS_PER_GROUP * wanted &&
    countsGroupByGroup(query, segments)
  );
}

/**
 * The rows a range's parts hold, as the database estimates them: each part's
 * rollup's rows times the share of the hours on record it spans (run_steps'
 * parts are edges of an hour at most). Null without an estimate for each.
 */
function estimatedRows(query: StatsQuery, segments: readonly StatsSegment[]): number | null {
  const recorded = query.recorded;
  if (!recorded) return null;
  const days = recorded.to.getTime() - recorded.from.getTime();
  let rows = 0;
  for (const { from, to, source } of segments) {
    if (source === 'raw') continue;
    const estimate = query.rollupRows?.[source];
    if (estimate === undefined || days <= 0) return null;
    rows +=
      ROLLUPS.get(source)?.grain === 'all'
        ? estimate
        : estimate * Math.min(1, (to.getTime() - from.getTime()) / days);
  }
  return rows;
}

/** Parts of a range shorter than this are read whole for some groups; longer ones must be read group by group. */
const SHORT_PART_MS = 7 * 86_400_000;

/**
 * Whether counting some groups over the range reads each group's rows as one
 * range of an index: every part of a week or more comes from a rollup indexed
 * by group (the edges, hours and days, are read whole and kept by group).
 */
function countsGroupByGroup(query: StatsQuery, segments: readonly StatsSegment[]): boolean {
  return segments.every(({ from, to, source }) => {
    if (to.getTime() - from.getTime() < SHORT_PART_MS) return true;
    const rollup = source === 'raw' ? undefined : ROLLUPS.get(source);
    return rollup !== undefined && rollup.grain !== 'all' && readsGroupByGroup(rollup, query);
  });
}

/**
 * How far a walk by count goes past its first batch, in groups wanted
 * (`first + 1`), before the range's groups are ranked whole instead; and the
 * most groups its first batch holds.
 */
const COUNT_WALK_LIMIT = 8;

/**
 * The share of the hours on record that a range spans (0 to 1): were calls
 * spread evenly over time, a group would hold this share of its calls of all
 * time in the range.
 */
function shareOfRecord(range: StatsRange, recorded: StatsRange | null | undefined): number {
  if (!recorded) return 1;
  const spanned = recorded.to.getTime() - recorded.from.getTime();
  if (spanned <= 0) return 1;
  const overlap =
    Math.min(range.to.getTime(), recorded.to.getTime()) -
    Math.max(range.from.getTime(), recorded.from.getTime());
  return Math.min(1, Math.max(0, overlap / spanned));
}

/**
 * A ranking by calls or failures, descending, over a range that no rollup of
 * all time answers (the default 30 days of a longer ledger), when its groups
 * are counted one index range each (`countsGroupByGroup`). No group has more
 * in the range than of all time. So: a first batch of groups of all time in
 * the ranking's order is counted over the range, and the `first + 1`-th of
 * them gives a bound (never above the true `first + 1`-th of the range);
 * every group that can rank among the first `first + 1` has at least the
 * bound of all time, and those past the batch are counted too, then all
 * ranked. The batch holds the first `2 (first + 1)` groups, and every group
 * of all time down to the range's share of the hours on record times the
 * `first + 1`-th of all time (the bound, were calls spread evenly over time;
 * at most `COUNT_WALK_LIMIT` times the groups wanted): where calls are spread
 * so, the batch already holds every group the bound asks for, and the
 * groups of all time and the edges of the range are read once, not twice.
 * All four fields over 30 days on `wide`: 2,726 groups counted of the
 * range's 147,353, in one batch. With more than `COUNT_WALK_LIMIT` times the
 * groups wanted past a first batch of `2 (first + 1)` (a bound too low to
 * cut: a short range, a few calls a group) null: the caller ranks the range
 * whole.
 */
async function groupsWalkedByCount(
  db: Database,
  counted: StatsQuery,
  names: readonly OutcomeDimension[],
  ranking: CountRanking,
  directory: Rollup,
): Promise<{ cells: StatsCell[]; more: boolean } | null> {
  const wanted = ranking.first + 1;
  const least = Math.max(ranking.minCalls, 1);
  const count = ranking.orderBy === 'failed' ? sql`a.failed::float8` : sql`(a.ok + a.failed + a.cancelled)`;
  const order = rankingOrder(
    ranking,
    names,
    { ok: sql`a.ok::float8`, failed: sql`a.failed::float8`, calls: count },
    'a',
  );
  const keys = names.map((name) => `${COLUMN_NAMES[name]} as ${name}`).join(', ');
  const groupsOfAllTimeSql = (columns: SQL, atLeast: SQL, orderBy: SQL, offset: number, limit: number) =>
    sql`select ${columns}
          from (select ${sql.raw(keys)}, ok, failed, cancelled
                  from ${sql.raw(directory.table)} ${whereAll(directoryFilters(counted, directory))}) as a
         where a.ok + a.failed + a.cancelled >= ${least} and ${count} >= ${atLeast}
         order by ${orderBy}
         offset ${sql.raw(String(offset))} limit ${sql.raw(String(limit))}`;
  const groupsOfAllTime = (atLeast: SQL, offset: number, limit: number) =>
    selectRows<Row & { counted: number | string }>(
      db,
      groupsOfAllTimeSql(
        sql`${sql.raw(names.map((name) => `a.${name}`).join(', '))}, ${count} as counted`,
        atLeast,
        order,
        offset,
        limit,
      ),
    );
  // The count of the n-th group of all time (none: 0), by the same index the batch is read by.
  const nthOfAllTime = (n: number) =>
    sql`coalesce((${groupsOfAllTimeSql(count, sql`0`, sql`${count} desc`, n - 1, 1)}), 0)`;
  const countOverRange = (rows: readonly Row[]) =>
    rows.length === 0
      ? Promise.resolve([])
      : outcomeStatsCells(db, {
          ...counted,
          durations: false,
          onlyGroups: rows.map((row) => toCell(row, NO_DURATIONS)),
        });
  const firstBatch = 2 * wanted;
  const limit = COUNT_WALK_LIMIT * wanted;
  const share = shareOfRecord(counted.range, counted.recorded);
  const batchLimit = Math.max(firstBatch, limit);
  const leading = await groupsOfAllTime(
    // Rounded up to a whole count, as the counts are: a bound the index of counts can be read down to.
    sql`ceil(least(${nthOfAllTime(firstBatch)}, ${share}::float8 * ${nthOfAllTime(wanted)}))::bigint`,
    0,
    batchLimit,
  );
  const leadingCells = await countOverRange(leading);
  const ranked = rankGroups(leadingCells, { ...ranking, first: wanted }).groups;
  // Fewer than the first batch: every group of all time was counted.
  if (leading.length < firstBatch) return { cells: ranked, more: ranked.length > ranking.first };
  const last = ranked.length === wanted ? ranked[wanted - 1] : undefined;
  const tally = last?.tally;
  const bound = !tally
    ? 0
    : ranking.orderBy === 'failed'
      ? tally.failed
      : tally.ok + tally.failed + tally.cancelled;
  // Every group past the batch has no more of all time than its last (less, when the batch was not
  // cut short: it holds every group down to a whole count): below the bound, none of them can rank.
  const lastCount = Number(leading.at(-1)?.counted);
  if (leading.length < batchLimit ? lastCount <= bound : lastCount < bound)
    return { cells: ranked, more: ranked.length > ranking.first };
  const room = firstBatch + limit - leading.length;
  const rest = await groupsOfAllTime(sql`${bound}`, leading.length, room + 1);
  if (rest.length > room) return null;
  const found = rankGroups([...leadingCells, ...(await countOverRange(rest))], {
    ...ranking,
    first: wanted,
  }).groups;
  return { cells: found, more: found.length > ranking.first };
}

/**
 * A ranking's `order by`, of the three counts given (float8 expressions, or
 * for the calls any expression in the same order, such as an index's): the
 * domain's value in the same arithmetic, then the grouped fields by code point
 * (ascending whatever the direction, as the domain breaks ties); by key, the
 * fields alone in the ranking's direction.
 */
function rankingOrder(
  ranking: CountRanking,
  names: readonly OutcomeDimension[],
  counts: { ok: SQL; failed: SQL; calls: SQL },
  table?: string,
): SQL {
  const direction = ranking.descending ? 'desc' : 'asc';
  const columns = names.map((name) => (table ? `${table}.${name}` : name));
  if (ranking.orderBy === 'key') return byCodePoint(columns, direction);
  const value = {
    total: counts.calls,
    failed: counts.failed,
    failureRate: sql`coalesce(${counts.failed} / nullif(${counts.ok} + ${counts.failed}, 0), '-Infinity'::float8)`,
  }[ranking.orderBy];
  return sql`${value} ${sql.raw(direction)}, ${byCodePoint(columns, 'asc')}`;
}

/** The grouped fields as named, each followed by a comma, to lead a select list. */
function nameColumns(names: readonly OutcomeDimension[], table?: string): SQL {
  return sql.raw(names.map((name) => `${table ? `${table}.` : ''}${name}, `).join(''));
}

/** The parts' rows (the grouped fields as named, and signed counts) summed per group. */
function summedParts(parts: SQL[], names: readonly OutcomeDimension[]): SQL {
  return sql`select ${nameColumns(names)} ${OUTCOME_SUMS}
          from (${sql.join(parts, sql` union all `)}) as parts
         ${groupByFirst(names.length)}`;
}

/** The rows a ranking keeps: the first `first + 1`. */
function firstOfRanking(ranking: CountRanking): SQL {
  return sql.raw(`limit ${ranking.first + 1}`);
}

/** Every part's rows summed per group, ranked, cut after `first + 1`. */
function rankedSums(parts: SQL[], names: readonly OutcomeDimension[], ranking: CountRanking): SQL {
  const counts = { ok: countSum(sql`ok`), failed: countSum(sql`failed`), calls: CALLS_SUM };
  return sql`${summedParts(parts, names)}
        having ${CALLS_SUM} > 0 and ${CALLS_SUM} >= ${ranking.minCalls}
         order by ${rankingOrder(ranking, names, counts)}
         ${firstOfRanking(ranking)}`;
}

/**
 * The same ranking when a rollup of all time keyed by exactly the grouped
 * fields reads the range (less the parts outside it): each of its rows is a
 * group, corrected by the other parts' signed calls summed per group (a few
 * rows), never summed with them. Grouping its rows with the others cost a
 * hash entry per group (284,995 groups of all four fields on `wide`: 400 ms).
 */
function rowsRankedOfAllTime(
  allTime: SQL,
  others: SQL[],
  names: readonly OutcomeDimension[],
  ranking: CountRanking,
): SQL {
  const sameKey = (left: string, right: string) =>
    sql.raw(
      names.length > 0 ? names.map((name) => `${left}.${name} = ${right}.${name}`).join(' and ') : 'true',
    );
  const corrects = others.length > 0;
  const parts: SQL[] = [];
  if (corrects) parts.push(sql`corrections as (${summedParts(others, names)})`);
  // Only the corrected groups' counts differ from their counts of all time (k groups, the other
  // parts' few rows and the changes not folded yet, whose groups the rollup may not hold yet: they
  // are candidates with no calls of their own), and every other group's calls in the range are its
  // calls of all time.
  // So every group that can rank among the first `first + 1` is either corrected or among the first
  // `first + 1 + k` groups of all time in the ranking's own order (of those with enough calls of all
  // time): every group ahead of it there that is not corrected is ahead of it in the range too.
  // Those are found by a bounded walk (an index where one serves the order), not every row of all
  // time joined with the corrections and ranked.
  const enough = sql`a.ok + a.failed + a.cancelled >= ${Math.max(ranking.minCalls, 1)}`;
  const walk = rankingOrder(
    ranking,
    names,
    { ok: sql`a.ok::float8`, failed: sql`a.failed::float8`, calls: sql`(a.ok + a.failed + a.cancelled)` },
    'a',
  );
  const walked = corrects
    ? sql`${sql.raw(String(ranking.first + 1))} + (select count(*) from corrections)`
    : sql.raw(String(ranking.first + 1));
  parts.push(sql`candidates as (
      (select a.* from (${allTime}) as a where ${enough} order by ${walk} limit ${walked})
      ${corrects ? sql`union select a.* from (${allTime}) as a join corrections as c on ${sameKey('c', 'a')}` : sql``}
      ${corrects ? sql`union select ${nameColumns(names, 'c')} 0, 0, 0 from corrections as c where not exists (select from (${allTime}) as a where ${sameKey('c', 'a')})` : sql``}
    )`);
  const corrected = (count: string) =>
    corrects
      ? sql.raw(`a.${count}::float8 + coalesce(c.${count}, 0) as ${count}`)
      : sql.raw(`a.${count}::float8 as ${count}`);
  const calls = sql`(r.ok + r.failed + r.cancelled)`;
  return sql`with ${sql.join(parts, sql`, `)}
    select ${nameColumns(names, 'r')} r.ok, r.failed, r.cancelled
      from (select ${nameColumns(names, 'a')} ${corrected('ok')}, ${corrected('failed')}, ${corrected('cancelled')}
              from candidates as a
              ${corrects ? sql`left join corrections as c on ${sameKey('c', 'a')}` : sql``}) as r
     where ${calls} > 0 and ${calls} >= ${ranking.minCalls}
     order by ${rankingOrder(ranking, names, { ok: sql`r.ok`, failed: sql`r.failed`, calls }, 'r')}
     ${firstOfRanking(ranking)}`;
}

/** Where each part of a query's range is read from: the domain's plan, or run_steps whole with `raw`. */
export function statsSegments(query: StatsQuery, strategy: StatsStrategy = 'auto'): StatsSegment[] {
  if (strategy === 'raw') return [{ from: query.range.from, to: query.range.to, source: 'raw' }];
  return planOutcomeStats({
    groupBy: query.groupBy,
    filteredBy: filteredBy(query),
    outcomeFilter: Boolean(query.outcomes?.length),
    range: query.range,
    spec: query.spec,
    ...(query.now ? { now: query.now } : {}),
    ...(query.recorded ? { recorded: query.recorded } : {}),
    ...(query.rollupRows ? { rollupRows: query.rollupRows } : {}),
    countsOnly: query.durations === false,
  });
}

/** What decides whether a range is read from the rollups of all time: see `RollupRequest`. */
export interface CallsOnRecord {
  recorded: StatsRange | null;
  rollupRows: Partial<Record<RollupName, number>>;
}

/**
 * Whole UTC hours holding every call recorded: from the first hour of the
 * hourly rollup by server, or of the changes not folded yet, to the end of
 * the last of either (both ends of their keys; an
 * hour whose calls were all deleted may keep its row: the hours can only be
 * wider; null without calls). To the hour, not the day: the rest of a range's
 * last day after its last call holds none, and no statement reads it. And the
 * rows of each rollup as the database's statistics estimate them
 * (`pg_class.reltuples`, kept by ANALYZE and autovacuum; a table never
 * analyzed has none).
 */
export async function callsOnRecord(db: Database): Promise<CallsOnRecord> {
  const names = [...ROLLUPS.keys()];
  const [row] = await selectRows<{
    first: number | string | null;
    last: number | string | null;
    estimates: Array<number | string> | null;
  }>(
    db,
    sql`select ${epochMsSql(sql`least(min(hour), (select min(hour) from tool_call_changes))`)} as first,
               ${epochMsSql(sql`greatest(max(hour), (select max(hour) from tool_call_changes))`)} as last,
               (select array_agg(coalesce(c.reltuples, -1)::float8 order by t.i)
                  from unnest(${textArrayLiteral(names.map((name) => rollupTable({ name })))}::text[]) with ordinality as t(name, i)
                  left join pg_class as c on c.oid = to_regclass(t.name)) as estimates
          from ${sql.raw(rollupTable({ name: 'serverHourly' }))}`,
  );
  const rollupRows: Partial<Record<RollupName, number>> = {};
  names.forEach((name, i) => {
    const estimate = Number(row?.estimates?.[i] ?? -1);
    if (estimate > 0) rollupRows[name] = estimate;
  });
  const recorded =
    row?.first == null || row.last == null
      ? null
      : { from: new Date(Number(row.first)), to: new Date(Number(row.last) + BUCKET_MS.hour) };
  return { recorded, rollupRows };
}
