// Twins: jsonb's order of object keys is written twice, by PostgreSQL (a value read back from a jsonb
// column) and as `inJsonbKeyOrder` in src/db/jsonb.ts (the form a write answers with, so that a
// replay, which reads the stored row, answers the same bytes). Both must agree for every key.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
import { inJsonbKeyOrder } from '../../src/db/jsonb.ts';
import { backendNames, openTestDatabase } from '../support/databases.ts';

/** Keys whose orders differ by length in characters, in UTF-8 bytes, by UTF-16 unit and by code point. */
const KEYS = [
  'b',
  'a',
  'aa',
  'Z',
  '_',
  'é',
  'ee',
  '😀',
  'xyz',
  '\ufffd',
  '\u{10000}',
  'zz',
  'ß',
  '10',
  '2',
  '-1',
  '1.5',
  '',
];

/** A deterministic stream of objects, nested in objects and arrays, with keys in every order. */
function* objects(count: number): Generator<Record<string, unknown>> {
  let seed = 11;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const build = (depth: number): Record<string, unknown> => {
    const object: Record<string, unknown> = {};
    const size = 1 + Math.floor(random() * 6);
    for (let i = 0; i < size; i += 1) {
      const key = `${KEYS[Math.floor(random() * KEYS.length)]}${random() < 0.3 ? KEYS[Math.floor(random() * KEYS.length)] : ''}`;
      const roll = random();
      object[key] =
        depth < 3 && roll < 0.25
          ? build(depth + 1)
          : depth < 3 && roll < 0.4
            ? [1, build(depth + 1), 'x']
            : roll < 0.7
              ? Math.floor(random() * 1000)
              : `v${i}`;
    }
    return object;
  };
  for (let n = 0; n < count; n += 1) yield build(0);
}

describe.each(backendNames)('inJsonbKeyOrder (TypeScript) orders keys as jsonb does (%s)', (backend) => {
  it('for keys where the orders differ, nested, and random objects', async () => {
    const database = await openTestDatabase(backend);
    try {
      const values = [...objects(300)];
      const rows = await selectRows<{ i: number; value: string }>(
        database.handle.db,
        sql`select (e.i - 1)::int as i, e.value::text as value
              from jsonb_array_elements(${JSON.stringify(values)}::jsonb) with ordinality as e(value, i)
             order by e.i`,
      );
      expect(rows).toHaveLength(values.length);
      for (const row of rows) {
        // Both through JavaScript objects, as the API answers them: the stored form parsed, and ours.
        expect(JSON.stringify(inJsonbKeyOrder(values[row.i]))).toBe(JSON.stringify(JSON.parse(row.value)));
      }
      // And ours differs from the order the objects were built in, or the test would prove nothing.
      expect(values.some((value) => JSON.stringify(value) !== JSON.stringify(inJsonbKeyOrder(value)))).toBe(
        true,
      );
    } finally {
      await database.dispose();
    }
  });
});
