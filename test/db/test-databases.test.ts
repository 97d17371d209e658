import { describe, expect, it } from 'vitest';
import { currentVersion, loadMigrations, migrate } from '../../src/db/migrator.ts';
import { describeSchema } from '../support/catalog.ts';
import { backendNames, openTestDatabase } from '../support/databases.ts';

const latest = Math.max(...loadMigrations().map((m) => m.version));

// Test databases are copies of a template migrated once per run (test/support/databases.ts): a copy must
// be what migrating a database of its own makes, or every test on it would test something else.
describe.each(backendNames)('a test database (%s)', (backend) => {
  it('has the schema and version of one migrated on its own, with nothing left to apply', async () => {
    const copy = await openTestDatabase(backend);
    const own = await openTestDatabase(backend, { migrateTo: 0 });
    try {
      await migrate(own.handle);
      expect(await migrate(copy.handle)).toEqual([]);
      expect(await currentVersion(copy.handle)).toBe(latest);
      expect(await describeSchema(copy.handle)).toEqual(await describeSchema(own.handle));
    } finally {
      await copy.dispose();
      await own.dispose();
    }
  }, 60_000);
});
