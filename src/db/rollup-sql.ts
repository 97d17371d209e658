import { DURATION_BUCKETS } from '../domain/duration-histogram.ts';
import {
  OUTCOME_ROLLUPS,
  type RollupColumn,
  type RollupDefinition,
  type RollupIndex,
  type RollupName,
  type RollupSpan,
} from '../domain/outcome-rollups.ts';
import type { OutcomeDimension } from '../domain/outcome-stats.ts';

/**
 * The rollups' SQL, made from the catalogue (OUTCOME_ROLLUPS): their tables
 * and indexes, the function that adds a batch of calls to every one of them,
 * the recount from run_steps, and the truncation that follows run_steps'.
 * The migrator applies it as repeatable definitions (migrations/repeatable/,
 * written by `npm run rollups:write` and checked by a test to be what this
 * makes): a change of the catalogue rebuilds the rollups from run_steps.
 */

/** Each key field's column, in every rollup alike. */
export const FIELD_COLUMNS: Readonly<Record<OutcomeDimension, string>> = {
  owner: 'owner',
  configuration: 'configuration',
  server: 'server',
  tool: 'tool_name',
};

/** A rollup's unit of time: its column, that column's type, and the expression of a cell's hour in it. */
const TIME: Readonly<Record<Exclude<RollupSpan, 'all'>, { column: string; type: string; ofCell: string }>> = {
  hour: { column: 'hour', type: 'timestamp with time zone', ofCell: 'c.hour' },
  day: { column: 'day', type: 'date', ofCell: "(c.hour AT TIME ZONE 'UTC')::date" },
  week: { column: 'week', type: 'date', ofCell: "date_trunc('week', c.hour AT TIME ZONE 'UTC')::date" },
};

const COUNTS = ['ok', 'failed', 'cancelled'] as const;

const snake = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** The longest name PostgreSQL keeps whole: a longer one is cut, and two cut alike would clash. */
const MAX_IDENTIFIER = 63;

function identifier(name: string): string {
  if (name.length > MAX_IDENTIFIER) throw new Error(`${name} is longer than ${MAX_IDENTIFIER} characters`);
  return name;
}

/** A rollup's table: `stats_` and its name in snake case (`ownerToolDaily` is `stats_owner_tool_daily`). */
export const rollupTable = (rollup: Pick<RollupDefinition, 'name'>) =>
  identifier(`stats_${snake(rollup.name)}`);

/** Its histograms' table when not in its rows: `…_durations` (a row per bucket) or `…_histograms` (a row per key). */
export function durationsTableOf(rollup: RollupDefinition): string | null {
  if (rollup.durations === 'beside') return `${rollupTable(rollup)}_durations`;
  if (rollup.durations === 'apart') return `${rollupTable(rollup)}_histograms`;
  return null;
}

export const rollupByName = (name: RollupName): RollupDefinition => {
  const rollup = OUTCOME_ROLLUPS.find((r) => r.name === name);
  if (!rollup) throw new Error(`no rollup ${name}`);
  return rollup;
};

/** The time column of a rollup, null for one of all time. */
export const timeColumnOf = (rollup: RollupDefinition) =>
  rollup.grain === 'all' ? null : TIME[rollup.grain].column;

/** Its primary key's columns: the unit of time, then the key fields in the catalogue's order. */
function keyColumns(rollup: RollupDefinition): string[] {
  const time = timeColumnOf(rollup);
  return [...(time ? [time] : []), ...rollup.dimensions.map((field) => FIELD_COLUMNS[field])];
}

/** A cell's value of each key column, as the fold's statements select it. */
function keyOfCell(rollup: RollupDefinition): string[] {
  return [
    ...(rollup.grain === 'all' ? [] : [`${TIME[rollup.grain].ofCell} AS ${TIME[rollup.grain].column}`]),
    ...rollup.dimensions.map((field) => `c.${FIELD_COLUMNS[field]}`),
  ];
}

const positions = (count: number) => Array.from({ length: count }, (_, i) => String(i + 1)).join(', ');

