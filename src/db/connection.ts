import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { Logger, SQL } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import { schema } from '../../drizzle/schema.ts';
import { ENVIRONMENT, type EnvironmentName, environmentValue } from '../environment.ts';

/** One type for both drivers: the pg-core base they share. */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;

/** A single connection, for work that needs one session (migrations, locks). */
export interface Session {
  exec(script: string): Promise<void>;
  query<Row>(text: string, params?: unknown[]): Promise<Row[]>;
}

export interface DatabaseHandle {
  readonly db: Database;
  readonly backend: 'postgres' | 'pglite';
  /** Where the data lives, for log lines: a host/database or a directory (never a password). */
  readonly location: string;
  withSession<T>(work: (session: Session) => Promise<T>): Promise<T>;
  /** True while the database answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** A postgres:// URL; without one the embedded database is used. */
  url?: string | undefined;
  /** PGlite's data directory, or `memory://` for a throwaway database. */
  dataDir?: string | undefined;
  /** Called with every SQL statement the ORM sends. */
  onQuery?: ((sql: string) => void) | undefined;
  poolSize?: number;
  /** Bounds on every wait on PostgreSQL; defaults in DEFAULT_TIMEOUTS. */
  timeouts?: Partial<DatabaseTimeouts> | undefined;
}

/** How long the service waits on PostgreSQL, in milliseconds. No wait is unbounded. */
export interface DatabaseTimeouts {
  /** Opening a connection, and waiting for a free one in the pool (node-postgres bounds both with one setting). */
  connectMs: number;
  /** A statement, on the server (`statement_timeout`); also bounds waiting for a lock. */
  statementMs: number;
  /** A statement, on the client: the answer of a server that hangs without failing. */
  queryMs: number;
  /** A transaction left idle by its client (`idle_in_transaction_session_timeout`). */
  idleInTransactionMs: number;
  /** The readiness probe (`/ready`). */
  pingMs: number;
}

export const DEFAULT_TIMEOUTS: DatabaseTimeouts = {
  connectMs: ENVIRONMENT.DATABASE_CONNECT_TIMEOUT_MS.default,
  statementMs: ENVIRONMENT.DATABASE_STATEMENT_TIMEOUT_MS.default,
  queryMs: ENVIRONMENT.DATABASE_QUERY_TIMEOUT_MS.default,
  idleInTransactionMs: ENVIRONMENT.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS.default,
  pingMs: ENVIRONMENT.DATABASE_PING_TIMEOUT_MS.default,
};

/** The environment variable that overrides each timeout. */
export const TIMEOUT_ENV: Record<keyof DatabaseTimeouts, EnvironmentName> = {
  connectMs: 'DATABASE_CONNECT_TIMEOUT_MS',
  statementMs: 'DATABASE_STATEMENT_TIMEOUT_MS',
  queryMs: 'DATABASE_QUERY_TIMEOUT_MS',
  idleInTransactionMs: 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS',
  pingMs: 'DATABASE_PING_TIMEOUT_MS',
};

function timeoutsFromEnv(env: NodeJS.ProcessEnv): Partial<DatabaseTimeouts> {
  const timeouts: Partial<DatabaseTimeouts> = {};
  for (const [name, variable] of Object.entries(TIMEOUT_ENV) as Array<
    [keyof DatabaseTimeouts, EnvironmentName]
  >) {
    const raw = environmentValue(variable, env);
    if (raw === undefined) continue;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new Error(
        `${variable} must be a positive whole number of milliseconds, not ${JSON.stringify(raw)}`,
      );
    }
    timeouts[name] = value;
  }
  return timeouts;
}

export const DEFAULT_PGLITE_DIR: string = ENVIRONMENT.PGLITE_DATA_DIR.default;

/**
 * A PGlite data directory already initialised and migrated, made by the
 * build (`npm run build`, which `npm ci` and `npm start` run) beside the
 * compiled code: a fresh embedded database is unpacked from it instead of
 * running initdb and the migrations, about 1.3 s against 4.5. Where it is
 * missing (run from source) a fresh database is made as before.
 */
