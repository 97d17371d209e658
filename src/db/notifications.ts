import { sql } from 'drizzle-orm';
import pg from 'pg';
import { type Database, selectRows } from './connection.ts';
import { CHANNEL, encodeNotice, type Notice, parseNotice } from './notices.ts';

export type { Notice } from './notices.ts';

export interface NoticeChannel {
  readonly kind: 'postgres' | 'in-process';
  /** Sends a notice to every instance, this one included. Call it after the change has committed. */
  publish(notice: Notice): Promise<void>;
  /** Every notice, from every instance; returns the function that stops listening. */
  listen(listener: (notice: Notice) => void): () => void;
  /** Called once the channel is back after an outage: notices of the meantime are lost, read the tables. */
  onResync(listener: () => void): () => void;
  /**
   * Marks a tool call of the run as in flight in this process until the
   * returned function is called; `callsInFlight` sees it from every instance.
   */
  holdCall(runId: number): Promise<() => Promise<void>>;
  /** Whether any instance holds a call of the run. */
  callsInFlight(runId: number): Promise<boolean>;
  /** Listeners registered in this process (notices and resyncs), for leak checks. */
  listenerCount(): number;
  close(): Promise<void>;
}

/** The first half of every advisory lock key taken for calls in flight; the second is the run's id. */
export const CALL_LOCK_CLASS = 0x726c_6c76; // "rllv"

/** The listening connection's application_name, to find it in pg_stat_activity. */
export const LISTENER_NAME = 'runledger-listen';

/** Listeners of both kinds, shared by the two channels. */
class Listeners {
  readonly notices = new Set<(notice: Notice) => void>();
  readonly resyncs = new Set<() => void>();

  add<T>(set: Set<T>, listener: T): () => void {
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }

  deliver(notice: Notice): void {
    for (const listener of [...this.notices]) listener(notice);
  }

  resync(): void {
    for (const listener of [...this.resyncs]) listener();
  }

  get count(): number {
    return this.notices.size + this.resyncs.size;
  }
}

/** Calls in flight in this process, by run id. */
class Holds {
  readonly byRun = new Map<number, number>();

  add(runId: number): void {
    this.byRun.set(runId, (this.byRun.get(runId) ?? 0) + 1);
  }

  remove(runId: number): void {
    const left = (this.byRun.get(runId) ?? 1) - 1;
    if (left > 0) this.byRun.set(runId, left);
    else this.byRun.delete(runId);
  }
}

/** One process, one database: notices go from memory to memory. */
export function inProcessChannel(): NoticeChannel {
  const listeners = new Listeners();
  const holds = new Holds();
  return {
    kind: 'in-process',
    async publish(notice) {
      // Delivered on a later tick, as from PostgreSQL: a publisher never runs listeners inside its own call.
      queueMicrotask(() => listeners.deliver(notice));
    },
    listen: (listener) => listeners.add(listeners.notices, listener),
    onResync: (listener) => listeners.add(listeners.resyncs, listener),
    async holdCall(runId) {
      holds.add(runId);
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        holds.remove(runId);
      };
    },
    callsInFlight: async (runId) => holds.byRun.has(runId),
    listenerCount: () => listeners.count,
    async close() {
      listeners.notices.clear();
      listeners.resyncs.clear();
    },
  };
}

export interface PostgresChannelOptions {
  /** The connection URL: the listening connection is opened apart from the pool. */
  url: string;
  /** The pool, for NOTIFY and for reading which calls are in flight. */
  db: Database;
  /** Waits between reconnection attempts, growing to the last; default 100 ms to 2 s. */
  retryDelaysMs?: readonly number[];
  /** Told about outages and recoveries (never about payloads). */
  log?: (line: string) => void;
}

/**
 * LISTEN/NOTIFY on one dedicated connection (a pooled one would be handed to
 * others and lose the LISTEN). When it breaks (a database restart, a killed
 * backend) it reconnects by itself, LISTENs again, takes back the locks of the
 * calls still in flight, and tells every listener to catch up from the tables:
 * notices sent while it was away are gone.
 *
 * A call in flight is a shared advisory lock held by this connection, so it
 * disappears with the process that held it: a crashed instance leaves no call
 * "in flight" for ever.
 */
export async function openPostgresChannel(options: PostgresChannelOptions): Promise<NoticeChannel> {
  const { url, db } = options;
  const delays = options.retryDelaysMs ?? [100, 250, 500, 1_000, 2_000];
  const log = options.log ?? (() => {});
  const listeners = new Listeners();
  const holds = new Holds();
  let client: pg.Client | null = null;
  let closed = false;
  let reconnecting: Promise<void> | null = null;

  const lockKey = (runId: number): number[] => [CALL_LOCK_CLASS, runId];

  async function connect(): Promise<pg.Client> {
    const next = new pg.Client({ connectionString: url, keepAlive: true, application_name: LISTENER_NAME });
    // An error event without a listener would end the process (STACK pitfall 9).
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    next.on('notification', (message) => {
      if (message.channel !== CHANNEL) return;
      const notice = parseNotice(message.payload);
      if (notice) listeners.deliver(notice);
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${CHANNEL}`);
      for (const [runId, count] of holds.byRun) {
        for (let i = 0; i < count; i += 1) {
          await next.query('select pg_advisory_lock_shared($1, $2)', lockKey(runId));
        }
      }
    } catch (error) {
      next.removeAllListeners('end');
      next.on('error', () => {});
      await next.end().catch(() => {});
      throw error;
    }
    return next;
  }

  function lost(which: pg.Client): void {
    if (closed || client !== which) return;
    client = null;
    log('the listening connection was lost: reconnecting');
    reconnecting ??= reconnect().finally(() => {
      reconnecting = null;
    });
  }

  async function reconnect(): Promise<void> {
    for (let attempt = 0; !closed; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, delays[Math.min(attempt, delays.length - 1)]));
      if (closed) return;
      try {
        const next = await connect();
        if (closed) {
          await next.end().catch(() => {});
          return;
        }
        client = next;
        log(`listening again after ${attempt + 1} attempt(s): catching up from the tables`);
        listeners.resync();
        return;
      } catch {
        // Still down: wait and try again.
      }
    }
  }

  client = await connect();

  return {
    kind: 'postgres',
    async publish(notice) {
      await db.execute(sql`select pg_notify(${CHANNEL}, ${encodeNotice(notice)})`);
    },
    listen: (listener) => listeners.add(listeners.notices, listener),
    onResync: (listener) => listeners.add(listeners.resyncs, listener),
    async holdCall(runId) {
      holds.add(runId);
      // Without the connection the hold lives in memory; the reconnection takes the lock.
      await client?.query('select pg_advisory_lock_shared($1, $2)', lockKey(runId)).catch(() => {});
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        holds.remove(runId);
        await client?.query('select pg_advisory_unlock_shared($1, $2)', lockKey(runId)).catch(() => {});
      };
    },
    async callsInFlight(runId) {
      const [row] = await selectRows<{ held: boolean }>(
        db,
        sql`
        select exists (
          select 1 from pg_locks
           where locktype = 'advisory' and granted
             and database = (select oid from pg_database where datname = current_database())
             and classid = ${CALL_LOCK_CLASS}::int8::oid and objid = ${runId}::int8::oid and objsubid = 2
        ) as held`,
      );
      return row?.held === true;
    },
    listenerCount: () => listeners.count,
    async close() {
      closed = true;
      listeners.notices.clear();
      listeners.resyncs.clear();
      const current = client;
      client = null;
      await current?.end().catch(() => {});
      // A reconnection under way sees `closed` after its wait and gives up.
      await reconnecting;
    },
  };
}