/**
 * A histogram of durations, trimmed to its buckets with calls (migrations/repeatable/05): within
 * the buckets, no NULL, its first and last element not zero, or empty.
 */
const HISTOGRAM_COLUMN = `durations bigint[] DEFAULT '{}'::bigint[] NOT NULL`;
const histogramShape = (table: string) =>
  `CONSTRAINT ${identifier(`${table}_shape`)} CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= ${DURATION_BUCKETS} AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0))`;

function keyColumnDefinitions(rollup: RollupDefinition): string[] {
  const time =
    rollup.grain === 'all' ? [] : [`${TIME[rollup.grain].column} ${TIME[rollup.grain].type} NOT NULL`];
  return [...time, ...rollup.dimensions.map((field) => `${FIELD_COLUMNS[field]} text NOT NULL`)];
}

/** The weeks start on Monday, 00:00 UTC, as every week of the service does. */
const mondayCheck = (rollup: RollupDefinition, table: string) =>
  rollup.grain === 'week'
    ? [`CONSTRAINT ${identifier(`${table}_monday`)} CHECK (EXTRACT(isodow FROM week) = 1)`]
    : [];

function createTable(table: string, columns: readonly string[]): string {
  return `CREATE TABLE ${table} (\n  ${columns.join(',\n  ')}\n);`;
}

function tablesOf(rollup: RollupDefinition): string[] {
  const table = rollupTable(rollup);
  const key = keyColumns(rollup).join(', ');
  const statements = [
    createTable(table, [
      ...keyColumnDefinitions(rollup),
      ...COUNTS.map((count) => `${count} bigint DEFAULT 0 NOT NULL`),
      ...(rollup.durations === 'inline' ? [HISTOGRAM_COLUMN] : []),
      `CONSTRAINT ${identifier(`${table}_pkey`)} PRIMARY KEY (${key})`,
      ...(rollup.durations === 'inline' ? [histogramShape(table)] : []),
      ...mondayCheck(rollup, table),
    ]),
  ];
  const durations = durationsTableOf(rollup);
  if (durations && rollup.durations === 'beside') {
    statements.push(
      createTable(durations, [
        ...keyColumnDefinitions(rollup),
        'duration_bucket smallint NOT NULL',
        'calls bigint DEFAULT 0 NOT NULL',
        `CONSTRAINT ${identifier(`${durations}_pkey`)} PRIMARY KEY (${key}, duration_bucket)`,
        `CONSTRAINT ${identifier(`${durations}_bucket`)} CHECK (duration_bucket >= 0 AND duration_bucket <= ${DURATION_BUCKETS - 1})`,
        ...mondayCheck(rollup, durations),
      ]),
    );
  } else if (durations) {
    statements.push(
      createTable(durations, [
        ...keyColumnDefinitions(rollup),
        HISTOGRAM_COLUMN,
        `CONSTRAINT ${identifier(`${durations}_pkey`)} PRIMARY KEY (${key})`,
        histogramShape(durations),
      ]),
    );
  }
  for (const index of rollup.indexes ?? []) statements.push(...indexesOf(rollup, index));
  return statements;
}

function column(rollup: RollupDefinition, field: RollupColumn): string {
  if (field !== 'time') return FIELD_COLUMNS[field];
  const time = timeColumnOf(rollup);
  if (!time) throw new Error(`${rollup.name} has no time to index`);
  return time;
}

const byteOrdered = (columns: readonly string[]) => columns.map((c) => `${c} COLLATE "C"`).join(', ');

