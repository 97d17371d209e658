import { describeError } from '../log.ts';

export interface BackgroundLoopOptions {
  /** What the loop does, for its log lines (`folding statistics`). */
  name: string;
  /**
   * One pass of the work; true when it left work behind (a full batch), so
   * the next pass runs at once instead of after `intervalMs`.
   */
  pass: () => Promise<boolean>;
  /** How long it waits after a pass that left nothing behind. */
  intervalMs: number;
  /** How long it waits after a failed pass (the database unreachable, say) before it tries again. */
  retryMs: number;
  /** A line when passes start failing and when they work again; never an error's message (it may quote data). */
  log?: (line: string) => void;
}

/**
 * The loop every background worker of an instance runs (the statistics'
 * fold, the expiry of requests): one pass at a time, the next at once when
 * work is left, else after a pause; a failure logged once, by name and codes,
 * and retried; `stop` waits for the pass in flight to end. Its timers do not
 * keep a process alive.
 */
export class BackgroundLoop {
  readonly #options: BackgroundLoopOptions;
  #running = false;
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: BackgroundLoopOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  /** Stops after the pass in flight, if any, has ended. */
  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { name, pass, intervalMs, retryMs } = this.#options;
    const log = this.#options.log ?? (() => {});
    let failing = false;
    while (this.#running) {
      let pause = intervalMs;
      try {
        const workLeft = await pass();
        if (failing) log(`${name} again`);
        failing = false;
        if (workLeft) pause = 0;
      } catch (error) {
        if (!failing) log(`${name} failed (${describeError(error).split('\n')[0]}); retrying`);
        failing = true;
        pause = retryMs;
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
