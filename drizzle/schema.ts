import { sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  bigint,
  boolean,
  check,
  date,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { DURATION_BUCKETS } from '../src/domain/duration-histogram.ts';
import type { McpHeader } from '../src/domain/mcp-server.ts';
import type { JsonObject } from '../src/domain/run-step.ts';

/**
 * The tables as they stand after the latest migration in `migrations/`.
 * A test applies the migrations and proves they produce exactly this.
 */
export const runs = pgTable(
  'runs',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    uuid: uuid('uuid').notNull().unique('runs_uuid_unique'),
    owner: text('owner').notNull(),
    configuration: text('configuration').notNull(),
    status: text('status').notNull(),
    terminationReason: text('termination_reason'),
    rounds: integer('rounds').notNull().default(0),
    promptTokens: bigint('prompt_tokens', { mode: 'number' }).notNull().default(0),
    completionTokens: bigint('completion_tokens', { mode: 'number' }).notNull().default(0),
    estimatedCost: numeric('estimated_cost', { precision: 22, scale: 6, mode: 'number' })
      .notNull()
      .default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [
    index('runs_created_at_idx').on(t.createdAt.desc(), t.id.desc()),
    index('runs_owner_created_at_idx').on(t.owner, t.createdAt.desc(), t.id.desc()),
    check(
      'runs_status_known',
      sql`${t.status} in ('queued', 'running', 'waiting_for_approval', 'waiting_for_input', 'completed', 'failed', 'cancelled')`,
    ),
    check(
      'runs_termination_reason_known',
      sql`${t.terminationReason} in ('completed', 'max_iterations', 'budget_exhausted', 'policy_denied', 'approval_denied', 'provider_failed', 'cancelled', 'retries_exhausted', 'not_retryable', 'context_truncated')`,
    ),
    check(
      'runs_counters_not_negative',
      sql`${t.rounds} >= 0 and ${t.promptTokens} >= 0 and ${t.completionTokens} >= 0 and ${t.estimatedCost} >= 0`,
    ),
  ],
);

export const runSteps = pgTable(
  'run_steps',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    runId: bigint('run_id', { mode: 'number' })
      .notNull()
      .references(() => runs.id, { onDelete: 'cascade' }),
    sequence: integer('sequence').notNull(),
    kind: text('kind').notNull(),
    round: integer('round').notNull().default(0),
    durationMs: integer('duration_ms').notNull().default(0),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    toolName: text('tool_name'),
    server: text('server'),
    toolIsError: boolean('tool_is_error'),
    toolOutcome: text('tool_outcome'),
    payload: jsonb('payload').$type<JsonObject>().notNull().default({}),
    metadata: jsonb('metadata').$type<JsonObject>().notNull().default({}),
  },
  (t) => [
    uniqueIndex('run_steps_run_id_sequence_unique').on(t.runId, t.sequence),
    index('run_steps_occurred_at_idx').on(t.occurredAt),
    index('run_steps_tool_calls_idx').on(t.occurredAt).where(sql`kind = 'tool'`),
    index('run_steps_tool_calls_by_server_idx').on(t.server, t.occurredAt).where(sql`kind = 'tool'`),
    check(
      'run_steps_kind_known',
      sql`${t.kind} in ('request', 'llm', 'tool', 'tool_write', 'assembled', 'context', 'dropped', 'approval', 'input')`,
    ),
    check('run_steps_sequence_positive', sql`${t.sequence} > 0`),
    check('run_steps_round_not_negative', sql`${t.round} >= 0`),
    check('run_steps_duration_not_negative', sql`${t.durationMs} >= 0`),
    // SPEC 2.5, stated by the database as well as by the RunStep value object.
    check('run_steps_tool_outcome_known', sql`${t.toolOutcome} in ('ok', 'failed', 'cancelled')`),
    check('run_steps_tool_outcome_only_on_tool_steps', sql`${t.toolOutcome} is null or ${t.kind} = 'tool'`),
    check(
      'run_steps_tool_outcome_agrees_with_is_error',
      sql`${t.toolOutcome} is null or ${t.toolIsError} is not distinct from (${t.toolOutcome} <> 'ok')`,
    ),
  ],
);

export const stepRequests = pgTable(
  'step_requests',
  {
    runId: bigint('run_id', { mode: 'number' })
      .notNull()
      .references(() => runs.id, { onDelete: 'cascade' }),
    idempotencyKey: text('idempotency_key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    firstSequence: integer('first_sequence').notNull(),
    stepCount: integer('step_count').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'step_requests_pkey', columns: [t.runId, t.idempotencyKey] }),
    check('step_requests_steps_positive', sql`${t.firstSequence} > 0 and ${t.stepCount} >= 0`),
  ],
);