function indexesOf(rollup: RollupDefinition, index: RollupIndex): string[] {
  const table = rollupTable(rollup);
  const name = (on: string) => identifier(`${on}_${index.name}`);
  if (index.kind !== 'fields') {
    const keys = byteOrdered((index.fields ?? []).map((field) => FIELD_COLUMNS[field]));
    const expression = {
      calls: '((ok + failed + cancelled))',
      failureRate: `COALESCE(failed::double precision / NULLIF(ok::double precision + failed::double precision, 0), '-Infinity'::double precision) DESC, ${keys}`,
      failures: `(failed::double precision) DESC, ${keys}`,
    }[index.kind];
    return [`CREATE INDEX ${name(table)} ON ${table} (${expression});`];
  }
  const columns = index.fields.map((field) => column(rollup, field));
  const listed = index.byteOrder ? byteOrdered(columns) : columns.join(', ');
  const statements: string[] = [];
  if (index.durations !== 'only')
    statements.push(
      `CREATE INDEX ${name(table)} ON ${table} (${listed}${index.withCounts ? `, ${COUNTS.join(', ')}` : ''});`,
    );
  const durations = durationsTableOf(rollup);
  if (index.durations && durations && rollup.durations === 'beside')
    statements.push(
      `CREATE INDEX ${name(durations)} ON ${durations} (${listed}${index.withCounts ? ', duration_bucket, calls' : ''});`,
    );
  return statements;
}

/** Every table a rollup keeps: its own, and its histograms' where they are apart. */
export function tablesOfRollup(rollup: RollupDefinition): string[] {
  const durations = durationsTableOf(rollup);
  return [rollupTable(rollup), ...(durations ? [durations] : [])];
}

export const ROLLUP_TABLES: readonly string[] = OUTCOME_ROLLUPS.flatMap(tablesOfRollup);

const sums = COUNTS.map((count) => `sum(c.${count})::bigint AS ${count}`).join(', ');
const CALLS = 'sum(c.ok + c.failed + c.cancelled)::bigint';
/**
 * A key's histogram from its (duration bucket, calls) pairs, `b` and `calls`,
 * one pair a bucket: a single pair (most keys of a batch where keys are many)
 * by array_fill, a built-in, where tool_duration_histogram is a plpgsql call
 * a key (13 % of the fold's time on many keys); the same array either way.
 */
export const HISTOGRAM_OF_PAIRS = `CASE WHEN count(*) = 1
         THEN CASE WHEN max(calls) = 0 THEN '{}'::bigint[] ELSE array_fill(max(calls), ARRAY[1], ARRAY[max(b) + 1]) END
         ELSE tool_duration_histogram(array_agg(b), array_agg(calls)) END`;
const addCounts = (table: string) =>
  COUNTS.map((count) => `${count} = ${table}.${count} + excluded.${count}`).join(',\n    ');
const addHistogram = (table: string) =>
  `durations = tool_duration_histogram_add(${table}.durations, excluded.durations)`;

/**
 * The batch's cells a rollup's statements read: the hours' own for an hourly
 * rollup, else the batch summed per UTC day, or per week for a weekly one and
 * one of all time (each cell's hour then holds the start of its day or week,
 * which the day's and week's expressions of a cell take as any hour of it).
 */
const CELLS_OF: Readonly<Record<RollupSpan, string>> = {
  hour: 'cells',
  day: 'day_cells',
  week: 'week_cells',
  all: 'week_cells',
};

/** The cells summed per unit: each cell's hour set to its unit's start, its calls summed per key and duration bucket. */
const cellsPer = (unit: 'day' | 'week', from: string) =>
  `ARRAY(
    SELECT ROW(date_trunc('${unit}', c.hour, 'UTC'), c.owner, c.configuration, c.server, c.tool_name, c.b,
               sum(c.ok)::bigint, sum(c.failed)::bigint, sum(c.cancelled)::bigint)::tool_call_cell
      FROM unnest(${from}) AS c
     GROUP BY date_trunc('${unit}', c.hour, 'UTC'), c.owner, c.configuration, c.server, c.tool_name, c.b)`;

