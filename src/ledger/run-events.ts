import type { Database } from '../db/connection.ts';
import type { CallOfProgress } from '../db/notices.ts';
import type { Notice, NoticeChannel } from '../db/notifications.ts';
import { findRunsByIds, findRunsByUuids, type RunRow } from '../db/runs.ts';
import { type StepRow, stepsOfRunAfter } from '../db/steps.ts';
import type { CallProgress } from '../domain/call-progress.ts';
import { RunNotFoundError, SubscriptionLimitError } from '../domain/errors.ts';
import { checkInteger, LIVE_LIMITS, Limits } from '../domain/limits.ts';
import { type Actor, visibleOwners } from '../domain/permissions.ts';
import { isTerminalStatus, type RunStatus } from '../domain/run-status.ts';
import { checkUuid } from '../domain/uuid.ts';
import type { Scope } from './scope.ts';

/** The latest progress of one call of the run still on the wire. */
export interface ProgressEvent {
  call: CallOfProgress;
  progress: CallProgress;
}

/**
 * What a watcher of a run receives: the step just appended (null when only
 * the run changed, or a call reported progress), the run after it, and the
 * progress a call on the wire reported (null but for that).
 */
export interface RunEvent {
  run: RunRow;
  step: StepRow | null;
  progress?: ProgressEvent | null;
}

export interface RunEventsOptions {
  maxPerActor?: number;
  maxPerProcess?: number;
  maxWaitsPerActor?: number;
  maxWaitsPerProcess?: number;
  recheckMs?: number;
}

/** The two kinds of request that last, each counted against its own limits. */
type Held = 'stream' | 'wait';

/** Resolves the waiters of one stream when its run changes. */
class Wakeup {
  count = 0;
  #waiters: Array<() => void> = [];
  /** Progress heard and not yet sent, the latest per call: no table holds it, so it travels with the wake-up. */
  readonly progress = new Map<string, ProgressEvent>();

  ring(): void {
    this.count += 1;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Resolves once rung after `seen`, or after `ms`, or when the signal aborts. */
  wait(seen: number, ms: number, signal: AbortSignal): Promise<void> {
    if (this.count > seen || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        // Woken by the clock or the abort: not left behind for the next ring.
        this.#waiters = this.#waiters.filter((waiter) => waiter !== done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.#waiters.push(done);
    });
  }
}

/**
 * Live runs in one process: the notices of the channel fanned out to the
 * streams watching each run, the cancel that reaches calls on every instance,
 * and the count of open streams against the limits. Writers publish through
 * it after their change has committed; a notice is only a wake-up call, and a
 * stream always reads what it sends from the tables.
 */
export class RunEvents {
  readonly #channel: NoticeChannel;
  readonly #byRun = new Map<string, Set<Wakeup>>();
  readonly #all = new Set<Wakeup>();
  readonly #cancelHandlers = new Set<(runUuid: string) => void>();
  /** Held requests by kind and actor: `stream:alice`. */
  readonly #byActor = new Map<string, number>();
  readonly #streams = new Set<AbortController>();
  readonly #waits = new Set<AbortController>();
  readonly #off: Array<() => void>;
  /** Notices and resyncs heard so far: a read is shared only among streams that ask between the same two. */
  #epoch = 0;
  readonly #reads = new Map<string, Promise<{ steps: StepRow[]; run: RunRow | undefined }>>();
  readonly maxPerActor: number;
  readonly maxPerProcess: number;
  readonly maxWaitsPerActor: number;
  readonly maxWaitsPerProcess: number;
  readonly recheckMs: number;