export const PGLITE_TEMPLATE = fileURLToPath(new URL('../../pglite-template.tar.gz', import.meta.url));

/** Reads the choice of database from the environment: DATABASE_URL, else PGLITE_DATA_DIR, else `.data/pglite`. */
export function optionsFromEnv(env: NodeJS.ProcessEnv = process.env): OpenOptions {
  return {
    url: environmentValue('DATABASE_URL', env),
    dataDir: environmentValue('PGLITE_DATA_DIR', env) ?? DEFAULT_PGLITE_DIR,
    timeouts: timeoutsFromEnv(env),
    ...poolSizeFromEnv(env),
  };
}

/** DATABASE_POOL_SIZE: connections to PostgreSQL at most (default DEFAULT_POOL_SIZE). */
function poolSizeFromEnv(env: NodeJS.ProcessEnv): { poolSize?: number } {
  const raw = environmentValue('DATABASE_POOL_SIZE', env);
  if (raw === undefined) return {};
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1 || value > 1_000) {
    throw new Error(`DATABASE_POOL_SIZE must be a whole number from 1 to 1000, not ${JSON.stringify(raw)}`);
  }
  return { poolSize: value };
}

/** Connections to PostgreSQL at most, unless DATABASE_POOL_SIZE says otherwise. */
export const DEFAULT_POOL_SIZE: number = ENVIRONMENT.DATABASE_POOL_SIZE.default;

export async function openDatabase(options: OpenOptions = optionsFromEnv()): Promise<DatabaseHandle> {
  const logger: Logger | undefined = options.onQuery
    ? { logQuery: (query) => options.onQuery?.(query) }
    : undefined;
  return options.url
    ? openPostgres(options.url, logger, options.poolSize, { ...DEFAULT_TIMEOUTS, ...options.timeouts })
    : openPglite(options.dataDir, logger);
}

function describeUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
}

/** A session's statements may take a day; node-postgres reads 0 as "use the pool's default". */
const SESSION_QUERY_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/** node-postgres reads a per-statement `query_timeout` that its types do not declare. */
function sessionStatement(text: string, values?: unknown[]): pg.QueryConfig {
  const config: pg.QueryConfig & { query_timeout: number } = {
    text,
    ...(values ? { values } : {}),
    query_timeout: SESSION_QUERY_TIMEOUT_MS,
  };
  return config;
}

/** Resolves with the work's answer, or rejects once `ms` have passed without one. */
function within<T>(ms: number, work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A pooled client must survive its server: node-postgres emits `error` on a
 * client whose backend dies, and an `error` event without a listener ends the
 * process. The pool's own listener covers idle clients only, so every client
 * gets one as it connects; the query in flight fails on its own, and the pool
 * drops the client when it is released. A client-side read timeout leaves the
 * connection mid-statement, so that connection is destroyed rather than reused.
 */
function guardClient(client: pg.PoolClient): void {
  client.on('error', () => {});
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const guarded = (...args: unknown[]): unknown => {
    const result = query(...args);
    if (result instanceof Promise) {
      return result.catch((error: unknown) => {
        if (error instanceof Error && error.message === 'Query read timeout') {
          (
            client as unknown as { connection?: { stream?: { destroy(): void } } }
          ).connection?.stream?.destroy();
        }
        throw error;
      });
    }
    return result;
  };
  client.query = guarded as typeof client.query;
}

async function openPostgres(
  url: string,
  logger: Logger | undefined,
  poolSize = DEFAULT_POOL_SIZE,
  timeouts: DatabaseTimeouts = DEFAULT_TIMEOUTS,
): Promise<DatabaseHandle> {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: timeouts.connectMs,
    statement_timeout: timeouts.statementMs,
    query_timeout: timeouts.queryMs,
    idle_in_transaction_session_timeout: timeouts.idleInTransactionMs,
    // Dead peers are found by TCP as well, not only by the next query.
    keepAlive: true,
  });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  pool.on('connect', guardClient);
  const db = drizzlePg(pool, { schema, logger }) as unknown as Database;
  return {
    db,
    backend: 'postgres',
    location: describeUrl(url),
    async withSession(work) {
      const client = await pool.connect();
      try {
        // A session does long work on purpose (migrations count whole tables): no statement timeout.
        await client.query('SET statement_timeout = 0');
        return await work({
          exec: async (script) => {
            await client.query(sessionStatement(script));
          },
          query: async <Row>(text: string, params: unknown[] = []) =>
            (await client.query(sessionStatement(text, params))).rows as Row[],
        });
      } finally {
        await client.query('RESET statement_timeout').catch(() => {});
        client.release();
      }
    },
    async ping() {
      try {
        await within(timeouts.pingMs, pool.query('select 1'), 'ping');
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      if (pool.ended || pool.ending) return;
      await pool.end();
    },
  };
}