/** The statements that add a batch's cells to one rollup: one INSERT ... ON CONFLICT per table. */
function addStatements(rollup: RollupDefinition): string[] {
  const table = rollupTable(rollup);
  const cells = CELLS_OF[rollup.grain];
  const key = keyColumns(rollup);
  const keyList = key.join(', ');
  const cellKey = keyOfCell(rollup).join(', ');
  const n = key.length;
  const statements: string[] = [];
  if (rollup.durations === 'inline') {
    // Each key's calls per duration bucket first, then an array of them per key.
    statements.push(`INSERT INTO ${table} (${keyList}, ok, failed, cancelled, durations)
  SELECT ${keyList}, sum(ok), sum(failed), sum(cancelled), ${HISTOGRAM_OF_PAIRS}
    FROM (
      SELECT ${cellKey}, c.b, ${sums}, ${CALLS} AS calls
        FROM unnest(${cells}) AS c
       GROUP BY ${positions(n + 1)}
    ) AS by_bucket
   GROUP BY ${keyList}
   ORDER BY ${keyList}
  ON CONFLICT (${keyList}) DO UPDATE SET
    ${addCounts(table)},
    ${addHistogram(table)};`);
  } else {
    statements.push(`INSERT INTO ${table} (${keyList}, ok, failed, cancelled)
  SELECT ${cellKey}, ${sums}
    FROM unnest(${cells}) AS c
   GROUP BY ${positions(n)}
   ORDER BY ${positions(n)}
  ON CONFLICT (${keyList}) DO UPDATE SET
    ${addCounts(table)};`);
  }
  const durations = durationsTableOf(rollup);
  if (durations && rollup.durations === 'beside') {
    // A zero sum changes no row: none is written for it.
    statements.push(`INSERT INTO ${durations} (${keyList}, duration_bucket, calls)
  SELECT ${cellKey}, c.b::smallint, ${CALLS}
    FROM unnest(${cells}) AS c
   GROUP BY ${positions(n + 1)}
  HAVING ${CALLS} <> 0
   ORDER BY ${positions(n + 1)}
  ON CONFLICT (${keyList}, duration_bucket) DO UPDATE SET
    calls = ${durations}.calls + excluded.calls;`);
  } else if (durations) {
    statements.push(`INSERT INTO ${durations} (${keyList}, durations)
  SELECT ${keyList}, ${HISTOGRAM_OF_PAIRS}
    FROM (
      SELECT ${cellKey}, c.b, ${CALLS} AS calls
        FROM unnest(${cells}) AS c
       GROUP BY ${positions(n + 1)}
    ) AS by_bucket
   GROUP BY ${keyList}
   ORDER BY ${keyList}
  ON CONFLICT (${keyList}) DO UPDATE SET
    ${addHistogram(durations)};`);
  }
  return statements;
}

const GENERATED =
  '-- Made from the rollup catalogue (src/domain/outcome-rollups.ts) by `npm run rollups:write`: do not edit.';

/** Adds a batch of cells (calls per hour, key and duration bucket, signed) to every rollup (or those given, by a function of that name). */
export function addFunctionSql(
  rollups: readonly RollupDefinition[] = OUTCOME_ROLLUPS,
  name = 'tool_outcome_rollups_add',
): string {
  const body = rollups
    .flatMap(addStatements)
    .map((statement) => `  ${statement}`)
    .join('\n\n');
  return `${GENERATED}
-- Adds a batch of cells (signed calls per hour, key and duration bucket) to every rollup: one
-- INSERT ... ON CONFLICT per table, the batch's cells summed per row first.
CREATE OR REPLACE FUNCTION ${name}(cells tool_call_cell[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  day_cells tool_call_cell[];
  week_cells tool_call_cell[];
BEGIN
  IF cells IS NULL OR cardinality(cells) = 0 THEN
    RETURN;
  END IF;
  -- Summed once per day and per week, not by each rollup of those units: a batch of few keys holds
  -- a key's calls of many hours.
  day_cells := ${cellsPer('day', 'cells')};
  week_cells := ${cellsPer('week', 'day_cells')};

${body}
END;
$$;
`;
}

/** Empties every rollup when run_steps is truncated. */
export function truncateFollowSql(): string {
  return `${GENERATED}
-- TRUNCATE run_steps empties every rollup (the changes not folded yet are emptied by
-- tool_call_changes_follow_truncate).
CREATE OR REPLACE FUNCTION tool_outcome_daily_follow_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE ${ROLLUP_TABLES.join(', ')};
  RETURN NULL;
END;
$$;
`;
}

