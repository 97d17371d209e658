import type { Database } from '../db/connection.ts';
import { FOLD_BATCH_CHANGES, foldToolCallChanges, nextBatchChanges } from '../db/tool-call-changes.ts';
import { BackgroundLoop } from './background-loop.ts';

/** How long the folder waits after a batch that left nothing behind (or lost the lock) before the next. */
export const FOLD_INTERVAL_MS = 100;

/** How long it waits after a failed batch (the database unreachable, say) before it tries again. */
export const FOLD_RETRY_MS = 1_000;

export interface StatsFolderOptions {
  intervalMs?: number;
  /** The first size of a batch; while batches come full, each takes twice as many, up to FOLD_BULK_BATCH_CHANGES. */
  batchChanges?: number;
  /** A line when folding fails and when it recovers; never a payload. */
  log?: (line: string) => void;
}

/**
 * Folds the tool calls written into the rollups, batch after batch, for as
 * long as the process runs. Every instance runs one; the fold's advisory lock
 * lets one batch run at a time across instances, and whichever instance is
 * alive takes the next. A full batch is followed at once by the next, so the
 * folder keeps up with recording; statistics are exact meanwhile, as every
 * read adds the changes not folded yet.
 */
export class StatsFolder {
  readonly #loop: BackgroundLoop;

  constructor(db: Database, options: StatsFolderOptions = {}) {
    const first = options.batchChanges ?? FOLD_BATCH_CHANGES;
    let batchChanges = first;
    this.#loop = new BackgroundLoop({
      name: 'folding statistics',
      intervalMs: options.intervalMs ?? FOLD_INTERVAL_MS,
      retryMs: FOLD_RETRY_MS,
      log: options.log,
      // Another instance holding the lock (null) leaves nothing for this one to do now.
      pass: async () => {
        const asked = batchChanges;
        const folded = (await foldToolCallChanges(db, asked))?.folded ?? 0;
        batchChanges = nextBatchChanges(asked, folded, first);
        return folded >= asked;
      },
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** Stops after the batch in flight, if any, has committed or rolled back. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }
}

/**
 * Folds every change not folded yet, batch after batch (growing as the
 * folder's do), reporting each batch, until none is left (or another instance
 * holds the lock `attempts` times in a row). Returns the changes folded.
 */
export async function foldEverything(
  db: Database,
  { batchChanges = FOLD_BATCH_CHANGES, progress = (_folded: number) => {}, attempts = 50 } = {},
): Promise<{ folded: number; lockedOut: boolean }> {
  let folded = 0;
  let lockedOut = 0;
  let asked = batchChanges;
  for (;;) {
    const batch = await foldToolCallChanges(db, asked);
    if (batch === null) {
      if (++lockedOut >= attempts) return { folded, lockedOut: true };
      await new Promise((resolve) => setTimeout(resolve, FOLD_INTERVAL_MS));
      continue;
    }
    lockedOut = 0;
    folded += batch.folded;
    if (batch.folded > 0) progress(folded);
    if (batch.folded < asked) return { folded, lockedOut: false };
    asked = nextBatchChanges(asked, batch.folded, batchChanges);
  }
}
