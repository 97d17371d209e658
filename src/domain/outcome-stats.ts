import { type IsoInstant, isoInstant } from './date-time.ts';
import { DURATION_BUCKETS, histogramQuantiles, NO_DURATIONS } from './duration-histogram.ts';
import { compareNames } from './name-order.ts';
import {
  NO_OUTCOMES,
  type OutcomeCounts,
  type OutcomeTally,
  outcomeCounts,
  totalCalls,
} from './outcome-counts.ts';
import { type BucketSpec, bucketIndices, bucketStart, type StatsRange } from './time-buckets.ts';

export const OUTCOME_DIMENSIONS = ['server', 'tool', 'configuration', 'owner'] as const;
export type OutcomeDimension = (typeof OUTCOME_DIMENSIONS)[number];
export const OUTCOME_ORDER_FIELDS = ['total', 'failed', 'failureRate', 'key'] as const;
export type OutcomeOrderField = (typeof OUTCOME_ORDER_FIELDS)[number];
export const ORDER_DIRECTIONS = ['asc', 'desc'] as const;
export type OrderDirection = (typeof ORDER_DIRECTIONS)[number];

/** One slice of counted tool calls, as the database returns it. */
export interface StatsCell {
  server: string | null;
  toolName: string | null;
  configuration: string | null;
  owner: string | null;
  bucket: number | null;
  tally: OutcomeTally;
  /** Calls per duration bucket (length DURATION_BUCKETS). */
  histogram: readonly number[];
}

export interface OutcomeGroup {
  server: string | null;
  toolName: string | null;
  configuration: string | null;
  owner: string | null;
  bucketStart: IsoInstant | null;
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
  /** With a time bucket: whether a bucket without calls is a row, at zero (the default), or left out. */
  emptyBuckets?: boolean;
}

/** A cell whose histogram is its own to add into: a copy, as the cells read are shared and never changed. */
type OwnCell = StatsCell & { histogram: number[] };

interface Accumulated {
  cell: OwnCell;
  /**
   * A bucket's one cell as it came, until a second is added: then a copy of
   * its own to add into. Made at the group's first bucketed cell: totals have
   * none (thousands of groups in a first pass).
   */
  byBucket: Map<number, { cell: StatsCell; own: false } | { cell: OwnCell; own: true }> | null;
}

/**
 * A cell with the key fields of another (what a group is grouped by): the
 * properties written out, not spread, as thousands are made for one answer.
 */
function cellOf<Histogram extends readonly number[]>(
  key: StatsCell,
  bucket: number | null,
  tally: OutcomeTally,
  histogram: Histogram,
): StatsCell & { histogram: Histogram } {
  return {
    server: key.server,
    toolName: key.toolName,
    configuration: key.configuration,
    owner: key.owner,
    bucket,
    tally,
    histogram,
  };
}

/** The histogram of a cell whose durations are not summed: never added into (see addInto); frozen, so a write throws. */
const UNSUMMED = Object.freeze([]) as unknown as number[];

/** A cell of its own to add into: the source's counts, its histogram copied (the source is not changed). */
function copyOf(source: StatsCell, bucket: number | null, histogram: boolean): OwnCell {
  return cellOf(source, bucket, source.tally, histogram ? ownHistogram(source.histogram) : UNSUMMED);
}

/**
 * A copy of a histogram with every bucket present, to add into in place: a
 * group first met without one (its counts, from a first pass) is not grown a
 * bucket at a time by the histograms added after.
 */
function ownHistogram(from: readonly number[]): number[] {
  const own = new Array<number>(Math.max(DURATION_BUCKETS, from.length)).fill(0);
  for (let bucket = 0; bucket < from.length; bucket += 1) own[bucket] = from[bucket] ?? 0;
  return own;
}

function addedTallies(a: OutcomeTally, b: OutcomeTally): OutcomeTally {
  return { ok: a.ok + b.ok, failed: a.failed + b.failed, cancelled: a.cancelled + b.cancelled };
}

