import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadRepeatables,
  type MigrationError,
  migrate,
  REPEATABLE_DIR,
  type Repeatable,
} from '../../src/db/migrator.ts';
import {
  durationsTableOf,
  GENERATED_REPEATABLES,
  ROLLUP_TABLES,
  rollupTable,
  withCatalogueTable,
} from '../../src/db/rollup-sql.ts';
import { OUTCOME_ROLLUPS, rollupNameOf } from '../../src/domain/outcome-rollups.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

/** The rollups are declared once, in the catalogue: what the database holds is made from it. */
describe('the rollup catalogue', () => {
  it('names each rollup by its key fields and unit, once', () => {
    for (const rollup of OUTCOME_ROLLUPS)
      expect(rollup.name).toBe(rollupNameOf(rollup.grain, rollup.dimensions));
    expect(new Set(OUTCOME_ROLLUPS.map((r) => r.name)).size).toBe(OUTCOME_ROLLUPS.length);
    expect(new Set(ROLLUP_TABLES).size).toBe(ROLLUP_TABLES.length);
  });

  it("is what the repeatable definitions and the design's table hold (npm run rollups:write)", () => {
    for (const [file, make] of Object.entries(GENERATED_REPEATABLES))
      expect([file, readFileSync(join(REPEATABLE_DIR, file), 'utf8')]).toEqual([file, make()]);
    const page = readFileSync(new URL('../../docs/statistics-design.md', import.meta.url), 'utf8');
    expect(withCatalogueTable(page)).toBe(page);
  });
});

describe.each(backendNames)('the rollups a migrated database holds (%s)', (backend) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
  });
  afterAll(async () => database?.dispose());

  const query = <Row>(text: string) => database.handle.withSession((s) => s.query<Row>(text));

  it('are the tables of the catalogue, and no other (the retired ones dropped)', async () => {
    const tables = await query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables
        WHERE schemaname = current_schema() AND (tablename LIKE 'stats\\_%' OR tablename LIKE 'tool\\_outcome\\_%')
        ORDER BY 1`,
    );
    expect(tables.map((t) => t.name)).toEqual([...ROLLUP_TABLES].sort());
  });

  it('have every index the catalogue declares, on the columns it lists', async () => {
    const indexes = await query<{ name: string; definition: string }>(
      `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
        WHERE schemaname = current_schema() AND tablename LIKE 'stats\\_%'`,
    );
    const byName = new Map(indexes.map((index) => [index.name, index.definition]));
    for (const rollup of OUTCOME_ROLLUPS) {
      expect(byName.has(`${rollupTable(rollup)}_pkey`)).toBe(true);
      for (const index of rollup.indexes ?? []) {
        const onTable = index.kind !== 'fields' || index.durations !== 'only';
        if (onTable) expect(byName.has(`${rollupTable(rollup)}_${index.name}`), index.name).toBe(true);
        const durations = durationsTableOf(rollup);
        if (index.kind === 'fields' && index.durations && durations && rollup.durations === 'beside')
          expect(byName.has(`${durations}_${index.name}`), `${durations} ${index.name}`).toBe(true);
      }
    }
  });

  it('were made by the repeatable definitions as they are now', async () => {
    const applied = await query<{ name: string; checksum: string }>(
      'SELECT name, checksum FROM runledger_repeatables ORDER BY name',
    );
    expect(applied).toEqual(loadRepeatables().map(({ name, checksum }) => ({ name, checksum })));
  });

  it('applies a repeatable definition again when its text changes, and only then; a failing one not at all', async () => {
    const probe = (body: string): Repeatable => {
      const sql = `CREATE OR REPLACE FUNCTION repeatable_probe() RETURNS int LANGUAGE sql AS $$ SELECT ${body} $$;`;
      return { name: '99_repeatable_probe', sql, checksum: createHash('sha256').update(sql).digest('hex') };
    };
    const answer = async () => (await query<{ n: number }>('SELECT repeatable_probe() AS n'))[0]?.n;
    const run = async (repeatables: Repeatable[]) => {
      const lines: string[] = [];
      await migrate(database.handle, { repeatables, log: (line) => lines.push(line) });
      return lines;
    };
    const current = loadRepeatables();
    expect(await run([...current, probe('1')])).toEqual([
      'applying 99_repeatable_probe again (its definition changed)',
      'applied 99_repeatable_probe again (its definition changed)',
    ]);
    expect(await answer()).toBe(1);
    expect(await run([...current, probe('1')])).toEqual([]);
    expect(await run([...current, probe('2')])).toEqual([
      'applying 99_repeatable_probe again (its definition changed)',
      'applied 99_repeatable_probe again (its definition changed)',
    ]);
    expect(await answer()).toBe(2);
    const refusal = await run([
      ...current,
      probe('3'),
      { name: '99_zz_broken', sql: 'SELECT 1/0;', checksum: 'x' },
    ]).catch((error: unknown) => error);
    expect((refusal as MigrationError).code).toBe('MIGRATION_FAILED');
    // Nothing of the failed run stands: the probe is as it was, and recorded as it was.
    expect(await answer()).toBe(2);
    expect(await run([...current, probe('2')])).toEqual([]);
    await database.handle.withSession((s) =>
      s.exec(
        "DROP FUNCTION repeatable_probe(); DELETE FROM runledger_repeatables WHERE name = '99_repeatable_probe';",
      ),
    );
  });
});