/**
 * Tool calls per UTC day, server and tool, by outcome, with a duration
 * histogram. Triggers on run_steps keep it exact (migrations/0005, 0008, 0011); '' stands
 * for a call with no server or tool name.
 */
export const toolOutcomeDaily = pgTable(
  'tool_outcome_daily',
  {
    day: date('day', { mode: 'string' }).notNull(),
    server: text('server').notNull(),
    toolName: text('tool_name').notNull(),
    ok: bigint('ok', { mode: 'number' }).notNull().default(0),
    failed: bigint('failed', { mode: 'number' }).notNull().default(0),
    cancelled: bigint('cancelled', { mode: 'number' }).notNull().default(0),
    /** Element b + 1 counts the calls in duration bucket b (migrations/0011). */
    durations: bigint('durations', { mode: 'number' })
      .array()
      .notNull()
      .default(sql.raw(`array_fill(0::bigint, ARRAY[${DURATION_BUCKETS}])`)),
  },
  (t) => [
    primaryKey({ name: 'tool_outcome_daily_pkey', columns: [t.day, t.server, t.toolName] }),
    index('tool_outcome_daily_server_idx').on(t.server, t.day),
    check(
      'tool_outcome_daily_durations_shape',
      sql`array_ndims(${t.durations}) = 1 and array_lower(${t.durations}, 1) = 1 and array_upper(${t.durations}, 1) = ${sql.raw(String(DURATION_BUCKETS))} and array_position(${t.durations}, null) is null`,
    ),
  ],
);

const durationsColumn = () =>
  bigint('durations', { mode: 'number' })
    .array()
    .notNull()
    .default(sql.raw(`array_fill(0::bigint, ARRAY[${DURATION_BUCKETS}])`));

/** Calls by outcome, which every rollup row counts. */
const callCountColumns = () => ({
  ok: bigint('ok', { mode: 'number' }).notNull().default(0),
  failed: bigint('failed', { mode: 'number' }).notNull().default(0),
  cancelled: bigint('cancelled', { mode: 'number' }).notNull().default(0),
});

/**
 * An index of a rollup's fields followed by its counts, so a range of it is
 * summed from the index alone (migrations/0036, 0038).
 */
const withCounts = (
  t: { ok: AnyPgColumn; failed: AnyPgColumn; cancelled: AnyPgColumn },
  ...fields: [AnyPgColumn, ...AnyPgColumn[]]
): [AnyPgColumn, ...AnyPgColumn[]] => [...fields, t.ok, t.failed, t.cancelled];

/** What a rollup row counts: calls by outcome and the duration histogram. */
const outcomeCountColumns = () => ({ ...callCountColumns(), durations: durationsColumn() });

/** The key of the rollups keyed by all four fields, after their time column. */
const everyKeyColumns = () => ({
  owner: text('owner').notNull(),
  configuration: text('configuration').notNull(),
  server: text('server').notNull(),
  toolName: text('tool_name').notNull(),
});

/**
 * The histogram of a rollup keyed by all four fields, in a table beside it
 * (migrations/0023): a row per key and duration bucket with calls.
 */
const durationBucketColumns = () => ({
  durationBucket: smallint('duration_bucket').notNull(),
  calls: bigint('calls', { mode: 'number' }).notNull().default(0),
});

const durationBucketRange = (name: string, bucket: AnyPgColumn) =>
  check(name, sql`${bucket} between 0 and ${sql.raw(String(DURATION_BUCKETS - 1))}`);

const durationsShape = (name: string, durations: AnyPgColumn) =>
  check(
    name,
    sql`array_ndims(${durations}) = 1 and array_lower(${durations}, 1) = 1 and array_upper(${durations}, 1) = ${sql.raw(String(DURATION_BUCKETS))} and array_position(${durations}, null) is null`,
  );

/** A weekly rollup's week is its first day, a Monday (ISO day of week 1), as WEEK buckets start. */
const startsOnMonday = (name: string, week: AnyPgColumn) =>
  check(name, sql`extract(isodow FROM ${week}) = 1`);

/**
 * Tool calls per UTC day, run owner, run configuration, server and tool
 * (migrations/0012): every grouping and every actor by whole days. The same
 * triggers keep it exact.
 */
