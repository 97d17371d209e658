/**
 * Why calls were cut off when this process stops: the abort reason of their
 * signal, so that a call can tell its own service stopping (MCP_SERVICE_STOPPING)
 * from an operator's cancel of its run (MCP_CALL_CANCELLED).
 */
export const SERVICE_STOPPING = Symbol('runledger is stopping');

/** Whether a call's signal was aborted because this process stops. */
export function isServiceStopping(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason === SERVICE_STOPPING;
}

/**
 * The tool calls of each run still on the wire, so that cancelling a run can
 * cut them off; and, on shutdown, every one of them. One per process: a call
 * lives in the process that made it.
 */
export class InFlightCalls {
  readonly #byRun = new Map<string, Set<AbortController>>();
  /** Whole calls, from before the wire until their step is stored: a shutdown waits for these. */
  readonly #recording = new Set<Promise<unknown>>();
  #stopping = false;

  begin(runUuid: string): AbortController {
    const controller = new AbortController();
    // A call that begins while the process stops is cut off at once, as the ones already on the wire are.
    if (this.#stopping) controller.abort(SERVICE_STOPPING);
    const calls = this.#byRun.get(runUuid) ?? new Set();
    calls.add(controller);
    this.#byRun.set(runUuid, calls);
    return controller;
  }

  end(runUuid: string, controller: AbortController): void {
    const calls = this.#byRun.get(runUuid);
    calls?.delete(controller);
    if (calls?.size === 0) this.#byRun.delete(runUuid);
  }

  /** Aborts every call of the run; returns how many there were. */
  abortCallsOf(runUuid: string): number {
    const calls = [...(this.#byRun.get(runUuid) ?? [])];
    for (const controller of calls) controller.abort();
    return calls.length;
  }

  /** Holds a whole call (its step stored included) until it settles: `stop` waits for it. */
  track<T>(call: Promise<T>): Promise<T> {
    this.#recording.add(call);
    const forget = () => this.#recording.delete(call);
    call.then(forget, forget);
    return call;
  }

  /**
   * Shutdown: every call on the wire is cut off as MCP_SERVICE_STOPPING, and
   * this waits up to `waitMs` for their steps to be stored. True when all were.
   */
  async stop(waitMs: number): Promise<boolean> {
    this.#stopping = true;
    for (const calls of this.#byRun.values()) {
      for (const controller of calls) controller.abort(SERVICE_STOPPING);
    }
    if (this.#recording.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
    });
    const settled = Promise.allSettled([...this.#recording]).then(() => true);
    try {
      return await Promise.race([settled, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
