// Twins: a histogram of durations is stored trimmed to its buckets with calls (the SQL functions
// `tool_duration_histogram` and `tool_duration_histogram_add`, migrations/repeatable/05) and read
// back as DURATION_BUCKETS counts, added bucket by bucket (src/domain/outcome-stats.ts). Whatever
// the bounds, the stored histogram must hold the calls the whole one does, and two added must hold
// their sum. The fold makes a key's histogram of one bucket's calls without the function
// (HISTOGRAM_OF_PAIRS, src/db/rollup-sql.ts): the same array as the function's, or the two disagree.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
import { HISTOGRAM_OF_PAIRS } from '../../src/db/rollup-sql.ts';
import { DURATION_BUCKETS } from '../../src/domain/duration-histogram.ts';
import { backendNames, openTestDatabase } from '../support/databases.ts';

/** A small deterministic generator: the cases are the same on every run. */
function generator(seed: number) {
  let state = seed;
  return (below: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state % below;
  };
}

type Pairs = Array<[bucket: number, calls: number]>;

/** Calls in a few distinct buckets, some of them zero or negative (a call taken away). */
function randomPairs(next: (below: number) => number): Pairs {
  const buckets = new Set<number>();
  const count = next(5);
  while (buckets.size < count) buckets.add(next(DURATION_BUCKETS));
  return [...buckets].map((bucket) => [bucket, next(5) - 1]);
}

const whole = (pairs: Pairs) => {
  const histogram = new Array<number>(DURATION_BUCKETS).fill(0);
  for (const [bucket, calls] of pairs) histogram[bucket] = calls;
  return histogram;
};
const arrayLiteral = (values: readonly number[]) => `{${values.join(',')}}`;

describe.each(backendNames)('the trimmed histograms of durations (%s)', (backend) => {
  it('hold the calls of every bucket, trimmed to those with calls, and add up bucket by bucket', async () => {
    const database = await openTestDatabase(backend);
    try {
      const next = generator(7);
      const cases = Array.from({ length: 200 }, () => [randomPairs(next), randomPairs(next)] as const);
      // Each stored histogram is read back whole, with its bounds, by SQL itself.
      const expand = (histogram: ReturnType<typeof sql>) =>
        sql`array(select coalesce((${histogram})[i], 0) from generate_series(1, ${DURATION_BUCKETS}) as i order by i)`;
      const made = (pairs: Pairs) =>
        sql`tool_duration_histogram(${arrayLiteral(pairs.map(([bucket]) => bucket))}::int[], ${arrayLiteral(pairs.map(([, calls]) => calls))}::bigint[])`;
      for (const [a, b] of cases) {
        const sum = sql`tool_duration_histogram_add(${made(a)}, ${made(b)})`;
        const [row] = await selectRows<{
          a: string[];
          sum: string[];
          stored: string;
          bounds: [number | null, number | null];
          edges: [string | null, string | null];
        }>(
          database.handle.db,
          sql`select ${expand(made(a))}::text[] as a, ${expand(sum)}::text[] as sum, ${sum}::text as stored,
                     array[array_lower(${sum}, 1), array_upper(${sum}, 1)] as bounds,
                     array[(${sum})[array_lower(${sum}, 1)], (${sum})[array_upper(${sum}, 1)]]::text[] as edges`,
        );
        const expected = whole(a).map((calls, bucket) => calls + (whole(b)[bucket] ?? 0));
        expect(row?.a.map(Number)).toEqual(whole(a));
        expect(row?.sum.map(Number)).toEqual(expected);
        // Trimmed: from the first bucket with calls to the last, or empty.
        const withCalls = expected.flatMap((calls, bucket) => (calls === 0 ? [] : [bucket + 1]));
        if (withCalls.length === 0) expect(row?.stored).toBe('{}');
        else {
          expect(row?.bounds).toEqual([withCalls[0], withCalls.at(-1)]);
          expect(row?.edges.map(Number).every((calls) => calls !== 0)).toBe(true);
        }
      }
    } finally {
      await database.dispose();
    }
  });

  it("makes the fold's histogram of a key's (bucket, calls) pairs as tool_duration_histogram does, for one pair or several", async () => {
    const database = await openTestDatabase(backend);
    try {
      const next = generator(11);
      // Every bucket with one pair of -1 to 3 calls (zero: a call added and taken away in one batch),
      // then random sets of pairs.
      const cases: Pairs[] = [
        ...Array.from({ length: DURATION_BUCKETS }, (_, bucket): Pairs => [[bucket, (bucket % 5) - 1]]),
        ...Array.from({ length: 100 }, () => randomPairs(next)).filter((pairs) => pairs.length > 0),
      ];
      const values = cases.flatMap((pairs, key) =>
        pairs.map(([bucket, calls]) => sql`(${key}::int, ${bucket}::int, ${calls}::bigint)`),
      );
      const rows = await selectRows<{ key: number; fast: string; function: string }>(
        database.handle.db,
        sql`select key, (${sql.raw(HISTOGRAM_OF_PAIRS)})::text as fast,
                   tool_duration_histogram(array_agg(b), array_agg(calls))::text as function
              from (values ${sql.join(values, sql`, `)}) as pairs(key, b, calls)
             group by key order by key`,
      );
      expect(rows).toHaveLength(cases.length);
      for (const row of rows) expect([row.key, row.fast]).toEqual([row.key, row.function]);
      // Both branches were taken: keys of one pair, and of several.
      expect(cases.some((pairs) => pairs.length > 1)).toBe(true);
    } finally {
      await database.dispose();
    }
  });
});