export const toolOutcomeOwnerDaily = pgTable(
  'tool_outcome_owner_daily',
  {
    day: date('day', { mode: 'string' }).notNull(),
    ...everyKeyColumns(),
    ...callCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_daily_pkey',
      columns: [t.day, t.owner, t.configuration, t.server, t.toolName],
    }),
    // Each group's days one range of an index (migrations/0033), again led by configuration
    // (0034); each holds the counts, read without the table (0036).
    index('tool_outcome_owner_daily_group_idx').on(
      ...withCounts(t, t.owner, t.server, t.toolName, t.configuration, t.day),
    ),
    index('tool_outcome_owner_daily_configuration_group_idx').on(
      ...withCounts(t, t.configuration, t.server, t.toolName, t.day, t.owner),
    ),
  ],
);

/** The duration histograms of toolOutcomeOwnerDaily (migrations/0023). */
export const toolOutcomeOwnerDailyDurations = pgTable(
  'tool_outcome_owner_daily_durations',
  {
    day: date('day', { mode: 'string' }).notNull(),
    ...everyKeyColumns(),
    ...durationBucketColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_daily_durations_pkey',
      columns: [t.day, t.owner, t.configuration, t.server, t.toolName, t.durationBucket],
    }),
    index('tool_outcome_owner_daily_durations_group_idx').on(
      t.owner,
      t.server,
      t.toolName,
      t.configuration,
      t.day,
      t.durationBucket,
      t.calls,
    ),
    index('tool_outcome_owner_daily_durations_configuration_group_idx').on(
      t.configuration,
      t.server,
      t.toolName,
      t.day,
      t.owner,
      t.durationBucket,
      t.calls,
    ),
    // Owner x server x tool reads its range's days without each configuration's others (0037).
    index('tool_outcome_owner_daily_durations_tool_day_idx').on(
      t.owner,
      t.server,
      t.toolName,
      t.day,
      t.durationBucket,
      t.calls,
    ),
    durationBucketRange('tool_outcome_owner_daily_durations_bucket', t.durationBucket),
  ],
);

/** The same per UTC hour (migrations/0012): hourly buckets and days that start on another hour. */
export const toolOutcomeHourly = pgTable(
  'tool_outcome_hourly',
  {
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    ...everyKeyColumns(),
    ...callCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_hourly_pkey',
      columns: [t.hour, t.owner, t.configuration, t.server, t.toolName],
    }),
    index('tool_outcome_hourly_owner_idx').on(t.owner, t.hour),
  ],
);

/** The duration histograms of toolOutcomeHourly (migrations/0023). */
export const toolOutcomeHourlyDurations = pgTable(
  'tool_outcome_hourly_durations',
  {
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    ...everyKeyColumns(),
    ...durationBucketColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_hourly_durations_pkey',
      columns: [t.hour, t.owner, t.configuration, t.server, t.toolName, t.durationBucket],
    }),
    index('tool_outcome_hourly_durations_owner_idx').on(t.owner, t.hour),
    durationBucketRange('tool_outcome_hourly_durations_bucket', t.durationBucket),
  ],
);

/** Narrower rollups of the tool calls, each keyed by what some groupings need (migrations/0019). */
export const toolOutcomeServerDaily = pgTable(
  'tool_outcome_server_daily',
  {
    day: date('day').notNull(),
    server: text('server').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({ name: 'tool_outcome_server_daily_pkey', columns: [t.day, t.server] }),
    durationsShape('tool_outcome_server_daily_durations_shape', t.durations),
  ],
);

export const toolOutcomeOwnerConfigurationDaily = pgTable(
  'tool_outcome_owner_configuration_daily',
  {
    day: date('day').notNull(),
    owner: text('owner').notNull(),
    configuration: text('configuration').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_configuration_daily_pkey',
      columns: [t.day, t.owner, t.configuration],
    }),
    index('tool_outcome_owner_configuration_daily_owner_idx').on(t.owner, t.day),
    durationsShape('tool_outcome_owner_configuration_daily_durations_shape', t.durations),
  ],
);

export const toolOutcomeOwnerToolDaily = pgTable(
  'tool_outcome_owner_tool_daily',
  {
    day: date('day').notNull(),
    owner: text('owner').notNull(),
    toolName: text('tool_name').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({ name: 'tool_outcome_owner_tool_daily_pkey', columns: [t.day, t.owner, t.toolName] }),
    index('tool_outcome_owner_tool_daily_owner_idx').on(t.owner, t.day),
    durationsShape('tool_outcome_owner_tool_daily_durations_shape', t.durations),
  ],
);

export const toolOutcomeOwnerConfigurationServerDaily = pgTable(
  'tool_outcome_owner_configuration_server_daily',
  {
    day: date('day').notNull(),
    owner: text('owner').notNull(),
    configuration: text('configuration').notNull(),
    server: text('server').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_configuration_server_daily_pkey',
      columns: [t.day, t.owner, t.configuration, t.server],
    }),
    index('tool_outcome_owner_configuration_server_daily_owner_idx').on(t.owner, t.day),
    durationsShape('tool_outcome_owner_configuration_server_daily_durations_shape', t.durations),
  ],
);

