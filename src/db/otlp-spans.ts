import { type SQL, sql } from 'drizzle-orm';
import type { RunRollups } from '../domain/run-rollups.ts';
import type { RunStatus, TerminationReason } from '../domain/run-status.ts';
import type { RunStep } from '../domain/run-step.ts';
import { type Database, selectRows } from './connection.ts';
import { sqlState } from './faults.ts';
import { runNoticeSql } from './notices.ts';
import { type RunInsert, storeStepsSql, type Transaction } from './run-writes.ts';
import { textArrayLiteral } from './stats-sql.ts';

/** Spans received over OTLP (migrations/0017): which are stored, and which run a trace went to. SQL only. */

export interface StoredSpan {
  traceId: string;
  spanId: string;
  /** The step it became; null when it made none. */
  sequence: number | null;
  parentSpanId?: string | null;
  /** For a span that became a tool step: the call's tool span or its MCP request. */
  callRole?: 'tool' | 'mcp_call' | null;
  /** For a call span: its tool's name and its times. */
  call?: { toolName: string; startUnixNano: bigint; endUnixNano: bigint } | null;
}

/** A call span now arriving, as the check for its call's other span needs it. */
export interface ArrivingCall {
  traceId: string;
  spanId: string;
  callRole: 'tool' | 'mcp_call';
  /** Its parent when that did not come in the same request; null otherwise. */
  parentApart: string | null;
  toolName: string;
  startUnixNano: bigint;
  endUnixNano: bigint;
}

const bigintArray = (values: readonly bigint[]) => `{${values.join(',')}}`;

/**
 * What a locked run already holds of a group of spans arriving for it, in one
 * statement: read after the run's lock is taken, in a statement of its own,
 * so a retry racing the first delivery sees what that one committed (a
 * statement that waited for the lock sees the snapshot it started with).
 * - `stored`: which of the spans the sender has sent before, as `traceId/spanId`;
 * - `recordedApart`: the arriving call spans whose call an earlier request
 *   already recorded as a step: an MCP request whose tool span (its parent)
 *   is a stored step; a tool span whose MCP request (its child) is one; and
 *   the two spans of one call recorded apart (OpenLLMetry's MCP request under
 *   its session span): the same tool in the same trace, the MCP request within
 *   the tool span's time. Each by an index: the nearest candidate in start
 *   time, never a scan of the trace;
 * - `lastSequence`: the run's last stored step;
 * - `keyActive`: whether the key given is active (a remembered key's check, see Scope).
 */
export async function heldOfArriving(
  tx: Transaction,
  owner: string,
  runId: number,
  spans: ReadonlyArray<{ traceId: string; spanId: string }>,
  calls: readonly ArrivingCall[],
  /** A key to check in the same statement: `keyActive` says whether it is active now. */
  keyHash: string | null = null,
): Promise<{ stored: Set<string>; recordedApart: Set<string>; lastSequence: number; keyActive: boolean }> {
  const parts = [
    sql`select 'last' as what, coalesce(max(sequence), 0)::text as key from run_steps where run_id = ${runId}`,
  ];
  if (keyHash !== null)
    parts.push(sql`select 'key', '' from api_keys where key_hash = ${keyHash} and revoked_at is null`);
  if (spans.length > 0) {
    const traceIds = [...new Set(spans.map((s) => s.traceId))];
    const spanIds = [...new Set(spans.map((s) => s.spanId))];
    // Each list as one array parameter: 10,000 spans are two parameters, not 10,000 to build and send.
    parts.push(sql`select 'stored', trace_id || '/' || span_id from otlp_spans
                    where owner = ${owner} and trace_id = any(${textArrayLiteral(traceIds)}::text[])
                      and span_id = any(${textArrayLiteral(spanIds)}::text[])`);
  }
  if (calls.length > 0) parts.push(sql`(${recordedApartSql(owner, calls)})`);
  const rows = await selectRows<{ what: 'last' | 'key' | 'stored' | 'apart'; key: string }>(
    tx,
    sql.join(parts, sql` union all `),
  );
  const held = {
    stored: new Set<string>(),
    recordedApart: new Set<string>(),
    lastSequence: 0,
    keyActive: keyHash === null,
  };
  for (const { what, key } of rows) {
    if (what === 'last') held.lastSequence = Number(key);
    else if (what === 'key') held.keyActive = true;
    else (what === 'stored' ? held.stored : held.recordedApart).add(key);
  }
  return held;
}