function addInto(target: OwnCell, source: StatsCell, histogram: boolean): void {
  target.tally = addedTallies(target.tally, source.tally);
  if (!histogram) return;
  const into = target.histogram;
  const from = source.histogram;
  for (let bucket = 0; bucket < from.length; bucket += 1)
    into[bucket] = (into[bucket] ?? 0) + (from[bucket] ?? 0);
}

/** A group's key fields: what a group is grouped by. */
export type OutcomeGroupKey = Pick<StatsCell, 'server' | 'toolName' | 'configuration' | 'owner'>;

/**
 * A group's key as one string: its fields joined by U+0000, which no stored
 * name holds (PostgreSQL's text cannot), and which of them are null.
 */
export function outcomeGroupKey({ server, toolName, configuration, owner }: OutcomeGroupKey): string {
  const present = `${server === null ? 0 : 1}${toolName === null ? 0 : 1}${configuration === null ? 0 : 1}${owner === null ? 0 : 1}`;
  return `${server ?? ''}\u0000${toolName ?? ''}\u0000${configuration ?? ''}\u0000${owner ?? ''}\u0000${present}`;
}

/** The percentiles every group reports, ascending. */
const PERCENTILES: readonly number[] = [0.5, 0.95];

function toGroup(cell: StatsCell, start: IsoInstant | null): OutcomeGroup {
  const percentiles = histogramQuantiles(cell.histogram, PERCENTILES);
  return {
    server: cell.server,
    toolName: cell.toolName,
    configuration: cell.configuration,
    owner: cell.owner,
    bucketStart: start,
    counts: outcomeCounts(cell.tally),
    p50DurationMs: percentiles[0] ?? null,
    p95DurationMs: percentiles[1] ?? null,
  };
}

/** The counts of every empty bucket's row: one object, never changed. */
const NO_CALL_COUNTS: OutcomeCounts = Object.freeze(outcomeCounts(NO_OUTCOMES));

/**
 * The row of a group's empty bucket: zero calls, no durations. Nothing is
 * summed for it: an hourly series of 500 groups has tens of thousands.
 */
function emptyBucketGroup(key: OutcomeGroupKey, start: IsoInstant): OutcomeGroup {
  return {
    server: key.server,
    toolName: key.toolName,
    configuration: key.configuration,
    owner: key.owner,
    bucketStart: start,
    counts: NO_CALL_COUNTS,
    p50DurationMs: null,
    p95DurationMs: null,
  };
}

/** Groups by key: server, tool, configuration, owner, each by code point (as the database collates "C"), null as empty. */
function compareKeys(a: StatsCell, b: StatsCell): number {
  for (const field of ['server', 'toolName', 'configuration', 'owner'] as const) {
    const order = compareNames(a[field] ?? '', b[field] ?? '');
    if (order !== 0) return order;
  }
  return 0;
}

function orderValue(counts: OutcomeCounts, field: Exclude<OutcomeOrderField, 'key'>): number {
  if (field === 'total') return counts.total;
  if (field === 'failed') return counts.failed;
  return counts.failureRate ?? Number.NEGATIVE_INFINITY;
}

/** The groups of some cells, merged by key, each with its cells by time bucket (unless `totalsOnly`). */
function accumulate(
  cells: readonly StatsCell[],
  groupHistograms: boolean,
  totalsOnly = false,
): Map<string, Accumulated> {
  const groups = new Map<string, Accumulated>();
  for (const cell of cells) {
    const key = outcomeGroupKey(cell);
    let group = groups.get(key);
    if (!group) {
      group = { cell: copyOf(cell, null, groupHistograms), byBucket: null };
      groups.set(key, group);
    } else addInto(group.cell, cell, groupHistograms);
    if (cell.bucket !== null && !totalsOnly) {
      group.byBucket ??= new Map();
      const slot = group.byBucket.get(cell.bucket);
      if (!slot) group.byBucket.set(cell.bucket, { cell, own: false });
      else if (slot.own) addInto(slot.cell, cell, true);
      else if (slot.cell.histogram === NO_DURATIONS || cell.histogram === NO_DURATIONS) {
        // A bucket's counts and its durations, read apart: the sum's histogram is the one read, shared.
        const histogram = slot.cell.histogram === NO_DURATIONS ? cell.histogram : slot.cell.histogram;
        const sum = cellOf(slot.cell, cell.bucket, addedTallies(slot.cell.tally, cell.tally), histogram);
        group.byBucket.set(cell.bucket, { cell: sum, own: false });
      } else {
        const own = copyOf(slot.cell, cell.bucket, true);
        addInto(own, cell, true);
        group.byBucket.set(cell.bucket, { cell: own, own: true });
      }
    }
  }
  return groups;
}

