import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { Logger } from 'drizzle-orm';
import pg from 'pg';
import { inject } from 'vitest';
import {
  type DatabaseHandle,
  type OpenOptions,
  openDatabase,
  pgliteHandle,
} from '../../src/db/connection.ts';
import { MIGRATIONS_DIR, migrate } from '../../src/db/migrator.ts';

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

/** A migrated PostgreSQL database to copy, and the migrationsHash() it was migrated at. */
export interface PostgresTemplate {
  name: string;
  migrations: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The migrated database a PostgreSQL test database is copied from, made by the global setup. */
    postgresTemplate: PostgresTemplate | undefined;
  }
}

const serverUrl = process.env.DATABASE_URL || undefined;

export const backendNames: BackendName[] = serverUrl ? ['pglite', 'postgres'] : ['pglite'];

const root = fileURLToPath(new URL('../..', import.meta.url));
const PGLITE_TEMPLATES = join(root, 'test', '.generated', 'pglite');

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

/** The SQL the migrator reads: the migrations, the baselines and the repeatable definitions. */
function sqlFilesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => join(dir, file));
}

/** What a migrated database depends on: the migrations, the migrator and the PGlite build that wrote its files. */
function migrationsHash(): string {
  const hash = createHash('sha256');
  const add = (name: string, text: string) => hash.update(`${name}\0${text.length}\0${text}\0`);
  for (const file of sqlFilesUnder(MIGRATIONS_DIR)) add(relative(root, file), readFileSync(file, 'utf8'));
  add('migrator', readFileSync(join(root, 'src', 'db', 'migrator.ts'), 'utf8'));
  add('pglite', readFileSync(join(root, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8'));
  return hash.digest('hex').slice(0, 16);
}

/** The two PGlite templates: a data directory as initdb leaves it, and one migrated to date. */
type PgliteTemplate = 'initdb' | 'migrated';

function pgliteTemplateFile(kind: PgliteTemplate, hash: string): string {
  return join(PGLITE_TEMPLATES, `${hash}.${kind}.tar`);
}

/** Renamed into place: a concurrent run reads either no file or a whole one. */
async function writeDump(client: PGlite, file: string): Promise<void> {
  const dump = await client.dumpDataDir('none');
  const partial = `${file}.${process.pid}.partial`;
  writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
  renameSync(partial, file);
}

/**
 * The files of two PGlite data directories, as uncompressed tars (about twice
 * as quick to unpack as the build's gzipped one): one just initialised, for a
 * database at an earlier version or empty, and one migrated to date. Made when
 * the migrations change, by the global setup or by the first test that needs
 * them; every embedded test database is unpacked from one of them instead of
 * running initdb, and the migrations, again.
 */
export async function ensurePgliteTemplates(): Promise<Record<PgliteTemplate, string>> {
  const hash = migrationsHash();
  const files = {
    initdb: pgliteTemplateFile('initdb', hash),
    migrated: pgliteTemplateFile('migrated', hash),
  };
  if (existsSync(files.initdb) && existsSync(files.migrated)) return files;
  mkdirSync(PGLITE_TEMPLATES, { recursive: true });
  const client = await PGlite.create();
  try {
    await writeDump(client, files.initdb);
    await migrate(pgliteHandle(client, 'memory://', () => {}));
    await writeDump(client, files.migrated);
  } finally {
    await client.close();
  }
  // Templates of older migrations are never read again.
  const current = Object.values(files).map((file) => relative(PGLITE_TEMPLATES, file));
  for (const old of readdirSync(PGLITE_TEMPLATES)) {
    if (!current.includes(old) && !old.endsWith('.partial'))
      rmSync(join(PGLITE_TEMPLATES, old), { force: true });
  }
  return files;
}

/** Read once per test file: a file opens several databases. */
const pgliteTemplates = new Map<PgliteTemplate, Promise<Blob>>();

function pgliteTemplateBlob(kind: PgliteTemplate): Promise<Blob> {
  let blob = pgliteTemplates.get(kind);
  if (!blob) {
    blob = ensurePgliteTemplates().then((files) => new Blob([readFileSync(files[kind])]));
    // A failure is the one test's to report; the next one tries again.
    blob.catch(() => pgliteTemplates.delete(kind));
    pgliteTemplates.set(kind, blob);
  }
  return blob;
}

/** A fresh in-memory PGlite database, unpacked from a template. */
async function openPgliteFromTemplate(
  kind: PgliteTemplate,
  onQuery: OpenOptions['onQuery'],
): Promise<DatabaseHandle> {
  const client = await PGlite.create('memory://', { loadDataDir: await pgliteTemplateBlob(kind) });
  const logger: Logger | undefined = onQuery ? { logQuery: (query) => onQuery(query) } : undefined;
  return pgliteHandle(client, 'memory://', () => {}, logger);
}

/** Unpacks the migrated template into a PGlite data directory on disk, for a service started on it. */
export async function seedPgliteDir(dataDir: string): Promise<void> {
  const client = await PGlite.create(dataDir, { loadDataDir: await pgliteTemplateBlob('migrated') });
  await client.close();
}

const POSTGRES_TEMPLATE_PREFIX = 'runledger_template_';

async function databaseExists(name: string): Promise<boolean> {
  return admin(
    async (client) =>
      (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1,
  );
}

/**
 * A migrated database on the PostgreSQL of DATABASE_URL, for the test
 * databases to be copied from (`CREATE DATABASE ... TEMPLATE`, tens of
 * milliseconds) instead of each migrating its own. Named by migrationsHash()
 * and kept between runs, like the PGlite templates: migrating it takes seconds
 * on a busy server, which a run of one test file would otherwise pay every
 * time. Made under another name and renamed once migrated, so that a template
 * of that name is always whole; it takes no connections, so that copying it
 * never finds it in use. Templates of other migrations are dropped. Undefined
 * without DATABASE_URL.
 */
export async function ensurePostgresTemplate(): Promise<PostgresTemplate | undefined> {
  if (!serverUrl) return undefined;
  const migrations = migrationsHash();
  const name = `${POSTGRES_TEMPLATE_PREFIX}${migrations}`;
  if (!(await databaseExists(name))) {
    const building = `runledger_building_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin((client) => client.query(`CREATE DATABASE ${building}`));
    try {
      const handle = await openDatabase({ url: withDatabase(serverUrl, building) });
      try {
        await migrate(handle);
      } finally {
        await handle.close();
      }
      await admin(async (client) => {
        await client.query(`ALTER DATABASE ${building} WITH ALLOW_CONNECTIONS false`);
        await client.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      });
    } catch (error) {
      await admin((client) => client.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`));
      // A concurrent run made the same template first.
      if (!(await databaseExists(name))) throw error;
    }
  }
  // A run that still copies one of these falls back to migrating (openTestDatabase).
  await admin(async (client) => {
    const { rows } = await client.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE starts_with(datname, $1) AND datname <> $2',
      [POSTGRES_TEMPLATE_PREFIX, name],
    );
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  });
  return { name, migrations };
}

