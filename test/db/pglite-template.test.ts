import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { pgliteHandle } from '../../src/db/connection.ts';
import { currentVersion, loadMigrations, migrate } from '../../src/db/migrator.ts';
import { writePgliteTemplate } from '../../src/db/pglite-template.ts';
import { describeSchema } from '../support/catalog.ts';

const dir = mkdtempSync(join(tmpdir(), 'runledger-template-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the embedded database template', () => {
  it('unpacks to the schema and history the migrations make, with nothing left to apply', async () => {
    const file = join(dir, 'template.tar.gz');
    const latest = Math.max(...loadMigrations().map((m) => m.version));
    expect(await writePgliteTemplate(file)).toBe(latest);

    const unpacked = await PGlite.create(join(dir, 'unpacked'), {
      loadDataDir: new Blob([readFileSync(file)]),
    });
    const migrated = await PGlite.create();
    try {
      const fromTemplate = pgliteHandle(unpacked, 'template', () => {});
      const fromMigrations = pgliteHandle(migrated, 'memory://', () => {});
      await migrate(fromMigrations);
      expect(await migrate(fromTemplate)).toEqual([]);
      expect(await currentVersion(fromTemplate)).toBe(latest);
      expect(await describeSchema(fromTemplate)).toEqual(await describeSchema(fromMigrations));
    } finally {
      await unpacked.close();
      await migrated.close();
    }
  }, 60_000);
});