/** The statement of heldOfArriving's `recordedApart`: each arriving call span of those that qualify, `apart` and its key. */
function recordedApartSql(owner: string, calls: readonly ArrivingCall[]) {
  return sql`
    with x(t, s, r, p, n, b, e) as (
      select * from unnest(${textArrayLiteral(calls.map((c) => c.traceId))}::text[],
                           ${textArrayLiteral(calls.map((c) => c.spanId))}::text[],
                           ${textArrayLiteral(calls.map((c) => c.callRole))}::text[],
                           ${textArrayLiteral(calls.map((c) => c.parentApart ?? ''))}::text[],
                           ${textArrayLiteral(calls.map((c) => c.toolName))}::text[],
                           ${bigintArray(calls.map((c) => c.startUnixNano))}::bigint[],
                           ${bigintArray(calls.map((c) => c.endUnixNano))}::bigint[]))
    select 'apart', x.t || '/' || x.s from x
     where (x.r = 'mcp_call' and exists (
              select 1 from otlp_spans o
               where o.owner = ${owner} and o.trace_id = x.t and o.span_id = x.p
                 and o.call_role is not null and o.sequence is not null))
        or (x.r = 'tool' and exists (
              select 1 from otlp_spans o
               where o.owner = ${owner} and o.trace_id = x.t and o.parent_span_id = x.s
                 and o.call_role = 'mcp_call' and o.sequence is not null))
        or (x.r = 'tool' and exists (
              select 1 from (select o.ended_unix_nano, o.sequence from otlp_spans o
                              where o.owner = ${owner} and o.trace_id = x.t and o.tool_name = x.n
                                and o.call_role = 'mcp_call' and o.started_unix_nano >= x.b
                              order by o.started_unix_nano limit 1) first_request
               where first_request.ended_unix_nano <= x.e and first_request.sequence is not null))
        or (x.r = 'mcp_call' and exists (
              select 1 from (select o.ended_unix_nano, o.sequence from otlp_spans o
                              where o.owner = ${owner} and o.trace_id = x.t and o.tool_name = x.n
                                and o.call_role = 'tool' and o.started_unix_nano <= x.b
                              order by o.started_unix_nano desc limit 1) last_call
               where last_call.ended_unix_nano >= x.e and last_call.sequence is not null))`;
}

/** The run each of these traces already went to (by the sender's spans), by trace id: uuid of the run. */
export async function runsOfTraces(
  db: Database,
  owner: string,
  traceIds: readonly string[],
): Promise<Map<string, string>> {
  if (traceIds.length === 0) return new Map();
  const [row] = await selectRows<{ known: [string, string][] }>(
    db,
    sql`select (${knownTracesSql(owner, traceIds)}) as known`,
  );
  return new Map(row?.known ?? []);
}

/** runsOfTraces' answer as one JSON value, pairs of trace id and run uuid: a statement, or a part of one. */
function knownTracesSql(owner: string, traceIds: readonly string[]): SQL {
  return sql`select coalesce(json_agg(json_build_array(k.trace_id, k.uuid)), '[]'::json)
               from (select distinct o.trace_id, r.uuid from otlp_spans o join runs r on r.id = o.run_id
                      where o.owner = ${owner} and o.trace_id = any(${textArrayLiteral(traceIds)}::text[])) as k`;
}

/**
 * The statement that records spans as stored, in the run's transaction; the unique index refuses a span
 * stored twice. The run is its id, or the rows of a part of the same statement that inserts it (see storeStepsSql).
 */
export function insertSpansSql(
  owner: string,
  run: number | { part: string },
  spans: readonly StoredSpan[],
): SQL {
  const [runId, from] =
    typeof run === 'number' ? [sql`${run}`, sql``] : [sql.raw(`${run.part}.id`), sql.raw(`${run.part}, `)];
  // Parallel arrays unnested: three parameters for any number of spans (a row of parameters each took
  // hundreds of milliseconds of the event loop to build for 10,000 spans).
  const sequences = `{${spans.map((span) => (span.sequence === null ? 'NULL' : String(span.sequence))).join(',')}}`;
  const optional = (value: string | null | undefined) => value ?? '';
  const nanos = (pick: (call: NonNullable<StoredSpan['call']>) => bigint) =>
    `{${spans.map((span) => (span.call ? String(pick(span.call)) : 'NULL')).join(',')}}`;
  return sql`
    insert into otlp_spans (owner, trace_id, span_id, run_id, sequence, parent_span_id, call_role,
                            tool_name, started_unix_nano, ended_unix_nano)
    select ${owner}, t, s, ${runId}, q, nullif(p, ''), nullif(c, ''), nullif(n, ''), b, e
      from ${from}unnest(${textArrayLiteral(spans.map((span) => span.traceId))}::text[],
                  ${textArrayLiteral(spans.map((span) => span.spanId))}::text[],
                  ${sequences}::int[],
                  ${textArrayLiteral(spans.map((span) => optional(span.parentSpanId)))}::text[],
                  ${textArrayLiteral(spans.map((span) => optional(span.callRole)))}::text[],
                  ${textArrayLiteral(spans.map((span) => optional(span.call?.toolName)))}::text[],
                  ${nanos((call) => call.startUnixNano)}::bigint[],
                  ${nanos((call) => call.endUnixNano)}::bigint[]) as x(t, s, q, p, c, n, b, e)`;
}