export const toolOutcomeOwnerConfigurationWeekly = pgTable(
  'tool_outcome_owner_configuration_weekly',
  {
    week: date('week').notNull(),
    owner: text('owner').notNull(),
    configuration: text('configuration').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_configuration_weekly_pkey',
      columns: [t.week, t.owner, t.configuration],
    }),
    startsOnMonday('tool_outcome_owner_configuration_weekly_monday', t.week),
    index('tool_outcome_owner_configuration_weekly_owner_idx').on(t.owner, t.week),
    durationsShape('tool_outcome_owner_configuration_weekly_durations_shape', t.durations),
  ],
);

export const toolOutcomeOwnerConfigurationServerWeekly = pgTable(
  'tool_outcome_owner_configuration_server_weekly',
  {
    week: date('week').notNull(),
    owner: text('owner').notNull(),
    configuration: text('configuration').notNull(),
    server: text('server').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_configuration_server_weekly_pkey',
      columns: [t.week, t.owner, t.configuration, t.server],
    }),
    startsOnMonday('tool_outcome_owner_configuration_server_weekly_monday', t.week),
    index('tool_outcome_owner_configuration_server_weekly_group_idx').on(
      ...withCounts(t, t.owner, t.configuration, t.server, t.week),
    ),
    durationsShape('tool_outcome_owner_configuration_server_weekly_durations_shape', t.durations),
  ],
);

/**
 * Tool calls per week by owner; by owner and server; by configuration and
 * server (migrations/0021): those groupings over weeks read a row per key and
 * week, not one per value of the other fields of a wider key.
 */
export const toolOutcomeOwnerWeekly = pgTable(
  'tool_outcome_owner_weekly',
  {
    week: date('week').notNull(),
    owner: text('owner').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({ name: 'tool_outcome_owner_weekly_pkey', columns: [t.week, t.owner] }),
    startsOnMonday('tool_outcome_owner_weekly_monday', t.week),
    index('tool_outcome_owner_weekly_owner_idx').on(t.owner, t.week),
    durationsShape('tool_outcome_owner_weekly_durations_shape', t.durations),
  ],
);

export const toolOutcomeOwnerServerWeekly = pgTable(
  'tool_outcome_owner_server_weekly',
  {
    week: date('week').notNull(),
    owner: text('owner').notNull(),
    server: text('server').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({ name: 'tool_outcome_owner_server_weekly_pkey', columns: [t.week, t.owner, t.server] }),
    startsOnMonday('tool_outcome_owner_server_weekly_monday', t.week),
    // Counts too: a range of weeks read without the histograms (0038).
    index('tool_outcome_owner_server_weekly_group_idx').on(...withCounts(t, t.owner, t.server, t.week)),
    durationsShape('tool_outcome_owner_server_weekly_durations_shape', t.durations),
  ],
);

export const toolOutcomeConfigurationServerWeekly = pgTable(
  'tool_outcome_configuration_server_weekly',
  {
    week: date('week').notNull(),
    configuration: text('configuration').notNull(),
    server: text('server').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_configuration_server_weekly_pkey',
      columns: [t.week, t.configuration, t.server],
    }),
    startsOnMonday('tool_outcome_configuration_server_weekly_monday', t.week),
    index('tool_outcome_configuration_server_weekly_group_idx').on(
      ...withCounts(t, t.configuration, t.server, t.week),
    ),
    durationsShape('tool_outcome_configuration_server_weekly_durations_shape', t.durations),
  ],
);

/** Tool calls per week (from Monday, 00:00 UTC), run owner and tool (migrations/0024). */
export const toolOutcomeOwnerToolWeekly = pgTable(
  'tool_outcome_owner_tool_weekly',
  {
    week: date('week').notNull(),
    owner: text('owner').notNull(),
    toolName: text('tool_name').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({ name: 'tool_outcome_owner_tool_weekly_pkey', columns: [t.week, t.owner, t.toolName] }),
    index('tool_outcome_owner_tool_weekly_owner_idx').on(t.owner, t.week),
    startsOnMonday('tool_outcome_owner_tool_weekly_monday', t.week),
    durationsShape('tool_outcome_owner_tool_weekly_durations_shape', t.durations),
  ],
);

/** Tool calls per week (from Monday, 00:00 UTC), MCP server and tool (migrations/0025). */
export const toolOutcomeServerToolWeekly = pgTable(
  'tool_outcome_server_tool_weekly',
  {
    week: date('week').notNull(),
    server: text('server').notNull(),
    toolName: text('tool_name').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({ name: 'tool_outcome_server_tool_weekly_pkey', columns: [t.week, t.server, t.toolName] }),
    startsOnMonday('tool_outcome_server_tool_weekly_monday', t.week),
    durationsShape('tool_outcome_server_tool_weekly_durations_shape', t.durations),
  ],
);

