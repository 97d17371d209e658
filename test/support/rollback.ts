import type { Database } from '../../src/db/connection.ts';

/**
 * Tests that are not about concurrency run inside a transaction that is rolled
 * back, so that no test sees another's rows and their order does not matter.
 * The transaction is handed to the code under test as its database; its own
 * `db.transaction` calls become savepoints. One connection serves the whole
 * test, so concurrent writers are tested on committed data instead. Inside,
 * reach the database only through `tx` (`api.db`): PGlite is one connection,
 * and a query beside the open transaction waits for it to end.
 */

/** Thrown inside the transaction to end it with ROLLBACK; it never escapes. */
class RolledBack extends Error {}

export interface OpenRollback {
  /** The open transaction, to be used as the database. */
  readonly tx: Database;
  /** Rolls the transaction back and waits until it has ended. */
  rollback(): Promise<void>;
}

/** Opens a transaction on `db` that stays open until `rollback()`; nothing written through `tx` remains. */
export async function beginRollback(db: Database): Promise<OpenRollback> {
  let end = () => {};
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  let opened: (tx: Database) => void = () => {};
  const open = new Promise<Database>((resolve) => {
    opened = resolve;
  });
  const done = db
    .transaction(async (tx) => {
      opened(tx);
      await ended;
      throw new RolledBack();
    })
    .then(
      () => {
        throw new Error('the test transaction committed');
      },
      (error: unknown) => {
        if (!(error instanceof RolledBack)) throw error;
      },
    );
  const tx = await Promise.race([
    open,
    done.then(() => {
      throw new Error('the test transaction ended before it opened');
    }),
  ]);
  return {
    tx,
    async rollback() {
      end();
      await done;
    },
  };
}

/** Runs `work` with a transaction as its database, then rolls it back, whether `work` succeeded or not. */
export async function withRollback<T>(db: Database, work: (tx: Database) => Promise<T>): Promise<T> {
  const { tx, rollback } = await beginRollback(db);
  try {
    return await work(tx);
  } finally {
    await rollback();
  }
}