/**
 * Every rollup recounted from run_steps and runs, a week of calls (Monday,
 * 00:00 UTC, to the next) at a time, through tool_outcome_rollups_add: a
 * weekly row is written once per recount, not seven times in one transaction.
 */
export function recountFunctionSql(): string {
  return `${GENERATED}
-- Every rollup recounted from run_steps and runs, a week of calls (Monday, 00:00 UTC, to the next)
-- at a time, through tool_outcome_rollups_add: a weekly row is written once, not seven times in one
-- transaction. The caller holds the locks that keep writers out (tool_outcome_rollups_rebuild).
CREATE OR REPLACE FUNCTION tool_outcome_rollups_recount() RETURNS void
LANGUAGE plpgsql AS $recount$
DECLARE
  first_call timestamp with time zone;
  last_call timestamp with time zone;
  week_start timestamp with time zone;
BEGIN
  TRUNCATE ${ROLLUP_TABLES.join(', ')};
  SELECT min(occurred_at), max(occurred_at) INTO first_call, last_call FROM run_steps WHERE kind = 'tool';
  IF first_call IS NULL THEN
    RETURN;
  END IF;
  week_start := date_trunc('week', first_call, 'UTC');
  WHILE week_start <= last_call LOOP
    PERFORM tool_outcome_rollups_add((
      SELECT array_agg(ROW(hour, owner, configuration, server, tool_name, b, ok, failed, cancelled)::tool_call_cell)
        FROM (
          SELECT date_trunc('hour', s.occurred_at, 'UTC') AS hour, r.owner, r.configuration,
                 coalesce(s.server, '') AS server, coalesce(s.tool_name, '') AS tool_name,
                 tool_duration_bucket(s.duration_ms) AS b,
                 count(*) FILTER (WHERE stated.o = 'ok') AS ok,
                 count(*) FILTER (WHERE stated.o = 'failed') AS failed,
                 count(*) FILTER (WHERE stated.o = 'cancelled') AS cancelled
            FROM run_steps s JOIN runs r ON r.id = s.run_id,
                 LATERAL (SELECT stated_tool_outcome(s.kind, s.tool_is_error, s.tool_outcome) AS o) AS stated
           WHERE s.kind = 'tool' AND s.occurred_at >= week_start AND s.occurred_at < week_start + interval '168 hours'
             AND stated.o IS NOT NULL
           GROUP BY 1, 2, 3, 4, 5, 6
        ) AS cell
    ));
    -- 168 hours, not a week: a UTC week, whatever the session's time zone.
    week_start := week_start + interval '168 hours';
  END LOOP;
END;
$recount$;
`;
}

/**
 * The tables the rollups were kept in before the catalogue named them: dropped
 * with the rest when the tables are made again.
 */
const RETIRED_TABLES = [
  'tool_outcome_daily',
  'tool_outcome_owner_daily',
  'tool_outcome_owner_daily_durations',
  'tool_outcome_hourly',
  'tool_outcome_hourly_durations',
  'tool_outcome_server_daily',
  'tool_outcome_owner_configuration_daily',
  'tool_outcome_owner_tool_daily',
  'tool_outcome_owner_configuration_server_daily',
  'tool_outcome_server_hourly',
  'tool_outcome_owner_configuration_hourly',
  'tool_outcome_owner_configuration_weekly',
  'tool_outcome_owner_configuration_server_weekly',
  'tool_outcome_owner_weekly',
  'tool_outcome_owner_server_weekly',
  'tool_outcome_configuration_server_weekly',
  'tool_outcome_owner_tool_weekly',
  'tool_outcome_server_tool_weekly',
  'tool_outcome_configuration_tool_weekly',
  'tool_outcome_owner_configuration_tool_weekly',
  'tool_outcome_weekly',
  'tool_outcome_all_time',
  'tool_outcome_all_time_durations',
  'tool_outcome_owner_server_tool_all_time',
  'tool_outcome_configuration_server_tool_all_time',
  'tool_outcome_owner_configuration_server_all_time',
  'tool_outcome_owner_configuration_tool_all_time',
  'tool_outcome_owner_server_all_time',
  'tool_outcome_configuration_server_all_time',
];

