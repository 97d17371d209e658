import { and, asc, eq, inArray, isNull, ne, type SQL, sql } from 'drizzle-orm';
import { humanRequests, runs } from '../../drizzle/schema.ts';
import type { RequestState } from '../domain/human-request.ts';
import type { Owners } from '../domain/permissions.ts';
import type { Database } from './connection.ts';
import type { Transaction } from './run-writes.ts';
import { ofOwners, type RunRow } from './runs.ts';

export type HumanRequestRow = typeof humanRequests.$inferSelect;
export type NewHumanRequest = typeof humanRequests.$inferInsert;

/**
 * Open and not past its expiry at `now`: requestStateAt's `open`, but for the
 * run's end, which a caller adds where the run can have ended.
 */
function openAt(now: Date): SQL {
  return sql`(${humanRequests.state} = 'open' and (${humanRequests.expiresAt} is null or ${humanRequests.expiresAt} > ${now.toISOString()}::timestamptz))`;
}

/** A request with the run it belongs to. */
export interface RequestOfRun {
  request: HumanRequestRow;
  run: RunRow;
}

export async function insertRequest(tx: Transaction, row: NewHumanRequest): Promise<HumanRequestRow> {
  const [inserted] = await tx.insert(humanRequests).values(row).returning();
  if (!inserted) throw new Error('the request was not stored');
  return inserted;
}

/** A request made earlier in the run under the same retry key. */
export async function findRequestByKey(
  tx: Transaction,
  runId: number,
  idempotencyKey: string,
): Promise<HumanRequestRow | null> {
  const [row] = await tx
    .select()
    .from(humanRequests)
    .where(and(eq(humanRequests.runId, runId), eq(humanRequests.idempotencyKey, idempotencyKey)));
  return row ?? null;
}

/** A request of a run, locked for its decision (the run is locked first, by the caller). */
export async function lockRequest(
  tx: Transaction,
  runId: number,
  requestUuid: string,
): Promise<HumanRequestRow | null> {
  const [row] = await tx
    .select()
    .from(humanRequests)
    .where(and(eq(humanRequests.runId, runId), eq(humanRequests.uuid, requestUuid)))
    .for('update');
  return row ?? null;
}

/** Closes an open request; null when it was not open (nothing changed). */
export async function closeRequest(
  tx: Transaction,
  id: number,
  decision: {
    state: Exclude<RequestState, 'open'>;
    decidedBy: string | null;
    decidedAt: Date;
    comment?: string | null;
    answer?: Record<string, unknown> | null;
  },
): Promise<HumanRequestRow | null> {
  const [row] = await tx
    .update(humanRequests)
    .set({
      state: decision.state,
      decidedBy: decision.decidedBy,
      decidedAt: decision.decidedAt,
      comment: decision.comment ?? null,
      answer: decision.answer ?? null,
    })
    .where(and(eq(humanRequests.id, id), eq(humanRequests.state, 'open')))
    .returning();
  return row ?? null;
}

/** The kinds of a run's requests still open (not expired), oldest first: what the run waits for. */
export async function openKindsOfRun(tx: Transaction, runId: number, now: Date): Promise<string[]> {
  const rows = await tx
    .select({ kind: humanRequests.kind })
    .from(humanRequests)
    .where(and(eq(humanRequests.runId, runId), openAt(now)))
    .orderBy(asc(humanRequests.requestedAt), asc(humanRequests.id));
  return rows.map((row) => row.kind);
}

/** Requests by uuid among the runs of the given owners: a request of a hidden run is not found. */
export async function findRequestsByUuids(
  db: Database,
  uuids: readonly string[],
  owners: Owners,
): Promise<RequestOfRun[]> {
  if (uuids.length === 0 || owners?.length === 0) return [];
  return db
    .select({ request: humanRequests, run: runs })
    .from(humanRequests)
    .innerJoin(runs, eq(runs.id, humanRequests.runId))
    .where(and(inArray(humanRequests.uuid, [...uuids]), ofOwners(owners)));
}

/** Every request of one run, in the order they were made. */
export async function requestsOfRun(db: Database, runId: number): Promise<HumanRequestRow[]> {
  return db
    .select()
    .from(humanRequests)
    .where(eq(humanRequests.runId, runId))
    .orderBy(asc(humanRequests.requestedAt), asc(humanRequests.id));
}

/**
 * The inbox: open requests of runs still open, not expired, oldest first, of
 * the given owners (null: every owner), up to `first`, leaving out those the
 * decider may not decide (four eyes: its own runs, its own requests) before
 * it counts them.
 */
export async function openRequests(
  db: Database,
  owners: Owners,
  now: Date,
  first: number,
  decider: string,
): Promise<RequestOfRun[]> {
  if (owners?.length === 0) return [];
  return db
    .select({ request: humanRequests, run: runs })
    .from(humanRequests)
    .innerJoin(runs, eq(runs.id, humanRequests.runId))
    .where(
      and(
        openAt(now),
        isNull(runs.finishedAt),
        ne(runs.owner, decider),
        ne(humanRequests.requestedBy, decider),
        ofOwners(owners),
      ),
    )
    .orderBy(asc(humanRequests.requestedAt), asc(humanRequests.id))
    .limit(first);
}

/** Sets the status of a run that is still open (a run waits, or runs again). */
export async function setWaitingStatus(
  tx: Transaction,
  runId: number,
  status: string,
): Promise<RunRow | null> {
  const [row] = await tx
    .update(runs)
    .set({ status })
    .where(and(eq(runs.id, runId), isNull(runs.finishedAt)))
    .returning();
  return row ?? null;
}

/** Open requests past their expiry, oldest expiry first, up to `first`. */
export async function overdueRequests(db: Database, now: Date, first: number): Promise<RequestOfRun[]> {
  return db
    .select({ request: humanRequests, run: runs })
    .from(humanRequests)
    .innerJoin(runs, eq(runs.id, humanRequests.runId))
    .where(
      and(
        eq(humanRequests.state, 'open'),
        sql`${humanRequests.expiresAt} <= ${now.toISOString()}::timestamptz`,
      ),
    )
    .orderBy(asc(humanRequests.expiresAt))
    .limit(first);
}