/** Tool calls per week (from Monday, 00:00 UTC), configuration and tool (migrations/0026). */
export const toolOutcomeConfigurationToolWeekly = pgTable(
  'tool_outcome_configuration_tool_weekly',
  {
    week: date('week').notNull(),
    configuration: text('configuration').notNull(),
    toolName: text('tool_name').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_configuration_tool_weekly_pkey',
      columns: [t.week, t.configuration, t.toolName],
    }),
    startsOnMonday('tool_outcome_configuration_tool_weekly_monday', t.week),
    durationsShape('tool_outcome_configuration_tool_weekly_durations_shape', t.durations),
  ],
);

/** Tool calls per week (from Monday, 00:00 UTC), owner, configuration and tool (migrations/0026). */
export const toolOutcomeOwnerConfigurationToolWeekly = pgTable(
  'tool_outcome_owner_configuration_tool_weekly',
  {
    week: date('week').notNull(),
    owner: text('owner').notNull(),
    configuration: text('configuration').notNull(),
    toolName: text('tool_name').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_configuration_tool_weekly_pkey',
      columns: [t.week, t.owner, t.configuration, t.toolName],
    }),
    startsOnMonday('tool_outcome_owner_configuration_tool_weekly_monday', t.week),
    index('tool_outcome_owner_configuration_tool_weekly_group_idx').on(
      ...withCounts(t, t.owner, t.configuration, t.toolName, t.week),
    ),
    durationsShape('tool_outcome_owner_configuration_tool_weekly_durations_shape', t.durations),
  ],
);

/**
 * Tool calls per week (from Monday, 00:00 UTC), run owner, run configuration,
 * server and tool, counts only (migrations/0035): the whole weeks of a
 * ranking's first pass that no narrower weekly rollup answers.
 */
export const toolOutcomeWeekly = pgTable(
  'tool_outcome_weekly',
  {
    week: date('week', { mode: 'string' }).notNull(),
    ...everyKeyColumns(),
    ...callCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_weekly_pkey',
      columns: [t.week, t.owner, t.configuration, t.server, t.toolName],
    }),
    startsOnMonday('tool_outcome_weekly_monday', t.week),
  ],
);

/** An index on the calls a rollup row counts, to rank its rows by them (migrations/0029). */
const callsIndex = (name: string, t: { ok: AnyPgColumn; failed: AnyPgColumn; cancelled: AnyPgColumn }) =>
  index(name).using('btree', sql`(${t.ok} + ${t.failed} + ${t.cancelled})`);

/** A key column by code point (`collate "C"`), the order groups rank by key. */
const byCodePoint = (column: AnyPgColumn) => sql`${column} collate "C"`;

/**
 * An index on a rollup's key in the order groups rank by key (server, tool,
 * configuration, owner; names by code point), to walk its first groups
 * (migrations/0031).
 */
const keyOrderIndex = (table: string, first: AnyPgColumn, ...rest: AnyPgColumn[]) =>
  index(`${table}_key_order_idx`).using('btree', byCodePoint(first), ...rest.map(byCodePoint));

/**
 * Indexes in the order of a ranking by failure rate and by failures,
 * descending (the rate as the domain computes it, none lowest), then by key
 * (migrations/0032).
 */
const failureOrderIndexes = (
  table: string,
  t: { ok: AnyPgColumn; failed: AnyPgColumn },
  ...keys: AnyPgColumn[]
) => [
  index(`${table}_fail_rate_idx`).using(
    'btree',
    sql`(coalesce(${t.failed}::float8 / nullif(${t.ok}::float8 + ${t.failed}::float8, 0), '-Infinity'::float8)) desc`,
    ...keys.map(byCodePoint),
  ),
  index(`${table}_failures_idx`).using('btree', sql`(${t.failed}::float8) desc`, ...keys.map(byCodePoint)),
];

/**
 * Tool calls written and not folded into the rollups yet, signed, per hour,
 * key and duration bucket: each statement on run_steps appends its own
 * (migrations/0039), and the folder moves them into every rollup.
 */
export const toolCallChanges = pgTable('tool_call_changes', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  hour: timestamp('hour', { withTimezone: true }).notNull(),
  ...everyKeyColumns(),
  b: smallint('b').notNull(),
  ok: bigint('ok', { mode: 'number' }).notNull(),
  failed: bigint('failed', { mode: 'number' }).notNull(),
  cancelled: bigint('cancelled', { mode: 'number' }).notNull(),
});