/** A run new to a group of spans, as `insertNewSpanRun` inserts it. */
export interface NewSpanRun {
  run: RunInsert;
  /** Its steps' totals; null without steps. */
  rollups: RunRollups | null;
  /** Its end, from its root span; null while it runs. */
  ending: { status: RunStatus; reason: TerminationReason; finishedAt: Date } | null;
  /** Every trace of the group: none may have a span stored by this sender. */
  traceIds: readonly string[];
  steps: readonly RunStep[];
  records: readonly StoredSpan[];
  /** A remembered key, checked active in the same statement; null: checked already. */
  keyHash: string | null;
  /** Whether the statement sends the run's live notice (delivered at commit). */
  announce: boolean;
}

/**
 * A group of spans whose traces the sender never sent, written as a new run
 * in one statement (its own transaction): the run inserted with its totals
 * and end, unless it is there already, or a span of its traces is stored, or
 * the key is no longer active; then its steps and span records, all or
 * nothing. `inserted` false: nothing written, and `known` is what
 * runsOfTraces answers for the traces, read in the same statement (null when
 * it could not be: a delivery of the same spans committing meanwhile made the
 * statement fail on the spans' unique index).
 */
export async function insertNewSpanRun(
  db: Database,
  write: NewSpanRun,
): Promise<{ inserted: boolean; keyActive: boolean; known: Map<string, string> | null }> {
  const { run, rollups, ending } = write;
  const keyActive =
    write.keyHash === null
      ? sql`true`
      : sql`exists (select 1 from api_keys where key_hash = ${write.keyHash} and revoked_at is null)`;
  const parts = [
    sql`fresh as (
      insert into runs (uuid, owner, configuration, status, termination_reason, rounds, prompt_tokens,
                        completion_tokens, estimated_cost, created_at, started_at, finished_at)
      select ${run.uuid}::uuid, ${run.owner}, ${run.configuration}, ${ending?.status ?? run.status},
             ${ending?.reason ?? null}, ${rollups?.rounds ?? 0}::int, ${rollups?.promptTokens ?? 0}::bigint,
             ${rollups?.completionTokens ?? 0}::bigint, ${rollups?.estimatedCost ?? 0}::numeric,
             ${run.createdAt.toISOString()}::timestamptz, ${run.startedAt?.toISOString() ?? null}::timestamptz,
             ${ending?.finishedAt.toISOString() ?? null}::timestamptz
       where ${keyActive}
         and not exists (select 1 from otlp_spans
                          where owner = ${run.owner} and trace_id = any(${textArrayLiteral(write.traceIds)}::text[]))
      on conflict (uuid) do nothing
      returning id)`,
  ];
  if (write.steps.length > 0) parts.push(sql`steps as (${storeStepsSql({ part: 'fresh' }, write.steps)})`);
  if (write.records.length > 0)
    parts.push(sql`spans as (${insertSpansSql(run.owner, { part: 'fresh' }, write.records)})`);
  const notice = write.announce
    ? sql`case when exists (select 1 from fresh) then (select true from (select ${runNoticeSql(sql`${run.uuid}::text`, sql`null::int`)}) as sent) end`
    : sql`null`;
  try {
    const [row] = await selectRows<{
      inserted: boolean;
      key_active: boolean;
      known: [string, string][] | null;
    }>(
      db,
      sql`with ${sql.join(parts, sql`, `)}
          select exists (select 1 from fresh) as inserted, ${keyActive} as key_active, ${notice} as announced,
                 case when not exists (select 1 from fresh) then (${knownTracesSql(run.owner, write.traceIds)}) end as known`,
    );
    const known = row?.known ? new Map(row.known) : null;
    return { inserted: row?.inserted === true, keyActive: row?.key_active === true, known };
  } catch (error) {
    if (sqlState(error) === UNIQUE_VIOLATION) return { inserted: false, keyActive: true, known: null };
    throw error;
  }
}

/** PostgreSQL's SQLSTATE for a row a unique index already holds. */
const UNIQUE_VIOLATION = '23505';

/**
 * Traces this process wrote or found stored, per database, by sender and trace id: a hint, never a
 * rule. A request of traces it holds is most likely a retry or a later part of a trace (an SDK's batch
 * processor sends a long trace in several requests), for which the statement of a new run would be
 * made and sent only to find the trace known. Bounded: when full it starts again empty.
 */
const seenTraces = new WeakMap<Database, Set<string>>();
const SEEN_TRACES_HELD = 10_000;
const seenKey = (owner: string, traceId: string) => `${owner}\n${traceId}`;

/** Whether this process wrote or found stored a span of one of these traces of this sender. */
export function anyTraceSeen(db: Database, owner: string, traceIds: readonly string[]): boolean {
  const seen = seenTraces.get(db);
  return seen !== undefined && traceIds.some((traceId) => seen.has(seenKey(owner, traceId)));
}

/** Notes traces of a sender as written or found stored. */
export function noteTracesSeen(db: Database, owner: string, traceIds: readonly string[]): void {
  let seen = seenTraces.get(db);
  if (!seen || seen.size + traceIds.length > SEEN_TRACES_HELD) {
    seen = new Set();
    seenTraces.set(db, seen);
  }
  for (const traceId of traceIds) seen.add(seenKey(owner, traceId));
}
