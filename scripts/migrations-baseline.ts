// npm run migrations:baseline: writes migrations/baseline/NNNN.sql, the schema after the latest
// migration as PostgreSQL's pg_dump prints it, from a scratch database migrated step by step (on
// DATABASE_URL's server, default the local one). New databases are created from it in one step; a
// test proves it ends in the same schema as the migrations. Run it after adding a migration (or
// leave the baseline behind: newer migrations are applied after it, one by one).
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../src/db/connection.ts';
import { BASELINE_DIR, loadMigrations, migrate } from '../src/db/migrator.ts';

const server = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const scratch = `runledger_baseline_${process.pid}`;
const url = new URL(server);
url.pathname = `/${scratch}`;

const admin = new pg.Client({ connectionString: server });
await admin.connect();
await admin.query(`CREATE DATABASE ${scratch}`);
try {
  const migrations = loadMigrations();
  const latest = migrations.at(-1);
  if (!latest) throw new Error('no migrations');
  const handle = await openDatabase({ url: url.toString() });
  try {
    await migrate(handle, { migrations, baseline: null });
  } finally {
    await handle.close();
  }
  const dump = spawnSync(
    'pg_dump',
    [
      '--schema-only',
      '--no-owner',
      '--no-privileges',
      '--no-comments',
      '--exclude-table=runledger_migrations',
      url.toString(),
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  if (dump.status !== 0) throw new Error(`pg_dump failed: ${dump.stderr}`);
  const version = String(latest.version).padStart(4, '0');
  const body = dump.stdout
    .split('\n')
    // Session settings of the dump (an empty search_path among them), its comments and psql's
    // commands: the migrator's session keeps its own settings, and runs plain SQL.
    .filter((line) => !/^(SET |SELECT pg_catalog\.set_config|--|\\)/.test(line))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  const header = `-- The schema after migration ${version}_${latest.name}, printed by pg_dump from a database
-- migrated step by step (npm run migrations:baseline). Never edited by hand: a fresh database is
-- created from it in one step, and a test proves both paths end in the same schema.

-- Functions come before the tables their bodies name, as pg_dump orders them: not checked until run.
SET LOCAL check_function_bodies = false;\n\n`;
  mkdirSync(BASELINE_DIR, { recursive: true });
  const file = join(BASELINE_DIR, `${version}.sql`);
  writeFileSync(file, `${header}${body}\n`);
  console.log(`wrote ${file} (${body.split('\n').length} lines)`);
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${scratch} WITH (FORCE)`);
  await admin.end();
}