/**
 * The rollups' tables made again, and filled from run_steps: every rollup
 * table there is (the catalogue's, and any it no longer lists) dropped, the
 * catalogue's created with their indexes, and every call counted in again
 * under the locks that keep writers out (tool_outcome_rollups_rebuild, which
 * also empties the changes not folded yet: run_steps holds them).
 */
export function tablesSql(): string {
  const statements = OUTCOME_ROLLUPS.flatMap(tablesOf);
  return `${GENERATED}
-- The rollups are made from run_steps: when the catalogue changes, they are dropped, made again
-- and counted again, under the locks that keep writers out meanwhile.
SET LOCAL lock_timeout = '5s';
LOCK TABLE runs, run_steps IN SHARE MODE;
DO $drop$
DECLARE
  t text;
BEGIN
  FOR t IN
    SELECT tablename FROM pg_tables
     WHERE schemaname = current_schema()
       AND (tablename LIKE 'stats\\_%' OR tablename = ANY (ARRAY['${RETIRED_TABLES.join("', '")}']))
  LOOP
    EXECUTE format('DROP TABLE %I', t);
  END LOOP;
END;
$drop$;

${statements.join('\n\n')}

SELECT tool_outcome_rollups_rebuild();
${ROLLUP_TABLES.map((table) => `ANALYZE ${table};`).join('\n')}
`;
}

/** The repeatable definitions made from the catalogue, by file (the others in migrations/repeatable are written by hand). */
export const GENERATED_REPEATABLES: Readonly<Record<string, () => string>> = {
  '10_tool_outcome_rollups_add.sql': addFunctionSql,
  '20_tool_outcome_rollups_recount.sql': recountFunctionSql,
  '30_tool_outcome_daily_follow_truncate.sql': truncateFollowSql,
  '90_stats_tables.sql': tablesSql,
};

export const CATALOGUE_TABLE_START = '<!-- rollups: made from the catalogue by `npm run rollups:write` -->';
export const CATALOGUE_TABLE_END = '<!-- rollups: end -->';

const FIELD_WORDS: Readonly<Record<OutcomeDimension, string>> = {
  owner: 'owner',
  configuration: 'configuration',
  server: 'server',
  tool: 'tool',
};
const HISTOGRAM_WORDS: Readonly<Record<RollupDefinition['durations'], string>> = {
  inline: 'in its rows',
  beside: 'a row per bucket, beside it',
  apart: 'a row per key, apart',
  none: 'none (counts only)',
};

/** The catalogue as the design's table: a rollup a row, in the order the planner tries them. */
export function catalogueMarkdown(): string {
  const rows = OUTCOME_ROLLUPS.map((rollup) => {
    const indexes = (rollup.indexes ?? []).map((index) => `\`${index.name}\``).join(', ') || '—';
    return `| ${rollup.grain} | \`${rollupTable(rollup)}\` | ${rollup.dimensions.map((f) => FIELD_WORDS[f]).join(', ')} | ${HISTOGRAM_WORDS[rollup.durations]} | ${indexes} | ${rollup.serves} |`;
  });
  return [
    '| unit | table | key | histograms | indexes | serves |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    `${OUTCOME_ROLLUPS.length} rollups in ${ROLLUP_TABLES.length} tables.`,
  ].join('\n');
}

/** A page with the catalogue's table between its markers written again; null when it has no markers. */
export function withCatalogueTable(page: string): string | null {
  const start = page.indexOf(CATALOGUE_TABLE_START);
  const end = page.indexOf(CATALOGUE_TABLE_END);
  if (start < 0 || end < start) return null;
  return `${page.slice(0, start + CATALOGUE_TABLE_START.length)}\n\n${catalogueMarkdown()}\n\n${page.slice(end)}`;
}