/** The groups with calls (and at least minCalls), ordered, cut to `first`; and whether that left some out. */
function rank(groups: Iterable<Accumulated>, options: RankOptions): { ordered: Accumulated[]; cut: boolean } {
  const sign = options.descending ? -1 : 1;
  const byValue = options.orderBy !== 'key' ? options.orderBy : null;
  // Each group's value worked out once, not at each of the n log n comparisons (thousands of groups).
  const matching: Array<{ group: Accumulated; value: number }> = [];
  for (const group of groups) {
    const counts = outcomeCounts(group.cell.tally);
    // A group none of whose calls lie in the range (taken away whole) is no group.
    if (counts.total > 0 && counts.total >= options.minCalls)
      matching.push({ group, value: byValue ? orderValue(counts, byValue) : 0 });
  }
  matching.sort((a, b) => {
    if (byValue) {
      // Compared, not subtracted: two groups without a failure rate (-Infinity each) are equal, not NaN.
      if (a.value !== b.value) return a.value < b.value ? -sign : sign;
      return compareKeys(a.group.cell, b.group.cell);
    }
    return sign * compareKeys(a.group.cell, b.group.cell);
  });
  return {
    ordered: matching.slice(0, options.first).map((entry) => entry.group),
    cut: matching.length > options.first,
  };
}

export type RankOptions = Pick<SummaryOptions, 'orderBy' | 'descending' | 'minCalls' | 'first'>;

/**
 * The groups `summarise` would return from these cells, in its order, each
 * with its counts summed, and whether `first` left groups out: what the
 * counts alone decide, so that durations need be read only for the groups
 * returned.
 */
export function rankGroups(
  cells: readonly StatsCell[],
  options: RankOptions,
): { groups: StatsCell[]; cut: boolean } {
  const { ordered, cut } = rank(accumulate(cells, false, true).values(), options);
  return { groups: ordered.map((group) => group.cell), cut };
}

/** Groups, and whether `first` left some out. */
export interface OutcomeStatsPage {
  groups: OutcomeGroup[];
  truncated: boolean;
}

/**
 * Groups from the cells: merged by key, ordered, cut to `first`, and, with a
 * time bucket, one row per bucket of the range, empty buckets included unless
 * `emptyBuckets` is false.
 */
export function summarise(cells: readonly StatsCell[], options: SummaryOptions): OutcomeStatsPage {
  // With time buckets a group's rows are its buckets: its whole histogram is never read, only its counts.
  const { ordered, cut } = rank(accumulate(cells, options.spec === null).values(), options);
  const spec = options.spec;
  if (!spec) return { groups: ordered.map((group) => toGroup(group.cell, null)), truncated: cut };
  // Each bucket's start written once, for every group.
  const buckets = bucketIndices(spec, options.range).map((bucket) => ({
    bucket,
    start: isoInstant(bucketStart(spec, bucket)),
  }));
  const emptyBuckets = options.emptyBuckets ?? true;
  const groups: OutcomeGroup[] = [];
  for (const group of ordered)
    for (const { bucket, start } of buckets) {
      const cell = group.byBucket?.get(bucket)?.cell;
      if (cell && (emptyBuckets || totalCalls(cell.tally) > 0)) groups.push(toGroup(cell, start));
      else if (emptyBuckets) groups.push(emptyBucketGroup(group.cell, start));
    }
  return { groups, truncated: cut };
}
