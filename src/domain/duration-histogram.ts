/**
 * Durations of tool calls, counted in buckets whose bounds grow by at most
 * 29%: percentiles read from the counts are within 14% of the true value
 * (exact below 12 ms), whatever the number of calls.
 *
 * The same thresholds live in SQL (`tool_duration_bucket`, migrations/0005);
 * a test proves the two agree. Bucket 0 is [0, 1) ms, bucket k is
 * [t(k-1), t(k)), bucket 64 is everything from the last threshold up. A
 * rollup counts bucket k in element k + 1 of its `durations` array, trimmed
 * to the buckets with calls (migrations/repeatable/05): read back, it is
 * DURATION_BUCKETS counts, zero outside its bounds.
 */
export const DURATION_THRESHOLDS_MS: readonly number[] = Object.freeze([
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15, 18, 23, 28, 36, 44, 56, 69, 87, 108, 136, 169, 212, 265, 331,
  414, 517, 646, 808, 1010, 1262, 1578, 1972, 2465, 3081, 3852, 4815, 6019, 7523, 9404, 11755, 14694, 18367,
  22959, 28699, 35873, 44842, 56052, 70065, 87581, 109476, 136846, 171057, 213821, 267276, 334096, 417619,
  522024, 652530, 815663, 1019579, 1274474,
]);

export const DURATION_BUCKETS = DURATION_THRESHOLDS_MS.length + 1;

/**
 * The histogram of every cell read without durations: one array for all
 * (thousands of cells in a ranking by counts), frozen, as no cell read is
 * ever added into. Adding it to another changes nothing, so a sum with it
 * may share the other's histogram.
 */
export const NO_DURATIONS: readonly number[] = Object.freeze(new Array<number>(DURATION_BUCKETS).fill(0));

/** The bucket of a duration, as SQL's width_bucket computes it. */
export function durationBucket(durationMs: number): number {
  let low = 0;
  let high = DURATION_THRESHOLDS_MS.length;
  // The number of thresholds <= durationMs, by binary search.
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((DURATION_THRESHOLDS_MS[middle] ?? Number.POSITIVE_INFINITY) <= durationMs) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The most a reported value may be off the true one, either way, as a ratio: "within 14%". */
export const PERCENTILE_BOUND = 1.14;

/** Durations under this many milliseconds are reported exactly (each has a bucket of its own). */
export const EXACT_BELOW_MS = 12;

/**
 * The value reported for a bucket: the whole number of milliseconds nearest,
 * as a ratio, to every duration the bucket holds (whole milliseconds from its
 * lower bound to one under its upper: the geometric middle of those two, the
 * closer of the whole numbers either side); its lower bound for the last.
 * The geometric middle of the bounds, rounded, was 32 for [28, 36): 14.3%
 * above a true 28.
 */
export function bucketValue(bucket: number): number {
  return BUCKET_VALUES[bucket] ?? valueOfBucket(bucket);
}

function valueOfBucket(bucket: number): number {
  if (bucket <= 0) return 0;
  const low = DURATION_THRESHOLDS_MS[bucket - 1] ?? 0;
  const high = DURATION_THRESHOLDS_MS[bucket];
  if (high === undefined) return low;
  const highest = high - 1;
  const middle = Math.sqrt(low * highest);
  const worst = (value: number) => Math.max(value / low, highest / value);
  const below = Math.floor(middle);
  const above = Math.ceil(middle);
  // A bucket one millisecond wide holds one duration: reported exactly.
  return worst(above) < worst(below) ? above : below;
}

/** Each bucket's value, worked out once: two of them for every row of a statistics answer. */
const BUCKET_VALUES: readonly number[] = Object.freeze(
  Array.from({ length: DURATION_BUCKETS }, (_, bucket) => valueOfBucket(bucket)),
);

/**
 * Quantiles (ascending, 0 < q <= 1) of the durations counted in `histogram`,
 * null when it is empty: for each, the bucket where the running count first
 * reaches ceil(q * total). One walk over the buckets for all of them: a
 * statistics answer asks two of every one of its thousands of rows.
 */
export function histogramQuantiles(
  histogram: readonly number[],
  ascending: readonly number[],
): Array<number | null> {
  let total = 0;
  for (let bucket = 0; bucket < histogram.length; bucket += 1) total += histogram[bucket] ?? 0;
  if (total === 0) return ascending.map(() => null);
  const values: Array<number | null> = [];
  let seen = 0;
  let bucket = 0;
  for (const q of ascending) {
    const rank = Math.max(1, Math.ceil(q * total));
    while (bucket < histogram.length - 1 && seen + (histogram[bucket] ?? 0) < rank) {
      seen += histogram[bucket] ?? 0;
      bucket += 1;
    }
    values.push(bucketValue(bucket));
  }
  return values;
}
