import { describe, expect, it } from 'vitest';
import {
  bucketValue,
  DURATION_BUCKETS,
  DURATION_THRESHOLDS_MS,
  durationBucket,
  EXACT_BELOW_MS,
  histogramQuantiles,
  PERCENTILE_BOUND,
} from '../../src/domain/duration-histogram.ts';

/** The quantile by its definition: the first bucket whose running count reaches the rank ceil(q * total). */
function reference(histogram: readonly number[], q: number): number | null {
  const total = histogram.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let bucket = 0; bucket < histogram.length; bucket += 1) {
    seen += histogram[bucket] ?? 0;
    if (seen >= rank) return bucketValue(bucket);
  }
  return bucketValue(histogram.length - 1);
}

describe('quantiles of a duration histogram', () => {
  it('reports every duration under the last threshold within 14% of the value of its bucket, exactly below 12 ms', () => {
    const last = DURATION_THRESHOLDS_MS.at(-1) ?? 0;
    let worst = 1;
    for (let durationMs = 0; durationMs < last; durationMs += 1) {
      const reported = bucketValue(durationBucket(durationMs));
      if (durationMs < EXACT_BELOW_MS) expect(reported).toBe(durationMs);
      else worst = Math.max(worst, reported / durationMs, durationMs / reported);
    }
    expect(worst).toBeLessThanOrEqual(PERCENTILE_BOUND);
    // The bucket [28, 36) reported 32, 14.3% above 28, until its value was chosen for whole milliseconds.
    expect(bucketValue(durationBucket(28))).toBe(31);
  });

  it('gives every quantile of one walk as the definition does, for sparse, dense and empty histograms', () => {
    let seed = 11;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    const quantiles = [0.01, 0.5, 0.9, 0.95, 0.99, 1];
    for (let round = 0; round < 2_000; round += 1) {
      const density = [0, 2, 10, 100][round % 4] ?? 0;
      const histogram = Array.from({ length: DURATION_BUCKETS }, () =>
        random(100) < density ? 1 + random(round % 3 === 0 ? 5 : 100_000) : 0,
      );
      const expected = quantiles.map((q) => reference(histogram, q));
      expect(histogramQuantiles(histogram, quantiles)).toEqual(expected);
      expect(quantiles.map((q) => histogramQuantiles(histogram, [q])[0])).toEqual(expected);
    }
    expect(histogramQuantiles(new Array(DURATION_BUCKETS).fill(0), [0.5, 0.95])).toEqual([null, null]);
  });
});