/** Tool calls of all time by server, tool, owner and configuration: their counts (migrations/0027). */
export const toolOutcomeAllTime = pgTable(
  'tool_outcome_all_time',
  { ...everyKeyColumns(), ...callCountColumns() },
  (t) => [
    primaryKey({
      name: 'tool_outcome_all_time_pkey',
      columns: [t.server, t.toolName, t.owner, t.configuration],
    }),
    callsIndex('tool_outcome_all_time_calls_idx', t),
    keyOrderIndex('tool_outcome_all_time', t.server, t.toolName, t.configuration, t.owner),
    ...failureOrderIndexes('tool_outcome_all_time', t, t.server, t.toolName, t.configuration, t.owner),
  ],
);

/** The duration histograms of the calls of tool_outcome_all_time, a row per key (migrations/0027). */
export const toolOutcomeAllTimeDurations = pgTable(
  'tool_outcome_all_time_durations',
  { ...everyKeyColumns(), durations: durationsColumn() },
  (t) => [
    primaryKey({
      name: 'tool_outcome_all_time_durations_pkey',
      columns: [t.server, t.toolName, t.owner, t.configuration],
    }),
    durationsShape('tool_outcome_all_time_durations_shape', t.durations),
  ],
);

/** Tool calls of all time by server, tool and owner: counts only, a row per key (migrations/0028). */
export const toolOutcomeOwnerServerToolAllTime = pgTable(
  'tool_outcome_owner_server_tool_all_time',
  {
    server: text('server').notNull(),
    toolName: text('tool_name').notNull(),
    owner: text('owner').notNull(),
    ...callCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_server_tool_all_time_pkey',
      columns: [t.server, t.toolName, t.owner],
    }),
    callsIndex('tool_outcome_owner_server_tool_all_time_calls_idx', t),
    keyOrderIndex('tool_outcome_owner_server_tool_all_time', t.server, t.toolName, t.owner),
    ...failureOrderIndexes('tool_outcome_owner_server_tool_all_time', t, t.server, t.toolName, t.owner),
  ],
);

/** Tool calls of all time by server, tool and configuration: counts only, a row per key (migrations/0028). */
export const toolOutcomeConfigurationServerToolAllTime = pgTable(
  'tool_outcome_configuration_server_tool_all_time',
  {
    server: text('server').notNull(),
    toolName: text('tool_name').notNull(),
    configuration: text('configuration').notNull(),
    ...callCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_configuration_server_tool_all_time_pkey',
      columns: [t.server, t.toolName, t.configuration],
    }),
    callsIndex('tool_outcome_configuration_server_tool_all_time_calls_idx', t),
    keyOrderIndex('tool_outcome_configuration_server_tool_all_time', t.server, t.toolName, t.configuration),
    ...failureOrderIndexes(
      'tool_outcome_configuration_server_tool_all_time',
      t,
      t.server,
      t.toolName,
      t.configuration,
    ),
  ],
);

/** Tool calls of all time by owner, configuration and server: counts only, a row per key (migrations/0028). */
export const toolOutcomeOwnerConfigurationServerAllTime = pgTable(
  'tool_outcome_owner_configuration_server_all_time',
  {
    owner: text('owner').notNull(),
    configuration: text('configuration').notNull(),
    server: text('server').notNull(),
    ...callCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_configuration_server_all_time_pkey',
      columns: [t.owner, t.configuration, t.server],
    }),
    callsIndex('tool_outcome_owner_configuration_server_all_time_calls_idx', t),
    keyOrderIndex('tool_outcome_owner_configuration_server_all_time', t.server, t.configuration, t.owner),
  ],
);

/** Tool calls of all time by owner, configuration and tool: counts only, a row per key (migrations/0028). */
export const toolOutcomeOwnerConfigurationToolAllTime = pgTable(
  'tool_outcome_owner_configuration_tool_all_time',
  {
    owner: text('owner').notNull(),
    configuration: text('configuration').notNull(),
    toolName: text('tool_name').notNull(),
    ...callCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_configuration_tool_all_time_pkey',
      columns: [t.owner, t.configuration, t.toolName],
    }),
    callsIndex('tool_outcome_owner_configuration_tool_all_time_calls_idx', t),
    keyOrderIndex('tool_outcome_owner_configuration_tool_all_time', t.toolName, t.configuration, t.owner),
  ],
);

