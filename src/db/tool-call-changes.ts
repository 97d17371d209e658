import { sql } from 'drizzle-orm';
import { type Database, selectRows } from './connection.ts';

/**
 * The advisory lock whose holder folds: taken for each batch's transaction
 * (`pg_try_advisory_xact_lock`), so one instance folds at a time, and an
 * instance that dies mid-batch releases it with its rolled-back transaction.
 */
export const FOLD_LOCK_KEY = 0x726c_6673; // "rlfs"

/** How many changes a batch takes at most: a batch is one transaction of one upsert per rollup. */
export const FOLD_BATCH_CHANGES = 5_000;

/**
 * The most a batch takes while a backlog lasts (each batch full): a batch writes a row per key it
 * touches, so a larger one writes the rows of keys its changes share once (a bulk load spread over
 * 90 days folds 15 % faster in batches of 20,000). The folder goes back to FOLD_BATCH_CHANGES once a
 * batch is not full, so a folder that keeps up holds no write's changes for long.
 */
export const FOLD_BULK_BATCH_CHANGES = 20_000;

/** The size of the next batch: twice the last, up to the bulk size, while batches come full; else the first size. */
export function nextBatchChanges(last: number, folded: number, first: number = FOLD_BATCH_CHANGES): number {
  return folded >= last ? Math.min(Math.max(first, FOLD_BULK_BATCH_CHANGES), last * 2) : first;
}

/** What one batch did: null when another instance holds the fold's lock. */
export type FoldBatch = { folded: number } | null;

/**
 * Folds the oldest changes not folded yet into every rollup (migration 0039's
 * `tool_outcome_rollups_fold`), in one transaction under the fold's lock.
 */
export async function foldToolCallChanges(
  db: Database,
  maxChanges: number = FOLD_BATCH_CHANGES,
): Promise<FoldBatch> {
  return db.transaction(async (tx) => {
    const [lock] = await selectRows<{ held: boolean }>(
      tx,
      sql`select pg_try_advisory_xact_lock(${FOLD_LOCK_KEY}) as held`,
    );
    if (!lock?.held) return null;
    const [row] = await selectRows<{ folded: number | string }>(
      tx,
      sql`select tool_outcome_rollups_fold(${maxChanges}::integer) as folded`,
    );
    return { folded: Number(row?.folded ?? 0) };
  });
}

/** How many changes are not folded yet. */
export async function pendingToolCallChanges(db: Database): Promise<{ changes: number }> {
  const [row] = await selectRows<{ changes: number | string }>(
    db,
    sql`select count(*) as changes from tool_call_changes`,
  );
  return { changes: Number(row?.changes ?? 0) };
}