/**
 * The PostgreSQL template the global setup made: none outside a run whose
 * global setup made one, nor once the migrations have changed since (then a
 * database is migrated of its own, as an edited migration would otherwise be
 * refused).
 */
function postgresTemplate(): string | undefined {
  let template: PostgresTemplate | undefined;
  try {
    template = inject('postgresTemplate');
  } catch {
    return undefined;
  }
  return template && template.migrations === migrationsHash() ? template.name : undefined;
}

/** Creates an empty database, or a copy of `template`; one whose template is gone (dropped by a run on other migrations) is made empty. */
async function createDatabase(name: string, template: string | undefined): Promise<void> {
  await admin(async (client) => {
    if (template) {
      try {
        await client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        return;
      } catch (error) {
        if ((error as { code?: unknown }).code !== '3D000') throw error;
      }
    }
    await client.query(`CREATE DATABASE ${name}`);
  });
}

export async function openTestDatabase(
  backend: BackendName,
  options: OpenTestOptions = {},
): Promise<TestDatabase> {
  const target = options.migrateTo;
  // Only a database at the latest version is a copy of a migrated one; an earlier version is migrated to.
  const latest = target === undefined;
  let handle: DatabaseHandle;
  let url: string | undefined;
  let drop = async () => {};
  if (backend === 'pglite') {
    handle = await openPgliteFromTemplate(latest ? 'migrated' : 'initdb', options.onQuery);
  } else {
    if (!serverUrl) throw new Error('the postgres backend needs DATABASE_URL');
    const name = `runledger_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const template = latest ? postgresTemplate() : undefined;
    await createDatabase(name, template);
    url = withDatabase(serverUrl, name);
    handle = await openDatabase({
      url,
      onQuery: options.onQuery,
      poolSize: 20,
    });
    drop = () =>
      admin(async (client) => void (await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
  }
  try {
    // On a copy this applies nothing, and still refuses a template whose migrations have since changed.
    if (target !== 0) await migrate(handle, latest ? {} : { target });
  } catch (error) {
    await handle.close();
    await drop();
    throw error;
  }
  return {
    handle,
    ...(url ? { url } : {}),
    async dispose() {
      await handle.close();
      await drop();
    },
  };
}