/** The embedded database is open in another process; a second one would not see its writes, or would damage them. */
export class DatabaseInUseError extends Error {
  readonly code = 'DATABASE_IN_USE';
  constructor(dataDir: string, pid: number) {
    super(
      `the embedded database at ${dataDir} is in use by process ${pid} (the running service?): stop it first, or use PostgreSQL (DATABASE_URL)`,
    );
    this.name = 'DatabaseInUseError';
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** One process at a time on a PGlite data directory: a pid file beside it says which. */
function claimDataDir(dataDir: string): () => void {
  const lockFile = `${dataDir}.pid`;
  try {
    writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
  } catch {
    const holder = Number(readFileSync(lockFile, 'utf8'));
    if (holder !== process.pid && Number.isInteger(holder) && holder > 0 && isRunning(holder)) {
      throw new DatabaseInUseError(dataDir, holder);
    }
    // A stale pid file from a process that is gone.
    writeFileSync(lockFile, String(process.pid));
  }
  return () => rmSync(lockFile, { force: true });
}

async function openPglite(dataDir = DEFAULT_PGLITE_DIR, logger: Logger | undefined): Promise<DatabaseHandle> {
  const inMemory = dataDir.startsWith('memory://');
  if (!inMemory) mkdirSync(dirname(resolve(dataDir)), { recursive: true });
  const release = inMemory ? () => {} : claimDataDir(resolve(dataDir));
  let client: PGlite;
  try {
    const fromTemplate =
      !inMemory && !existsSync(join(resolve(dataDir), 'PG_VERSION')) && existsSync(PGLITE_TEMPLATE);
    client = await PGlite.create(inMemory ? dataDir : resolve(dataDir), {
      ...(fromTemplate ? { loadDataDir: new Blob([readFileSync(PGLITE_TEMPLATE)]) } : {}),
    });
  } catch (error) {
    release();
    throw error;
  }
  return pgliteHandle(client, inMemory ? dataDir : resolve(dataDir), release, logger);
}

/** A handle on an open PGlite client; `release` runs when it closes. */
export function pgliteHandle(
  client: PGlite,
  location: string,
  release: () => void,
  logger?: Logger,
): DatabaseHandle {
  const db = drizzlePglite(client, { schema, logger }) as unknown as Database;
  let closed = false;
  return {
    db,
    backend: 'pglite',
    location,
    // PGlite is one connection: its queue already serialises sessions.
    withSession: (work) =>
      work({
        exec: async (script) => {
          await client.exec(script);
        },
        query: async <Row>(text: string, params: unknown[] = []) =>
          (await client.query<Row>(text, params)).rows,
      }),
    async ping() {
      if (closed) return false;
      try {
        await client.query('select 1');
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
      release();
    },
  };
}

/** Runs a hand-written statement and returns its rows, whichever driver is underneath. */
export async function selectRows<Row>(db: Database, statement: SQL): Promise<Row[]> {
  const result: unknown = await db.execute(statement);
  if (result && typeof result === 'object' && 'rows' in result && Array.isArray(result.rows)) {
    return result.rows as Row[];
  }
  throw new Error('the driver returned no rows array');
}