/** Tool calls of all time by owner and server: counts only, a row per key (migrations/0030). */
export const toolOutcomeOwnerServerAllTime = pgTable(
  'tool_outcome_owner_server_all_time',
  {
    owner: text('owner').notNull(),
    server: text('server').notNull(),
    ...callCountColumns(),
  },
  (t) => [
    primaryKey({ name: 'tool_outcome_owner_server_all_time_pkey', columns: [t.owner, t.server] }),
    callsIndex('tool_outcome_owner_server_all_time_calls_idx', t),
    keyOrderIndex('tool_outcome_owner_server_all_time', t.server, t.owner),
  ],
);

/** Tool calls of all time by configuration and server: counts only, a row per key (migrations/0030). */
export const toolOutcomeConfigurationServerAllTime = pgTable(
  'tool_outcome_configuration_server_all_time',
  {
    configuration: text('configuration').notNull(),
    server: text('server').notNull(),
    ...callCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_configuration_server_all_time_pkey',
      columns: [t.configuration, t.server],
    }),
    callsIndex('tool_outcome_configuration_server_all_time_calls_idx', t),
    keyOrderIndex('tool_outcome_configuration_server_all_time', t.server, t.configuration),
  ],
);

export const toolOutcomeServerHourly = pgTable(
  'tool_outcome_server_hourly',
  {
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    server: text('server').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({ name: 'tool_outcome_server_hourly_pkey', columns: [t.hour, t.server] }),
    durationsShape('tool_outcome_server_hourly_durations_shape', t.durations),
  ],
);

export const toolOutcomeOwnerConfigurationHourly = pgTable(
  'tool_outcome_owner_configuration_hourly',
  {
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    owner: text('owner').notNull(),
    configuration: text('configuration').notNull(),
    ...outcomeCountColumns(),
  },
  (t) => [
    primaryKey({
      name: 'tool_outcome_owner_configuration_hourly_pkey',
      columns: [t.hour, t.owner, t.configuration],
    }),
    index('tool_outcome_owner_configuration_hourly_owner_idx').on(t.owner, t.hour),
    durationsShape('tool_outcome_owner_configuration_hourly_durations_shape', t.durations),
  ],
);

/** API keys, stored as SHA-256 hashes (migrations/0006). */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    actor: text('actor').notNull(),
    keyHash: text('key_hash').notNull().unique('api_keys_key_hash_unique'),
    keyPrefix: text('key_prefix').notNull(),
    permissions: text('permissions').array().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [
    check(
      'api_keys_permissions_known',
      sql`${t.permissions} <@ ARRAY['read_own_runs', 'read_all_runs', 'record', 'cancel_own_runs', 'cancel_any_run', 'read_payloads', 'manage_keys', 'manage_servers', 'approve_runs']::text[]`,
    ),
  ],
);

/** MCP servers tools can be called on (migrations/0007, 0009). */
export const mcpServers = pgTable(
  'mcp_servers',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    identifier: text('identifier').notNull().unique('mcp_servers_identifier_unique'),
    transport: text('transport').notNull(),
    url: text('url'),
    command: text('command'),
    args: text('args').array().notNull().default(sql`'{}'::text[]`),
    /** Header references (migrations/0009): values like `Bearer env:NAME`, never the secret. */
    headers: jsonb('headers').$type<McpHeader[]>().notNull().default(sql`'[]'::jsonb`),
    lastContactAt: timestamp('last_contact_at', { withTimezone: true }),
    lastLatencyMs: integer('last_latency_ms'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('mcp_servers_transport_known', sql`${t.transport} in ('streamable-http', 'stdio')`),
    check(
      'mcp_servers_endpoint',
      sql`(${t.transport} = 'streamable-http') = (${t.url} is not null) and (${t.transport} = 'stdio') = (${t.command} is not null)`,
    ),
    check('mcp_servers_headers_array', sql`jsonb_typeof(${t.headers}) = 'array'`),
    check('mcp_servers_stdio_headers', sql`${t.transport} = 'streamable-http' or ${t.headers} = '[]'::jsonb`),
  ],
);

/**
 * Spans received over OTLP (migrations/0017): a re-sent span is known by its
 * trace and span id, scoped to the sender, and stored once.
 */