  constructor(channel: NoticeChannel, options: RunEventsOptions = {}) {
    this.#channel = channel;
    this.maxPerActor = options.maxPerActor ?? LIVE_LIMITS.maxSubscriptionsPerActor;
    this.maxPerProcess = options.maxPerProcess ?? LIVE_LIMITS.maxSubscriptionsPerProcess;
    this.maxWaitsPerActor = options.maxWaitsPerActor ?? LIVE_LIMITS.maxWaitsPerActor;
    this.maxWaitsPerProcess = options.maxWaitsPerProcess ?? LIVE_LIMITS.maxWaitsPerProcess;
    this.recheckMs = options.recheckMs ?? LIVE_LIMITS.recheckMs;
    this.#off = [
      channel.listen((notice) => this.#deliver(notice)),
      // Back after an outage: whatever was announced meanwhile is lost, so every stream reads again.
      channel.onResync(() => {
        this.#epoch += 1;
        for (const wakeup of this.#all) wakeup.ring();
      }),
    ];
  }

  get channelKind(): NoticeChannel['kind'] {
    return this.#channel.kind;
  }

  #deliver(notice: Notice): void {
    if (notice.type === 'cancel') {
      for (const handler of [...this.#cancelHandlers]) handler(notice.runUuid);
      return;
    }
    if (notice.type === 'progress') {
      for (const wakeup of this.#byRun.get(notice.runUuid) ?? []) {
        wakeup.progress.set(notice.call.id, { call: notice.call, progress: notice.progress });
        wakeup.ring();
      }
      return;
    }
    this.#epoch += 1;
    for (const wakeup of this.#byRun.get(notice.runUuid) ?? []) wakeup.ring();
  }

  /**
   * The steps after `after` and the run, read once for every stream of the run
   * that asks at the same position after the same notice: 500 streams of one
   * run cost two statements per change, not a thousand. A read started before
   * the latest notice is never shared with a stream that notice woke.
   */
  read(db: Database, run: { id: number }, after: number) {
    const key = `${run.id}:${after}:${this.#epoch}`;
    let read = this.#reads.get(key);
    if (!read) {
      read = (async () => {
        const steps = await stepsOfRunAfter(db, run.id, after, LIVE_LIMITS.stepsPerRead);
        const [row] = await findRunsByIds(db, [run.id]);
        return { steps, run: row };
      })();
      this.#reads.set(key, read);
      const forget = () => {
        this.#reads.delete(key);
      };
      read.then(forget, forget);
    }
    return read;
  }

  /**
   * Tells every instance that the run changed (steps appended, status, rollups).
   * After the commit, never inside the transaction. A notice that cannot be sent
   * does not undo the write: streams re-read their run every `recheckMs` anyway.
   */
  async runChanged(runUuid: string, sequence: number | null = null): Promise<void> {
    await this.#channel.publish({ type: 'run', runUuid, sequence }).catch(() => {});
  }

  /**
   * Tells the streams of the run on every instance how far a call on the wire
   * has come. Best effort: a report that cannot be sent is dropped (the next
   * one, or the stored step, says more).
   */
  async callProgress(runUuid: string, call: CallOfProgress, progress: CallProgress): Promise<void> {
    await this.#channel.publish({ type: 'progress', runUuid, call, progress }).catch(() => {});
  }

  /** Tells every instance to cut off the run's calls still on the wire. */
  async runCancelled(runUuid: string): Promise<void> {
    await this.#channel.publish({ type: 'cancel', runUuid }).catch(() => {});
  }

  /** Called with a run's uuid whenever any instance cancels it. */
  onCancel(handler: (runUuid: string) => void): () => void {
    this.#cancelHandlers.add(handler);
    return () => {
      this.#cancelHandlers.delete(handler);
    };
  }

  /** Marks a call of the run as in flight (on every instance's view) until released. */
  holdCall(runId: number): Promise<() => Promise<void>> {
    return this.#channel.holdCall(runId);
  }

  callsInFlight(runId: number): Promise<boolean> {
    return this.#channel.callsInFlight(runId);
  }

  /** Streams open in this process. */
  openStreams(): number {
    return this.#streams.size;
  }

  /** Registered listeners of every kind in this process: streams' wake-ups, cancel handlers, the channel's own. */
  listenerCount(): number {
    let wakeups = 0;
    for (const set of this.#byRun.values()) wakeups += set.size;
    return wakeups + this.#all.size + this.#cancelHandlers.size + this.#channel.listenerCount();
  }

  /** Claims a slot of the kind for the actor; refused past either limit. */
  #claim(actor: Actor, kind: Held): { controller: AbortController; release: () => void } {
    const open = kind === 'stream' ? this.#streams : this.#waits;
    const [perProcess, perActor] =
      kind === 'stream'
        ? [this.maxPerProcess, this.maxPerActor]
        : [this.maxWaitsPerProcess, this.maxWaitsPerActor];
    if (open.size >= perProcess) {
      throw new SubscriptionLimitError(kind === 'stream' ? 'SUBSCRIPTIONS_FULL' : 'WAITS_FULL', perProcess);
    }
    const counter = `${kind}:${actor.name}`;
    const held = this.#byActor.get(counter) ?? 0;
    if (held >= perActor)
      throw new SubscriptionLimitError(
        kind === 'stream' ? 'TOO_MANY_SUBSCRIPTIONS' : 'TOO_MANY_WAITS',
        perActor,
      );
    this.#byActor.set(counter, held + 1);
    const controller = new AbortController();
    open.add(controller);
    let released = false;
    return {
      controller,
      release: () => {
        if (released) return;
        released = true;
        open.delete(controller);
        const left = (this.#byActor.get(counter) ?? 1) - 1;
        if (left > 0) this.#byActor.set(counter, left);
        else this.#byActor.delete(counter);
      },
    };
  }

  /**
   * Runs a wait (awaitDecision) in a slot of the actor's: refused past the
   * limits, ended by a shutdown (endStreams) through the signal it is given.
   */
  async holdWait<T>(actor: Actor, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const slot = this.#claim(actor, 'wait');
    try {
      return await wait(slot.controller.signal);
    } finally {
      slot.release();
    }
  }

  /** Waits held in this process. */
  openWaits(): number {
    return this.#waits.size;
  }

  #register(runUuid: string, wakeup: Wakeup): () => void {
    const set = this.#byRun.get(runUuid) ?? new Set();
    set.add(wakeup);
    this.#byRun.set(runUuid, set);
    this.#all.add(wakeup);
    return () => {
      set.delete(wakeup);
      if (set.size === 0) this.#byRun.delete(runUuid);
      this.#all.delete(wakeup);
    };
  }

  /**
   * Opens a stream of one run's events for the actor: refusals (a bad uuid or
   * sequence, a run it may not see, a limit) come here, before any event.
   */
  async watch(
    scope: Scope,
    input: { uuid: string; afterSequence?: number | null },
    /** Ends the stream from outside too (its key revoked). */
    until?: AbortSignal,
  ): Promise<RunEventStream> {
    const { db, actor } = scope;
    const uuid = checkUuid(input.uuid, 'uuid');
    const after =
      input.afterSequence == null
        ? 0
        : checkInteger(input.afterSequence, 'afterSequence', 0, Limits.maxSequence);
    // Hidden answers like missing: the same statement, the same error, the same code.
    const [run] = await findRunsByUuids(db, [uuid], visibleOwners(actor));
    if (!run) throw new RunNotFoundError(uuid);
    const slot = this.#claim(actor, 'stream');
    const wakeup = new Wakeup();
    // Registered before the first read: a change committed while it reads still wakes it.
    const unregister = this.#register(uuid, wakeup);
    const close = () => {
      unregister();
      slot.release();
    };
    const signal = until ? AbortSignal.any([slot.controller.signal, until]) : slot.controller.signal;
    const inner = follow(db, run, after, { wakeup, events: this, signal });
    return new RunEventStream(inner, slot.controller, close);
  }

  /**
   * Watches one run's changes without a stream (no slot of the limits): a
   * waiter reads, then waits for the count to move past what it had seen.
   */
  watchRun(runUuid: string): {
    count(): number;
    wait(seen: number, ms: number, signal?: AbortSignal): Promise<void>;
    stop(): void;
  } {
    const wakeup = new Wakeup();
    const unregister = this.#register(runUuid, wakeup);
    const never = new AbortController().signal;
    return {
      count: () => wakeup.count,
      wait: (seen, ms, signal) => wakeup.wait(seen, ms, signal ?? never),
      stop: unregister,
    };
  }

  /** Ends every open stream, as a shutdown does before it waits for requests in flight. */
  endStreams(): void {
    for (const controller of this.#streams) controller.abort();
    for (const controller of this.#waits) controller.abort();
  }

  /** Ends every open stream and stops listening. */
  async close(): Promise<void> {
    this.endStreams();
    for (const off of this.#off) off();
    this.#cancelHandlers.clear();
    await this.#channel.close();
  }
}

/**
 * One run's events as an async iterator whose `return()` (the client went
 * away) ends it at once, even while it waits for the next change: an async
 * generator alone would wait for that change before it noticed.
 */
export class RunEventStream implements AsyncIterableIterator<RunEvent> {
  #closed = false;

  constructor(
    private readonly inner: AsyncGenerator<RunEvent, void>,
    private readonly controller: AbortController,
    private readonly onClose: () => void,
  ) {}

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onClose();
  }

  async next(): Promise<IteratorResult<RunEvent>> {
    try {
      const result = await this.inner.next();
      if (result.done) this.#finish();
      return result.done ? { done: true, value: undefined } : result;
    } catch (error) {
      this.#finish();
      throw error;
    }
  }

  async return(): Promise<IteratorResult<RunEvent>> {
    this.controller.abort();
    try {
      await this.inner.return(undefined);
    } finally {
      this.#finish();
    }
    return { done: true, value: undefined };
  }

  async throw(error?: unknown): Promise<IteratorResult<RunEvent>> {
    this.controller.abort();
    this.#finish();
    throw error;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<RunEvent> {
    return this;
  }
}

/** What the run looks like to a watcher: an event is sent when this changes. */
function stateOf(run: RunRow): string {
  return JSON.stringify([
    run.status,
    run.terminationReason,
    run.startedAt,
    run.finishedAt,
    run.rounds,
    run.promptTokens,
    run.completionTokens,
    run.estimatedCost,
  ]);
}

/**
 * The stream itself. Each pass reads the steps after the last one sent, then
 * the run, from the tables: a lost or repeated notice costs a read, never a
 * step, and steps go out in sequence order, each once. It ends when the run is
 * terminal and no instance has a call of it in flight, checked in that order
 * and followed by one more read, so that a call which stores its step and lets
 * go just before the check is still sent.
 */
async function* follow(
  db: Database,
  watched: { uuid: string; id: number },
  afterSequence: number,
  { wakeup, events, signal }: { wakeup: Wakeup; events: RunEvents; signal: AbortSignal },
): AsyncGenerator<RunEvent, void> {
  const runId = watched.id;
  let last = afterSequence;
  let shown: string | null = null;
  while (!signal.aborted) {
    const seen = wakeup.count;
    const { steps, run } = await events.read(db, watched, last);
    if (!run || signal.aborted) return;
    for (const step of steps) {
      yield { run, step };
      last = step.sequence;
      shown = stateOf(run);
      if (signal.aborted) return;
    }
    // A full page: more may be stored already.
    if (steps.length === LIVE_LIMITS.stepsPerRead) continue;
    if (stateOf(run) !== shown) {
      yield { run, step: null };
      shown = stateOf(run);
    }
    // Progress heard meanwhile, the latest of each call. A call whose step was just sent is done:
    // what it reported on the way is in the step's metadata.
    const reports = [...wakeup.progress.values()];
    wakeup.progress.clear();
    for (const progress of reports) {
      if (signal.aborted) return;
      yield { run, step: null, progress };
    }
    if (isTerminalStatus(run.status as RunStatus) && !(await events.callsInFlight(runId))) {
      // Whatever a call stored before it let go is visible now.
      const [late] = await stepsOfRunAfter(db, runId, last, 1);
      if (!late) return;
      continue;
    }
    await wakeup.wait(seen, events.recheckMs, signal);
  }
}
