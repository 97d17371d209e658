import { and, eq, inArray } from 'drizzle-orm';
import { otlpSpans, runs } from '../../drizzle/schema.ts';
import type { Database } from './connection.ts';
import type { Transaction } from './run-writes.ts';

/** Spans received over OTLP (migrations/0017): which are stored, and which run a trace went to. SQL only. */

export interface StoredSpan {
  traceId: string;
  spanId: string;
  /** The step it became; null when it made none. */
  sequence: number | null;
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
  const rows = await tx
    .select({ traceId: otlpSpans.traceId, spanId: otlpSpans.spanId })
    .from(otlpSpans)
    .where(
      and(
        eq(otlpSpans.owner, owner),
        inArray(otlpSpans.traceId, traceIds),
        inArray(otlpSpans.spanId, spanIds),
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
  await tx.insert(otlpSpans).values(spans.map((span) => ({ owner, runId, ...span })));
}
