import type { Database } from '../db/connection.ts';
import { FOLD_BATCH_CHANGES, foldToolCallChanges } from '../db/tool-call-changes.ts';

/** How long the folder waits after a batch that left nothing behind (or lost the lock) before the next. */
export const FOLD_INTERVAL_MS = 100;

/** How long it waits after a failed batch (the database unreachable, say) before it tries again. */
export const FOLD_RETRY_MS = 1_000;

export interface StatsFolderOptions {
  intervalMs?: number;
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
  readonly #db: Database;
  readonly #intervalMs: number;
  readonly #batchChanges: number;
  readonly #log: (line: string) => void;
  #running = false;
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  constructor(db: Database, options: StatsFolderOptions = {}) {
    this.#db = db;
    this.#intervalMs = options.intervalMs ?? FOLD_INTERVAL_MS;
    this.#batchChanges = options.batchChanges ?? FOLD_BATCH_CHANGES;
    this.#log = options.log ?? (() => {});
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  /** Stops after the batch in flight, if any, has committed or rolled back. */
  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    let failing = false;
    while (this.#running) {
      let pause = this.#intervalMs;
      try {
        const batch = await foldToolCallChanges(this.#db, this.#batchChanges);
        if (failing) this.#log('folding statistics again');
        failing = false;
        if (batch && batch.folded >= this.#batchChanges) pause = 0;
      } catch (error) {
        if (!failing) this.#log(`folding statistics failed (${errorName(error)}); retrying`);
        failing = true;
        pause = FOLD_RETRY_MS;
      }
      if (pause > 0 && this.#running) await this.#sleep(pause);
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve;
      this.#timer = setTimeout(resolve, ms);
      this.#timer.unref();
    });
  }
}

/**
 * Folds every change not folded yet, batch after batch, reporting each batch,
 * until none is left (or another instance holds the lock `attempts` times in a
 * row). Returns the changes folded.
 */
export async function foldEverything(
  db: Database,
  { batchChanges = FOLD_BATCH_CHANGES, progress = (_folded: number) => {}, attempts = 50 } = {},
): Promise<{ folded: number; lockedOut: boolean }> {
  let folded = 0;
  let lockedOut = 0;
  for (;;) {
    const batch = await foldToolCallChanges(db, batchChanges);
    if (batch === null) {
      if (++lockedOut >= attempts) return { folded, lockedOut: true };
      await new Promise((resolve) => setTimeout(resolve, FOLD_INTERVAL_MS));
      continue;
    }
    lockedOut = 0;
    folded += batch.folded;
    if (batch.folded > 0) progress(folded);
    if (batch.folded < batchChanges) return { folded, lockedOut: false };
  }
}

/** An error's name and code for a log line, never its message (which may quote data). */
function errorName(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown';
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? `${error.name} ${code}` : error.name;
}