export const otlpSpans = pgTable(
  'otlp_spans',
  {
    owner: text('owner').notNull(),
    traceId: text('trace_id').notNull(),
    spanId: text('span_id').notNull(),
    runId: bigint('run_id', { mode: 'number' })
      .notNull()
      .references(() => runs.id, { onDelete: 'cascade' }),
    /** The step the span became; null when it made none. */
    sequence: integer('sequence'),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
    /** Its parent's span id (migrations/0043); null for a root. */
    parentSpanId: text('parent_span_id'),
    /** For a span that became a tool step: the call's tool span (`tool`) or its MCP request (`mcp_call`). */
    callRole: text('call_role'),
    /** For a call span (migrations/0044): its tool's name and its times, to tie it to the call's other span by name and time. */
    toolName: text('tool_name'),
    startedUnixNano: bigint('started_unix_nano', { mode: 'bigint' }),
    endedUnixNano: bigint('ended_unix_nano', { mode: 'bigint' }),
  },
  (t) => [
    uniqueIndex('otlp_spans_owner_trace_span_unique').on(t.owner, t.traceId, t.spanId),
    index('otlp_spans_run_id_idx').on(t.runId),
    index('otlp_spans_call_tool_idx')
      .on(t.owner, t.traceId, t.toolName, t.callRole, t.startedUnixNano)
      .where(sql`${t.toolName} IS NOT NULL`),
    index('otlp_spans_parent_idx')
      .on(t.owner, t.traceId, t.parentSpanId)
      .where(sql`${t.parentSpanId} IS NOT NULL`),
    check('otlp_spans_ids_hex', sql`${t.traceId} ~ '^[0-9a-f]{32}$' and ${t.spanId} ~ '^[0-9a-f]{16}$'`),
    check('otlp_spans_call_role_known', sql`${t.callRole} IN ('tool', 'mcp_call')`),
    check(
      'otlp_spans_call_times',
      sql`${t.toolName} IS NULL OR (${t.callRole} IS NOT NULL AND ${t.startedUnixNano} IS NOT NULL AND ${t.endedUnixNano} >= ${t.startedUnixNano})`,
    ),
  ],
);

/**
 * What a run asks a person (SPEC 13): an approval of a proposed tool call or
 * input against a JSON Schema, and how it stands (migrations/0041). The
 * request and its decision are also steps of the run's timeline.
 */
export const humanRequests = pgTable(
  'human_requests',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    uuid: uuid('uuid').notNull().unique('human_requests_uuid_unique'),
    runId: bigint('run_id', { mode: 'number' })
      .notNull()
      .references(() => runs.id, { onDelete: 'cascade' }),
    kind: text('kind').notNull(),
    source: text('source').notNull(),
    requestedBy: text('requested_by').notNull(),
    requestedAt: timestamp('requested_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    toolName: text('tool_name'),
    server: text('server'),
    arguments: jsonb('arguments'),
    reason: text('reason'),
    prompt: text('prompt'),
    schema: jsonb('schema'),
    idempotencyKey: text('idempotency_key'),
    fingerprint: text('fingerprint').notNull().default(''),
    state: text('state').notNull().default('open'),
    decidedBy: text('decided_by'),
    decidedAt: timestamp('decided_at', { withTimezone: true }),
    comment: text('comment'),
    answer: jsonb('answer'),
  },
  (t) => [
    unique('human_requests_run_key_unique').on(t.runId, t.idempotencyKey),
    check('human_requests_kind_known', sql`${t.kind} in ('approval', 'input')`),
    check('human_requests_source_known', sql`${t.source} in ('api', 'mcp')`),
    check(
      'human_requests_state_known',
      sql`${t.state} in ('open', 'approved', 'denied', 'answered', 'declined', 'expired', 'cancelled')`,
    ),
    check(
      'human_requests_state_of_kind',
      sql`(${t.state} not in ('approved', 'denied') or ${t.kind} = 'approval') and (${t.state} not in ('answered', 'declined') or ${t.kind} = 'input')`,
    ),
    check('human_requests_decided_when_closed', sql`(${t.state} = 'open') = (${t.decidedAt} is null)`),
    check('human_requests_answer_only_answered', sql`${t.answer} is null or ${t.state} = 'answered'`),
    check(
      'human_requests_fields_of_kind',
      sql`(${t.kind} = 'approval' and ${t.toolName} is not null and ${t.prompt} is null and ${t.schema} is null) or (${t.kind} = 'input' and ${t.prompt} is not null and ${t.schema} is not null)`,
    ),
    index('human_requests_open_idx').on(t.requestedAt, t.id).where(sql`state = 'open'`),
    index('human_requests_run_idx').on(t.runId, t.requestedAt),
  ],
);

export const schema = {
  runs,
  runSteps,
  stepRequests,
  toolOutcomeDaily,
  apiKeys,
  mcpServers,
  otlpSpans,
  humanRequests,
};

/**
 * Secrets of the service itself (migrations/0042), each made once on first
 * use: `otlp_run_ids` keys the run ids derived from OTLP trace and
 * conversation ids, so that no other owner can compute them.
 */
export const serviceSecrets = pgTable(
  'service_secrets',
  {
    name: text('name').primaryKey(),
    value: text('value').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check('service_secrets_value_long', sql`length(${t.value}) >= 32`)],
);
