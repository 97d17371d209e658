import { InvalidInputError } from './errors.ts';
import { checkOneOf, STATS_LIMITS } from './limits.ts';

/**
 * The time window every statistics query counts in (toolOutcomeStats,
 * runStats): its range, its time buckets and their limits, one definition each.
 */

export const TIME_BUCKETS = ['hour', 'day', 'week'] as const;
export type TimeBucket = (typeof TIME_BUCKETS)[number];

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
export const BUCKET_MS: Readonly<Record<TimeBucket, number>> = {
  hour: HOUR_MS,
  day: DAY_MS,
  week: 7 * DAY_MS,
};
/** Weeks start on Monday; 1970-01-01 was a Thursday. */
export const BUCKET_ANCHOR_MS: Readonly<Record<TimeBucket, number>> = { hour: 0, day: 0, week: 4 * DAY_MS };

/** How instants map to time buckets: `index = floor((t + offset - anchor) / size)`. */
export interface BucketSpec {
  bucket: TimeBucket;
  sizeMs: number;
  /** offset - anchor, in ms: add to an epoch ms before dividing by the size. */
  shiftMs: number;
}

export function bucketSpec(bucket: TimeBucket, utcOffsetMinutes: number): BucketSpec {
  return { bucket, sizeMs: BUCKET_MS[bucket], shiftMs: utcOffsetMinutes * 60_000 - BUCKET_ANCHOR_MS[bucket] };
}

export function bucketIndex(spec: BucketSpec, at: Date): number {
  return Math.floor((at.getTime() + spec.shiftMs) / spec.sizeMs);
}

export function bucketStart(spec: BucketSpec, index: number): Date {
  return new Date(index * spec.sizeMs - spec.shiftMs);
}

export interface StatsRange {
  from: Date;
  to: Date;
}

/** What a query calls the two ends of its range, for the messages of its refusals. */
export interface RangeNames {
  after: string;
  before: string;
}

/** The range asked for, or the last 30 days; refused when empty, reversed or too long. */
export function statsRange(
  from: Date | null | undefined,
  to: Date | null | undefined,
  now: Date,
  names: RangeNames = { after: 'occurredAfter', before: 'occurredBefore' },
): StatsRange {
  const end = to ?? now;
  const start = from ?? new Date(end.getTime() - STATS_LIMITS.defaultRangeDays * DAY_MS);
  if (start.getTime() >= end.getTime()) {
    throw new InvalidInputError('RANGE_EMPTY', `${names.after} must be before ${names.before}`, 'filter');
  }
  if (end.getTime() - start.getTime() > STATS_LIMITS.maxRangeDays * DAY_MS) {
    throw new InvalidInputError(
      'RANGE_TOO_LONG',
      `the range may span at most ${STATS_LIMITS.maxRangeDays} days`,
      'filter',
    );
  }
  return { from: start, to: end };
}

export function checkBucketCount(spec: BucketSpec, range: StatsRange): void {
  const count = bucketIndex(spec, new Date(range.to.getTime() - 1)) - bucketIndex(spec, range.from) + 1;
  if (count > STATS_LIMITS.maxBuckets) {
    throw new InvalidInputError(
      'TOO_MANY_BUCKETS',
      `the range holds ${count} ${spec.bucket} buckets, over ${STATS_LIMITS.maxBuckets}: use a larger bucket or a shorter range`,
      'bucket',
    );
  }
}

export function checkUtcOffset(minutes: number): number {
  if (!Number.isInteger(minutes) || Math.abs(minutes) > STATS_LIMITS.maxUtcOffsetMinutes) {
    throw new InvalidInputError(
      'VALUE_OUT_OF_RANGE',
      'utcOffsetMinutes must be an integer within ±840',
      'utcOffsetMinutes',
    );
  }
  return minutes;
}

/** A query's window: its range, and its buckets when it asks for a time series. */
export interface StatsWindow {
  range: StatsRange;
  spec: BucketSpec | null;
}

/**
 * The range (default, limits), then the offset and the number of buckets when
 * a bucket is asked for: the checks of every statistics query, in this order.
 */
export function statsWindow(
  request: {
    after: Date | null | undefined;
    before: Date | null | undefined;
    bucket: TimeBucket | null | undefined;
    utcOffsetMinutes: number;
  },
  now: Date,
  names?: RangeNames,
): StatsWindow {
  const range = statsRange(request.after, request.before, now, names);
  const spec = request.bucket
    ? bucketSpec(checkOneOf(request.bucket, TIME_BUCKETS, 'bucket'), checkUtcOffset(request.utcOffsetMinutes))
    : null;
  if (spec) checkBucketCount(spec, range);
  return { range, spec };
}

/** Every bucket index of the range, in order: a time series has a row for each, empty ones included. */
export function bucketIndices(spec: BucketSpec, range: StatsRange): number[] {
  const first = bucketIndex(spec, range.from);
  const last = bucketIndex(spec, new Date(range.to.getTime() - 1));
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}
