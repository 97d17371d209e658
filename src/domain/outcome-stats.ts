import { DURATION_BUCKETS, histogramQuantile } from './duration-histogram.ts';
import { InvalidInputError } from './errors.ts';
import { STATS_LIMITS } from './limits.ts';
import { NO_OUTCOMES, type OutcomeCounts, type OutcomeTally, outcomeCounts } from './outcome-counts.ts';

export type OutcomeDimension = 'server' | 'tool' | 'configuration' | 'owner';
export type TimeBucket = 'hour' | 'day' | 'week';
export type OutcomeOrderField = 'total' | 'failed' | 'failureRate' | 'key';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
export const BUCKET_MS: Readonly<Record<TimeBucket, number>> = {
  hour: HOUR_MS,
  day: DAY_MS,
  week: 7 * DAY_MS,
};
/** Weeks start on Monday; 1970-01-01 was a Thursday. */
const BUCKET_ANCHOR_MS: Readonly<Record<TimeBucket, number>> = { hour: 0, day: 0, week: 4 * DAY_MS };

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

/** The range asked for, or the last 30 days; refused when empty, reversed or too long. */
export function statsRange(
  from: Date | null | undefined,
  to: Date | null | undefined,
  now: Date,
): StatsRange {
  const end = to ?? now;
  const start = from ?? new Date(end.getTime() - STATS_LIMITS.defaultRangeDays * DAY_MS);
  if (start.getTime() >= end.getTime()) {
    throw new InvalidInputError('RANGE_EMPTY', 'occurredAfter must be before occurredBefore', 'filter');
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

/** One slice of counted tool calls, as the database returns it. */
export interface StatsCell {
  server: string | null;
  toolName: string | null;
  configuration: string | null;
  owner: string | null;
  bucket: number | null;
  tally: OutcomeTally;
  /** Calls per duration bucket (length DURATION_BUCKETS). */
  histogram: number[];
}

export interface OutcomeGroup {
  server: string | null;
  toolName: string | null;
  configuration: string | null;
  owner: string | null;
  bucketStart: Date | null;
  counts: OutcomeCounts;
  p50DurationMs: number | null;
  p95DurationMs: number | null;
}

export interface SummaryOptions {
  spec: BucketSpec | null;
  range: StatsRange;
  orderBy: OutcomeOrderField;
  descending: boolean;
  minCalls: number;
  first: number;
}

interface Accumulated {
  cell: StatsCell;
  byBucket: Map<number, StatsCell>;
}

/** The key fields of a cell: what a group is grouped by. */
const keyFields = ({ server, toolName, configuration, owner }: StatsCell) => ({
  server,
  toolName,
  configuration,
  owner,
});

function emptyCell(from: StatsCell, bucket: number | null): StatsCell {
  return {
    ...keyFields(from),
    bucket,
    tally: NO_OUTCOMES,
    histogram: new Array<number>(DURATION_BUCKETS).fill(0),
  };
}

function addInto(target: StatsCell, source: StatsCell): void {
  target.tally = {
    ok: target.tally.ok + source.tally.ok,
    failed: target.tally.failed + source.tally.failed,
    cancelled: target.tally.cancelled + source.tally.cancelled,
  };
  source.histogram.forEach((count, bucket) => {
    target.histogram[bucket] = (target.histogram[bucket] ?? 0) + count;
  });
}

const groupKey = (cell: StatsCell) => JSON.stringify(keyFields(cell));

function toGroup(cell: StatsCell, start: Date | null): OutcomeGroup {
  return {
    ...keyFields(cell),
    bucketStart: start,
    counts: outcomeCounts(cell.tally),
    p50DurationMs: histogramQuantile(cell.histogram, 0.5),
    p95DurationMs: histogramQuantile(cell.histogram, 0.95),
  };
}

function compareKeys(a: StatsCell, b: StatsCell): number {
  for (const field of ['server', 'toolName', 'configuration', 'owner'] as const) {
    const left = a[field] ?? '';
    const right = b[field] ?? '';
    if (left !== right) return left < right ? -1 : 1;
  }
  return 0;
}

function orderValue(cell: StatsCell, field: Exclude<OutcomeOrderField, 'key'>): number {
  const counts = outcomeCounts(cell.tally);
  if (field === 'total') return counts.total;
  if (field === 'failed') return counts.failed;
  return counts.failureRate ?? Number.NEGATIVE_INFINITY;
}

/**
 * Groups from the cells: merged by key, ordered, cut to `first`, and, with a
 * time bucket, one row per bucket of the range, empty buckets included.
 */
export function summarise(cells: readonly StatsCell[], options: SummaryOptions): OutcomeGroup[] {
  const groups = new Map<string, Accumulated>();
  for (const cell of cells) {
    const key = groupKey(cell);
    let group = groups.get(key);
    if (!group) {
      group = { cell: emptyCell(cell, null), byBucket: new Map() };
      groups.set(key, group);
    }
    addInto(group.cell, cell);
    if (cell.bucket !== null) {
      let slot = group.byBucket.get(cell.bucket);
      if (!slot) {
        slot = emptyCell(cell, cell.bucket);
        group.byBucket.set(cell.bucket, slot);
      }
      addInto(slot, cell);
    }
  }
  const sign = options.descending ? -1 : 1;
  const ordered = [...groups.values()]
    .filter((group) => outcomeCounts(group.cell.tally).total >= options.minCalls)
    .sort((a, b) => {
      if (options.orderBy !== 'key') {
        const difference = orderValue(a.cell, options.orderBy) - orderValue(b.cell, options.orderBy);
        if (difference !== 0) return sign * difference;
        return compareKeys(a.cell, b.cell);
      }
      return sign * compareKeys(a.cell, b.cell);
    })
    .slice(0, options.first);

  const spec = options.spec;
  if (!spec) return ordered.map((group) => toGroup(group.cell, null));
  const firstBucket = bucketIndex(spec, options.range.from);
  const lastBucket = bucketIndex(spec, new Date(options.range.to.getTime() - 1));
  return ordered.flatMap((group) => {
    const rows: OutcomeGroup[] = [];
    for (let bucket = firstBucket; bucket <= lastBucket; bucket += 1) {
      const cell = group.byBucket.get(bucket) ?? emptyCell(group.cell, bucket);
      rows.push(toGroup(cell, bucketStart(spec, bucket)));
    }
    return rows;
  });
}
