import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Logger, SQL } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import { schema } from '../../drizzle/schema.ts';

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
}

export const DEFAULT_PGLITE_DIR = '.data/pglite';

/** Reads the choice of database from the environment: DATABASE_URL, else PGLITE_DATA_DIR, else `.data/pglite`. */
export function optionsFromEnv(env: NodeJS.ProcessEnv = process.env): OpenOptions {
  return { url: env.DATABASE_URL || undefined, dataDir: env.PGLITE_DATA_DIR || DEFAULT_PGLITE_DIR };
}

export async function openDatabase(options: OpenOptions = optionsFromEnv()): Promise<DatabaseHandle> {
  const logger: Logger | undefined = options.onQuery
    ? { logQuery: (query) => options.onQuery?.(query) }
    : undefined;
  return options.url
    ? openPostgres(options.url, logger, options.poolSize)
    : openPglite(options.dataDir, logger);
}

function describeUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
}

async function openPostgres(url: string, logger: Logger | undefined, poolSize = 10): Promise<DatabaseHandle> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  const db = drizzlePg(pool, { schema, logger }) as unknown as Database;
  return {
    db,
    backend: 'postgres',
    location: describeUrl(url),
    async withSession(work) {
      const client = await pool.connect();
      try {
        return await work({
          exec: async (script) => {
            await client.query(script);
          },
          query: async <Row>(text: string, params: unknown[] = []) =>
            (await client.query(text, params)).rows as Row[],
        });
      } finally {
        client.release();
      }
    },
    async ping() {
      try {
        await pool.query('select 1');
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
    client = await PGlite.create(inMemory ? dataDir : resolve(dataDir));
  } catch (error) {
    release();
    throw error;
  }
  const db = drizzlePglite(client, { schema, logger }) as unknown as Database;
  let closed = false;
  return {
    db,
    backend: 'pglite',
    location: inMemory ? dataDir : resolve(dataDir),
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
