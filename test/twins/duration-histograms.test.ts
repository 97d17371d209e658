// Twins: a histogram of durations is stored trimmed to its buckets with calls (the SQL functions
// `tool_duration_histogram` and `tool_duration_histogram_add`, migrations/repeatable/05) and read
// back as DURATION_BUCKETS counts, added bucket by bucket (src/domain/outcome-stats.ts). Whatever
// the bounds, the stored histogram must hold the calls the whole one does, and two added must hold
// their sum.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
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
});
