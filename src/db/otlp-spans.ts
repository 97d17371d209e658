import { and, eq, inArray, isNotNull, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { otlpSpans, runs } from '../../drizzle/schema.ts';
import type { Database } from './connection.ts';
import type { Transaction } from './run-writes.ts';
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
}

/**
 * The other span of a tool call already recorded as a step by an earlier
 * request, as `traceId/spanId` of the spans now arriving that it makes
 * redundant: an MCP request whose tool span (its parent) is a stored step,
 * and a tool span whose MCP request (its child) is one.
 */
export async function callsRecordedApart(
  tx: Transaction,
  owner: string,
  requests: ReadonlyArray<{ traceId: string; spanId: string; parentSpanId: string }>,
  tools: ReadonlyArray<{ traceId: string; spanId: string }>,
): Promise<Set<string>> {
  const found = new Set<string>();
  const anyOf = (column: AnyPgColumn, values: readonly string[]) =>
    sql`${column} = any(${textArrayLiteral([...new Set(values)])}::text[])`;
  if (requests.length > 0) {
    const parents = await tx
      .select({ traceId: otlpSpans.traceId, spanId: otlpSpans.spanId })
      .from(otlpSpans)
      .where(
        and(
          eq(otlpSpans.owner, owner),
          anyOf(
            otlpSpans.traceId,
            requests.map((r) => r.traceId),
          ),
          anyOf(
            otlpSpans.spanId,
            requests.map((r) => r.parentSpanId),
          ),
          isNotNull(otlpSpans.callRole),
          isNotNull(otlpSpans.sequence),
        ),
      );
    const recorded = new Set(parents.map((p) => `${p.traceId}/${p.spanId}`));
    for (const r of requests)
      if (recorded.has(`${r.traceId}/${r.parentSpanId}`)) found.add(`${r.traceId}/${r.spanId}`);
  }
  if (tools.length > 0) {
    const children = await tx
      .select({ traceId: otlpSpans.traceId, parentSpanId: otlpSpans.parentSpanId })
      .from(otlpSpans)
      .where(
        and(
          eq(otlpSpans.owner, owner),
          anyOf(
            otlpSpans.traceId,
            tools.map((t) => t.traceId),
          ),
          anyOf(
            otlpSpans.parentSpanId,
            tools.map((t) => t.spanId),
          ),
          eq(otlpSpans.callRole, 'mcp_call'),
          isNotNull(otlpSpans.sequence),
        ),
      );
    for (const c of children) found.add(`${c.traceId}/${c.parentSpanId}`);
  }
  return found;
}

/** The run each of these traces already went to (by the sender's spans), by trace id: uuid of the run. */
export async function runsOfTraces(
  db: Database,
  owner: string,
  traceIds: readonly string[],
): Promise<Map<string, string>> {
  if (traceIds.length === 0) return new Map();
  const rows = await db
    .selectDistinct({ traceId: otlpSpans.traceId, uuid: runs.uuid })
    .from(otlpSpans)
    .innerJoin(runs, eq(runs.id, otlpSpans.runId))
    .where(and(eq(otlpSpans.owner, owner), inArray(otlpSpans.traceId, [...traceIds])));
  return new Map(rows.map((row) => [row.traceId, row.uuid]));
}

/**
 * Which of these spans the sender has already sent, as `traceId/spanId`. Read
 * under the run's lock, in a statement of its own, so a retry racing the
 * first delivery sees what that one committed.
 */
export async function storedSpanKeys(
  tx: Transaction,
  owner: string,
  spans: ReadonlyArray<{ traceId: string; spanId: string }>,
): Promise<Set<string>> {
  if (spans.length === 0) return new Set();
  const traceIds = [...new Set(spans.map((s) => s.traceId))];
  const spanIds = [...new Set(spans.map((s) => s.spanId))];
  // Each list as one array parameter: 10,000 spans are two parameters, not 10,000 to build and send.
  const rows = await tx
    .select({ traceId: otlpSpans.traceId, spanId: otlpSpans.spanId })
    .from(otlpSpans)
    .where(
      and(
        eq(otlpSpans.owner, owner),
        sql`${otlpSpans.traceId} = any(${textArrayLiteral(traceIds)}::text[])`,
        sql`${otlpSpans.spanId} = any(${textArrayLiteral(spanIds)}::text[])`,
      ),
    );
  return new Set(rows.map((row) => `${row.traceId}/${row.spanId}`));
}

/** Records spans as stored, in the run's transaction; the unique index refuses a span stored twice. */
export async function insertSpans(
  tx: Transaction,
  owner: string,
  runId: number,
  spans: readonly StoredSpan[],
): Promise<void> {
  if (spans.length === 0) return;
  // Parallel arrays unnested: three parameters for any number of spans (a row of parameters each took
  // hundreds of milliseconds of the event loop to build for 10,000 spans).
  const sequences = `{${spans.map((span) => (span.sequence === null ? 'NULL' : String(span.sequence))).join(',')}}`;
  const optional = (value: string | null | undefined) => value ?? null;
  await tx.execute(sql`
    insert into otlp_spans (owner, trace_id, span_id, run_id, sequence, parent_span_id, call_role)
    select ${owner}, t, s, ${runId}, q, nullif(p, ''), nullif(c, '')
      from unnest(${textArrayLiteral(spans.map((span) => span.traceId))}::text[],
                  ${textArrayLiteral(spans.map((span) => span.spanId))}::text[],
                  ${sequences}::int[],
                  ${textArrayLiteral(spans.map((span) => optional(span.parentSpanId) ?? ''))}::text[],
                  ${textArrayLiteral(spans.map((span) => optional(span.callRole) ?? ''))}::text[]) as x(t, s, q, p, c)`);
}
