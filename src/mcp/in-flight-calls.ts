/**
 * The tool calls of each run still on the wire, so that cancelling a run can
 * cut them off. One per process: a call lives in the process that made it.
 */
export class InFlightCalls {
  readonly #byRun = new Map<string, Set<AbortController>>();

  begin(runUuid: string): AbortController {
    const controller = new AbortController();
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
}
