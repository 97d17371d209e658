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
