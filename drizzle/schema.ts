import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  json,
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
    // The boolean-first rule (docs/architecture.md), stated by the database as well as by the RunStep value object.
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
 * Tool calls written and not folded into the rollups yet, signed, per hour,
 * key and duration bucket: each statement on run_steps appends its own
 * (migrations/0039), and the folder moves them into every rollup.
 */
export const toolCallChanges = pgTable('tool_call_changes', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  hour: timestamp('hour', { withTimezone: true }).notNull(),
  owner: text('owner').notNull(),
  configuration: text('configuration').notNull(),
  server: text('server').notNull(),
  toolName: text('tool_name').notNull(),
  b: smallint('b').notNull(),
  ok: bigint('ok', { mode: 'number' }).notNull(),
  failed: bigint('failed', { mode: 'number' }).notNull(),
  cancelled: bigint('cancelled', { mode: 'number' }).notNull(),
});

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
 * What a run asks a person (docs/architecture.md, a human in the loop): an approval of a proposed tool call or
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
    arguments: json('arguments'),
    reason: text('reason'),
    prompt: text('prompt'),
    schema: json('schema'),
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
