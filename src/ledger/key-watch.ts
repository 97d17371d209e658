import { activeKeyHashes } from '../db/api-keys.ts';
import type { Database } from '../db/connection.ts';
import { KeyNotActiveError } from '../domain/errors.ts';
import { LIVE_LIMITS } from '../domain/limits.ts';

/**
 * Access that outlives a request's first check: streams and waits hold their
 * key for minutes, so each instance re-reads the keys it holds open every
 * `LIVE_LIMITS.keyRecheckMs` and ends what a revoked or deleted key holds. It
 * reads the table, so a revocation on any instance, or by the command line,
 * is seen everywhere; it costs one statement a tick, and none while nothing is
 * held. An unreachable database ends nothing: an outage is not a revocation.
 */
export class KeyWatch {
  readonly #held = new Map<string, Set<AbortController>>();
  #timer: NodeJS.Timeout | null = null;
  #checking = false;

  constructor(
    private readonly db: Database,
    readonly recheckMs: number = LIVE_LIMITS.keyRecheckMs,
  ) {}

  /** A signal that aborts (with a KeyNotActiveError) once the key is no longer active; release it when done. */
  hold(keyHash: string): { signal: AbortSignal; release: () => void } {
    const controller = new AbortController();
    let set = this.#held.get(keyHash);
    if (!set) {
      set = new Set();
      this.#held.set(keyHash, set);
    }
    set.add(controller);
    this.#timer ??= setInterval(() => void this.check(), this.recheckMs).unref();
    return {
      signal: controller.signal,
      release: () => {
        const current = this.#held.get(keyHash);
        if (!current?.delete(controller) || current.size > 0) return;
        this.#held.delete(keyHash);
        this.#stopIfIdle();
      },
    };
  }

  /** Keys held open in this process. */
  heldKeys(): number {
    return this.#held.size;
  }

  /** One pass: ends whatever a key no longer active holds. */
  async check(): Promise<void> {
    if (this.#checking || this.#held.size === 0) return;
    this.#checking = true;
    try {
      const keys = [...this.#held.keys()];
      const active = await activeKeyHashes(this.db, keys);
      for (const keyHash of keys) {
        if (active.has(keyHash)) continue;
        for (const controller of this.#held.get(keyHash) ?? []) controller.abort(new KeyNotActiveError());
        this.#held.delete(keyHash);
      }
      this.#stopIfIdle();
    } catch {
      // The database did not answer: the next tick asks again.
    } finally {
      this.#checking = false;
    }
  }

  #stopIfIdle(): void {
    if (this.#held.size > 0 || !this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = null;
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#held.clear();
  }
}
