// Twins: the order of names is written twice, as `compareNames` in src/domain/name-order.ts (the
// domain's order of groups by key) and as `collate "C"` in the statements that rank groups in the
// database (src/db/outcome-stats.ts). Both must be code point order, which JavaScript's `<` is not.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
import { compareNames } from '../../src/domain/name-order.ts';
import { compareByCodePoints } from '../support/code-points.ts';
import { backendNames, openTestDatabase } from '../support/databases.ts';

/** Names whose orders differ: by UTF-16 unit '😀' (D83D DE00) sorts before '\uFFFD', by code point after it. */
const NAMES = [
  '',
  ' ',
  'A',
  'Z',
  '_',
  'a',
  'a ',
  'aa',
  'z',
  '~',
  'é',
  'Käse',
  'Kase',
  'ß',
  'ﬁ',
  '\u00a0',
  '\u0100',
  '\u07ff',
  '\u0800',
  '\ud7ff',
  '\ue000',
  '\uf8ff',
  '\ufb01',
  '\ufffd',
  '\uffff',
  '😀',
  '😀a',
  '\u{10000}',
  '\u{10ffff}',
  'x😀',
  'x\ufffd',
  'x\uffff',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'server_10',
  'server_9',
];

describe.each(backendNames)('compareNames (TypeScript) orders names as collate "C" does (%s)', (backend) => {
  it('for names where code point and UTF-16 order differ, and random ones', async () => {
    const database = await openTestDatabase(backend);
    try {
      const alphabet = [
        'a',
        'b',
        'Z',
        'é',
        '\ue000',
        '\ufffd',
        '\uffff',
        '😀',
        '\u{10000}',
        '\u{1f9ea}',
        'ﬁ',
      ];
      let seed = 7;
      const random = () => {
        seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
        return seed / 2_147_483_648;
      };
      const names = new Set(NAMES);
      while (names.size < NAMES.length + 300) {
        const length = 1 + Math.floor(random() * 4);
        names.add(Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join(''));
      }
      const values = [...names];
      const arrayLiteral = `{${values.map((value) => `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`;
      for (const descending of [false, true]) {
        const rows = await selectRows<{ name: string }>(
          database.handle.db,
          sql`select name from unnest(${arrayLiteral}::text[]) as name
               order by name collate "C" ${sql.raw(descending ? 'desc' : 'asc')}`,
        );
        const sorted = [...values].sort((a, b) => (descending ? -1 : 1) * compareNames(a, b));
        expect(rows.map((row) => row.name)).toEqual(sorted);
      }
      // The order `<` gives differs: the test would fail if compareNames were `<`.
      const byUnits = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      expect(byUnits).not.toEqual([...values].sort(compareNames));
    } finally {
      await database.dispose();
    }
  });
});

describe('compareNames', () => {
  it('orders by code point, as comparing the code points one by one does', () => {
    for (const a of NAMES)
      for (const b of NAMES)
        expect([a, b, Math.sign(compareNames(a, b))]).toEqual([a, b, Math.sign(compareByCodePoints(a, b))]);
    expect(compareNames('😀', '\ufffd')).toBeGreaterThan(0);
    expect('😀' < '\ufffd').toBe(true);
  });
});
