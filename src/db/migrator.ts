import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DatabaseHandle, Session } from './connection.ts';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
/** The baselines: `NNNN.sql`, the schema after migration NNNN in one script (scripts/migrations-baseline.ts). */
export const BASELINE_DIR = fileURLToPath(new URL('../../migrations/baseline/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export class MigrationError extends Error {
  constructor(
    readonly code: 'MIGRATION_CHANGED' | 'MIGRATION_UNKNOWN' | 'MIGRATION_FAILED',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;
// Any constant serves, as long as every migrator takes the same one.
const MIGRATION_LOCK_KEY = 7_140_061_913;

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => FILE_NAME.test(file))
    .sort()
    .map((file) => {
      const [, version = '', name = ''] = FILE_NAME.exec(file) ?? [];
      const sql = readFileSync(`${dir}/${file}`, 'utf8');
      return {
        version: Number(version),
        name,
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    });
}

/**
 * Repeatable definitions (`migrations/repeatable/NN_name.sql`): functions and
 * derived tables that change, each stated once in a file of its own and
 * applied again whenever its text changes, after every versioned migration,
 * in the order of their names. A versioned migration never depends on them.
 */
export const REPEATABLE_DIR = fileURLToPath(new URL('../../migrations/repeatable/', import.meta.url));
const REPEATABLE_NAME = /^(\d{2})_([a-z0-9_]+)\.sql$/;

export interface Repeatable {
  name: string;
  sql: string;
  checksum: string;
}

export function loadRepeatables(dir = REPEATABLE_DIR): Repeatable[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => REPEATABLE_NAME.test(file))
    .sort()
    .map((file) => {
      const sql = readFileSync(`${dir}/${file}`, 'utf8');
      return {
        name: file.replace(/\.sql$/, ''),
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    });
}

/** The schema after migration `version`, in one script: what a fresh database is created from. */
export interface Baseline {
  version: number;
  sql: string;
}

const BASELINE_NAME = /^(\d{4})\.sql$/;

/** The newest baseline, or null without any. */
export function loadBaseline(dir = BASELINE_DIR): Baseline | null {
  if (!existsSync(dir)) return null;
  const file = readdirSync(dir)
    .filter((name) => BASELINE_NAME.test(name))
    .sort()
    .at(-1);
  if (!file) return null;
  return { version: Number(BASELINE_NAME.exec(file)?.[1]), sql: readFileSync(`${dir}/${file}`, 'utf8') };
}

export interface MigrateOptions {
  /** Apply up to and including this version (default: all). */
  target?: number;
  log?: (line: string) => void;
  migrations?: Migration[];
  /** A fresh database's one step (default: the newest in migrations/baseline); null: every migration, one by one. */
  baseline?: Baseline | null;
  /** The repeatable definitions (default: migrations/repeatable), applied once every migration is. */
  repeatables?: Repeatable[];
}

interface AppliedRow {
  version: number;
  checksum: string;
}

/**
 * Applies the pending migrations in order, each in its own transaction.
 * Applying twice is a no-op; a migration whose file changed after it was
 * applied stops everything rather than leave two versions of the truth.
 */
export async function migrate(handle: DatabaseHandle, options: MigrateOptions = {}): Promise<Migration[]> {
  const migrations = options.migrations ?? loadMigrations();
  const target = options.target ?? Number.POSITIVE_INFINITY;
  const log = options.log ?? (() => {});
  return handle.withSession(async (session) => {
    await session.exec(`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    try {
      await session.exec(`CREATE TABLE IF NOT EXISTS runledger_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamp with time zone NOT NULL DEFAULT now()
      )`);
      const applied = new Map(
        (await session.query<AppliedRow>('SELECT version, checksum FROM runledger_migrations')).map((row) => [
          row.version,
          row.checksum,
        ]),
      );
      verifyHistory(migrations, applied);
      const pending = migrations.filter((m) => !applied.has(m.version) && m.version <= target);
      const baseline = options.baseline === undefined ? loadBaseline() : options.baseline;
      const covered =
        baseline && applied.size === 0 && baseline.version <= target && (await isEmpty(session))
          ? pending.filter((m) => m.version <= baseline.version)
          : [];
      const last = covered.at(-1);
      if (baseline && last) {
        await applyBaseline(session, baseline, covered);
        log(`created from the baseline of ${label(last)} (${covered.length} migrations in one step)`);
      }
      for (const migration of pending.filter((m) => !covered.includes(m))) {
        await applyOne(session, migration);
        log(`applied ${label(migration)}`);
      }
      const latest = Math.max(0, ...migrations.map((m) => m.version));
      if (target >= latest) {
        for (const name of await applyRepeatables(session, options.repeatables ?? loadRepeatables(), log))
          log(`applied ${name} again (its definition changed)`);
      }
      return pending;
    } finally {
      await session.exec(`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`);
    }
  });
}

function label(migration: Migration): string {
  return `${String(migration.version).padStart(4, '0')}_${migration.name}`;
}

function verifyHistory(migrations: Migration[], applied: Map<number, string>): void {
  const known = new Map(migrations.map((m) => [m.version, m]));
  for (const [version, checksum] of applied) {
    const migration = known.get(version);
    if (!migration) {
      throw new MigrationError(
        'MIGRATION_UNKNOWN',
        `the database has migration ${version}, which this build lacks`,
      );
    }
    if (migration.checksum !== checksum) {
      throw new MigrationError(
        'MIGRATION_CHANGED',
        `migration ${label(migration)} changed after it was applied`,
      );
    }
  }
}

/** Whether the database holds none of the service's tables: only then is it created from a baseline. */
async function isEmpty(session: Session): Promise<boolean> {
  const [row] = await session.query<{ tables: number }>(
    `SELECT count(*)::int AS tables FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'runledger_migrations'`,
  );
  return row?.tables === 0;
}

/**
 * The baseline and the record of every migration it stands for, in one
 * transaction: a database that later upgrades step by step goes on from there.
 */
async function applyBaseline(session: Session, baseline: Baseline, covered: Migration[]): Promise<void> {
  await session.exec('BEGIN');
  try {
    await session.exec(baseline.sql);
    for (const migration of covered)
      await session.query('INSERT INTO runledger_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
        migration.version,
        migration.name,
        migration.checksum,
      ]);
    await session.exec('COMMIT');
  } catch (error) {
    await session.exec('ROLLBACK');
    throw new MigrationError(
      'MIGRATION_FAILED',
      `the baseline ${baseline.version} failed: ${String(error)}`,
      {
        cause: error,
      },
    );
  }
}

async function applyOne(session: Session, migration: Migration): Promise<void> {
  await session.exec('BEGIN');
  try {
    await session.exec(migration.sql);
    await session.query('INSERT INTO runledger_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
      migration.version,
      migration.name,
      migration.checksum,
    ]);
    await session.exec('COMMIT');
  } catch (error) {
    await session.exec('ROLLBACK');
    throw new MigrationError('MIGRATION_FAILED', `migration ${label(migration)} failed: ${String(error)}`, {
      cause: error,
    });
  }
}

/**
 * The repeatable definitions whose text differs from the one applied last,
 * applied in one transaction, in order: a definition that depends on another
 * (a table made again and refilled by a function) sees it as changed. Each is
 * said before it runs: the statistics' tables, made again, are counted from
 * every tool call, minutes on a large ledger.
 */
async function applyRepeatables(
  session: Session,
  repeatables: Repeatable[],
  log: (line: string) => void,
): Promise<string[]> {
  await session.exec(`CREATE TABLE IF NOT EXISTS runledger_repeatables (
    name text PRIMARY KEY,
    checksum text NOT NULL,
    applied_at timestamp with time zone NOT NULL DEFAULT now()
  )`);
  const applied = new Map(
    (
      await session.query<{ name: string; checksum: string }>(
        'SELECT name, checksum FROM runledger_repeatables',
      )
    ).map((row) => [row.name, row.checksum]),
  );
  const changed = repeatables.filter((r) => applied.get(r.name) !== r.checksum);
  if (changed.length === 0) return [];
  await session.exec('BEGIN');
  try {
    for (const repeatable of changed) {
      log(`applying ${repeatable.name} again (its definition changed)`);
      await session.exec(repeatable.sql);
      await session.query(
        `INSERT INTO runledger_repeatables (name, checksum) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()`,
        [repeatable.name, repeatable.checksum],
      );
    }
    await session.exec('COMMIT');
  } catch (error) {
    await session.exec('ROLLBACK');
    throw new MigrationError('MIGRATION_FAILED', `the repeatable definitions failed: ${String(error)}`, {
      cause: error,
    });
  }
  return changed.map((r) => r.name);
}

/** The version the database is at, 0 when nothing is applied. */
export async function currentVersion(handle: DatabaseHandle): Promise<number> {
  return handle.withSession(async (session) => {
    const rows = await session.query<{ version: number | null }>(
      "SELECT CASE WHEN to_regclass('runledger_migrations') IS NULL THEN NULL ELSE 0 END AS version",
    );
    if (rows[0]?.version === null) return 0;
    const [row] = await session.query<{ version: number }>(
      'SELECT coalesce(max(version), 0)::int AS version FROM runledger_migrations',
    );
    return row?.version ?? 0;
  });
}
