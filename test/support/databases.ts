import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { type DatabaseHandle, type OpenOptions, openDatabase } from '../../src/db/connection.ts';
import { migrate } from '../../src/db/migrator.ts';

/**
 * The backends every database test runs on: embedded PGlite always, and the
 * real PostgreSQL named by DATABASE_URL whenever it is set. A DATABASE_URL that
 * does not answer fails the run; it is never skipped.
 */
export type BackendName = 'pglite' | 'postgres';

export interface TestDatabase {
  readonly handle: DatabaseHandle;
  /** The connection URL, on PostgreSQL. */
  readonly url?: string;
  /** Closes the handle and, on PostgreSQL, drops the database it created. */
  dispose(): Promise<void>;
}

export interface OpenTestOptions {
  /** Migrate up to this version (default: latest); 0 applies nothing. */
  migrateTo?: number;
  onQuery?: OpenOptions['onQuery'];
}

const serverUrl = process.env.DATABASE_URL || undefined;

export const backendNames: BackendName[] = serverUrl ? ['pglite', 'postgres'] : ['pglite'];

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  if (!serverUrl) throw new Error('DATABASE_URL is not set');
  const client = new pg.Client({ connectionString: serverUrl });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`DATABASE_URL is set but PostgreSQL does not answer: ${String(error)}`);
  }
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function openTestDatabase(
  backend: BackendName,
  options: OpenTestOptions = {},
): Promise<TestDatabase> {
  let handle: DatabaseHandle;
  let url: string | undefined;
  let drop = async () => {};
  if (backend === 'pglite') {
    handle = await openDatabase({ dataDir: 'memory://', onQuery: options.onQuery });
  } else {
    if (!serverUrl) throw new Error('the postgres backend needs DATABASE_URL');
    const name = `runledger_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin((client) => client.query(`CREATE DATABASE ${name}`));
    url = withDatabase(serverUrl, name);
    handle = await openDatabase({
      url,
      onQuery: options.onQuery,
      poolSize: 20,
    });
    drop = () =>
      admin(async (client) => void (await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
  }
  const target = options.migrateTo;
  if (target !== 0) await migrate(handle, target === undefined ? {} : { target });
  return {
    handle,
    ...(url ? { url } : {}),
    async dispose() {
      await handle.close();
      await drop();
    },
  };
}
