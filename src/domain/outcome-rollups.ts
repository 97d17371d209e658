import { isInstantInRange } from './limits.ts';
import type { OutcomeDimension } from './outcome-stats.ts';
import {
  BUCKET_ANCHOR_MS,
  BUCKET_MS,
  type BucketSpec,
  bucketIndex,
  bucketStart,
  type StatsRange,
} from './time-buckets.ts';

/**
 * Which rollup of the tool calls answers which part of a statistics request:
 * the one definition, used by the statements (src/db/outcome-stats.ts) and
 * tested on its own.
 *
 * A rollup holds the calls counted per unit of time (a UTC hour, a UTC day or
 * a week from Monday, 00:00 UTC), or of all time, and per the key fields it
 * lists; it answers a request whose grouping and filters need no field it
 * lacks. The lists are in order of expected size, smallest first, and the
 * first rollup that covers a request answers it (of all time: see allOfTime).
 */
export type RollupGrain = 'hour' | 'day' | 'week';
/** A rollup's unit of time: a grain, or `all` (no time: every call ever recorded, per key). */
export type RollupSpan = RollupGrain | 'all';

export type RollupName =
  | 'serverDaily'
  | 'serverToolDaily'
  | 'ownerConfigurationDaily'
  | 'ownerToolDaily'
  | 'ownerConfigurationServerDaily'
  | 'everyKeyDaily'
  | 'serverHourly'
  | 'ownerConfigurationHourly'
  | 'everyKeyHourly'
  | 'ownerWeekly'
  | 'serverToolWeekly'
  | 'ownerConfigurationWeekly'
  | 'ownerServerWeekly'
  | 'configurationServerWeekly'
  | 'ownerToolWeekly'
  | 'ownerConfigurationServerWeekly'
  | 'configurationToolWeekly'
  | 'ownerConfigurationToolWeekly'
  | 'everyKeyWeekly'
  | 'everyKeyAllTime'
  | 'ownerConfigurationToolAllTime'
  | 'ownerConfigurationServerAllTime'
  | 'configurationServerToolAllTime'
  | 'ownerServerToolAllTime'
  | 'ownerServerAllTime'
  | 'configurationServerAllTime';

export interface RollupDefinition {
  name: RollupName;
  grain: RollupSpan;
  dimensions: readonly OutcomeDimension[];
  /** It keeps no histograms: it answers only a request that reads none (a ranking's first pass). */
  countsOnly?: true;
}

const EVERY_KEY: readonly OutcomeDimension[] = ['owner', 'configuration', 'server', 'tool'];

export const OUTCOME_ROLLUPS: readonly RollupDefinition[] = [
  { name: 'serverDaily', grain: 'day', dimensions: ['server'] },
  { name: 'serverToolDaily', grain: 'day', dimensions: ['server', 'tool'] },
  { name: 'ownerConfigurationDaily', grain: 'day', dimensions: ['owner', 'configuration'] },
  { name: 'ownerToolDaily', grain: 'day', dimensions: ['owner', 'tool'] },
  { name: 'ownerConfigurationServerDaily', grain: 'day', dimensions: ['owner', 'configuration', 'server'] },
  { name: 'everyKeyDaily', grain: 'day', dimensions: EVERY_KEY },
  { name: 'serverHourly', grain: 'hour', dimensions: ['server'] },
  { name: 'ownerConfigurationHourly', grain: 'hour', dimensions: ['owner', 'configuration'] },
  { name: 'everyKeyHourly', grain: 'hour', dimensions: EVERY_KEY },
  // Weeks where a day holds many rows (many owners and configurations, and
  // their servers): a week's row is read instead of seven days' rows.
  // Keyed by exactly the fields of the groupings asked most: a row per key and week, where a
  // rollup keyed by more fields holds one per value of the others.
  { name: 'ownerWeekly', grain: 'week', dimensions: ['owner'] },
  { name: 'serverToolWeekly', grain: 'week', dimensions: ['server', 'tool'] },
  { name: 'ownerConfigurationWeekly', grain: 'week', dimensions: ['owner', 'configuration'] },
  { name: 'ownerServerWeekly', grain: 'week', dimensions: ['owner', 'server'] },
  { name: 'configurationServerWeekly', grain: 'week', dimensions: ['configuration', 'server'] },
  { name: 'ownerToolWeekly', grain: 'week', dimensions: ['owner', 'tool'] },
  { name: 'ownerConfigurationServerWeekly', grain: 'week', dimensions: ['owner', 'configuration', 'server'] },
  { name: 'configurationToolWeekly', grain: 'week', dimensions: ['configuration', 'tool'] },
  { name: 'ownerConfigurationToolWeekly', grain: 'week', dimensions: ['owner', 'configuration', 'tool'] },
  // Every field, counts alone: the weeks of a ranking's first pass none of the above answers (all
  // four fields, owner or configuration x server x tool). Its histograms would cost every write
  // a row per duration bucket and key; the groups returned read theirs from the days.
  { name: 'everyKeyWeekly', grain: 'week', dimensions: EVERY_KEY, countsOnly: true },
  // Every call ever recorded, per key: a range holding most of the calls is read as all of them
  // less those outside it, where the daily rollup keyed by every field holds about a row per call.
  // Counts alone keyed by exactly the fields of groupings with many groups, whose groups the rows
  // keyed by every field would sum a hash entry each.
  {
    name: 'configurationServerAllTime',
    grain: 'all',
    dimensions: ['configuration', 'server'],
    countsOnly: true,
  },
  { name: 'ownerServerAllTime', grain: 'all', dimensions: ['owner', 'server'], countsOnly: true },
  {
    name: 'ownerConfigurationToolAllTime',
    grain: 'all',
    dimensions: ['owner', 'configuration', 'tool'],
    countsOnly: true,
  },
  {
    name: 'ownerConfigurationServerAllTime',
    grain: 'all',
    dimensions: ['owner', 'configuration', 'server'],
    countsOnly: true,
  },
  {
    name: 'configurationServerToolAllTime',
    grain: 'all',
    dimensions: ['configuration', 'server', 'tool'],
    countsOnly: true,
  },
  { name: 'ownerServerToolAllTime', grain: 'all', dimensions: ['owner', 'server', 'tool'], countsOnly: true },
  // Every call ever recorded, per key of all four fields, with histograms: what the others count,
  // and the histograms of the groups a ranking returns.
  { name: 'everyKeyAllTime', grain: 'all', dimensions: EVERY_KEY },
];

/** What a request asks of the rows: the fields it groups and filters by, and whether it filters by outcome. */
export interface RollupRequest {
  groupBy: readonly OutcomeDimension[];
  /** Fields with a filter (an actor who sees only its own runs filters by owner). */
  filteredBy: readonly OutcomeDimension[];
  outcomeFilter: boolean;
  range: StatsRange;
  spec: BucketSpec | null;
  /**
   * The instant the request is answered at: no call is recorded after it
   * (short of a clock set ahead), so a part of a unit after it costs
   * nothing to take away.
   */
  now?: Date;
  /**
   * Whole UTC hours holding every call recorded (from the first hour with
   * calls to the end of the last), as the same snapshot's rollups say: what
   * lies outside a range, to read a range as all calls less those, and the
   * parts of a plan that hold no calls.
   */
  recorded?: StatsRange;
  /** No histogram is read (counts alone): rollups that keep none may answer. */
  countsOnly?: boolean;
  /**
   * Rows each rollup holds, as the database estimates them: a rollup of all
   * time answers when it holds fewer rows than the coarsest rollup of the
   * range holds in the range. Without them, only one keyed by no field that
   * one lacks does.
   */
  rollupRows?: Partial<Readonly<Record<RollupName, number>>>;
}

/** A part of the range and where it is read from: a rollup, or run_steps itself (`raw`). */
export interface StatsSegment {
  from: Date;
  to: Date;
  source: RollupName | 'raw';
  /** Calls counted here are taken away: the part of a whole unit, read from a rollup, outside the range. */
  subtract?: true;
  /**
   * Buckets not aligned with the units of this grain (days at UTC+02:00): the
   * same part was read in whole units of this grain, each counted in the
   * bucket of its start. This segment's rows, of a rollup aligned with the
   * buckets, whose bucket is not the one of the start of their unit of this
   * grain, are moved: counted in their own bucket and taken away from that one.
   */
  movedFrom?: RollupGrain;
}

/**
 * The first (smallest) rollup of a grain whose key holds every field the
 * request needs: one that keeps histograms, unless the request reads none.
 */
export function rollupFor(
  grain: RollupSpan,
  needed: readonly OutcomeDimension[],
  countsOnly = false,
): RollupDefinition | undefined {
  return rollupsCovering(grain, needed, countsOnly)[0];
}

/**
 * Every rollup of a grain whose key holds every field the request needs,
 * smallest first: those that keep histograms, and for counts alone those that keep none too.
 */
function rollupsCovering(
  grain: RollupSpan,
  needed: readonly OutcomeDimension[],
  countsOnly: boolean,
): RollupDefinition[] {
  return OUTCOME_ROLLUPS.filter(
    (rollup) =>
      rollup.grain === grain &&
      (countsOnly || !rollup.countsOnly) &&
      needed.every((field) => rollup.dimensions.includes(field)),
  );
}

/** A grain's unit and where its units start: the time buckets' own definitions (weeks from Monday). */
const GRAIN_MS: Readonly<Record<RollupGrain, number>> = BUCKET_MS;
const GRAIN_ANCHOR_MS: Readonly<Record<RollupGrain, number>> = BUCKET_ANCHOR_MS;
/** The grains, finest first: each unit is made of whole units of the one before. */
const GRAINS: readonly RollupGrain[] = ['hour', 'day', 'week'];

/** Whether every unit of a grain lies in one bucket of the spec (always, without buckets). */
function bucketsHoldUnits(grain: RollupGrain, spec: BucketSpec | null): boolean {
  if (spec === null) return true;
  const unit = GRAIN_MS[grain];
  return spec.sizeMs % unit === 0 && (GRAIN_ANCHOR_MS[grain] + spec.shiftMs) % unit === 0;
}

/**
 * The largest time unit whose whole units the buckets are built from: a week
 * without buckets or for WEEK buckets at UTC, a day when buckets start at UTC
 * midnight, an hour when they start on a whole UTC hour, else none (an offset
 * such as +05:30 reads run_steps). A duration histogram mixes every outcome,
 * so an outcome filter reads run_steps too.
 */
export function rollupUnit(request: Pick<RollupRequest, 'outcomeFilter' | 'spec'>): RollupGrain | null {
  if (request.outcomeFilter) return null;
  return GRAINS.findLast((grain) => bucketsHoldUnits(grain, request.spec)) ?? null;
}

/** The start of the unit of a grain that holds an instant, or of the next one (`roundUp`, unless on a start). */
function floorTo(at: Date, grain: RollupGrain, roundUp: boolean): Date {
  const unit = GRAIN_MS[grain];
  const anchor = GRAIN_ANCHOR_MS[grain];
  const floor = Math.floor((at.getTime() - anchor) / unit) * unit + anchor;
  return new Date(roundUp && floor < at.getTime() ? floor + unit : floor);
}

/**
 * Whether run_steps finds a request's calls of whole hours faster than an
 * hourly rollup: when the rollup is keyed by every field (it holds about a row
 * per call in an hour) and the request filters by server and needs no field of
 * the run, run_steps' index on (server, occurred_at) of tool calls reads only
 * that server's calls, where the rollup, ordered by hour first, reads every
 * server's rows of those hours.
 */
function stepsFindItsCalls(
  rollup: RollupDefinition,
  request: RollupRequest,
  needed: readonly OutcomeDimension[],
): boolean {
  return (
    rollup.dimensions.length === EVERY_KEY.length &&
    request.filteredBy.includes('server') &&
    !needed.includes('owner') &&
    !needed.includes('configuration')
  );
}

/**
 * The range cut into segments, each from the coarsest rollup that can count
 * it: whole weeks from the smallest weekly rollup that covers the request (if
 * one does), the whole days around them from the smallest daily one, the whole
 * hours around those from the smallest hourly one, the partial hours at the
 * edges from run_steps; everything from run_steps when no rollup can answer
 * (an outcome filter, an offset that is not a whole hour, a range shorter than
 * an hour). An edge longer than half a unit of the coarser rollup is read as
 * that whole unit less what lies outside the range (19 hours of a day: the
 * day's rows less 5 hours' rows), so no edge reads more than half a unit of
 * the finer one, and so is the edge of a range that ends now (its unit's
 * rest is yet to come: empty, where the edge would read days and hours of
 * rows). What is taken away lies in the same time bucket as the
 * unit it is taken from, so buckets and counts stay exact; a part outside the
 * hours on record, which holds no calls, is left out. Buckets at a
 * whole-hour offset (days at UTC+02:00) are read in whole days and weeks too:
 * each such unit straddles two buckets at most, and the rows of its hours in
 * the second are moved there (`movedFrom`).
 */
export function planOutcomeStats(request: RollupRequest): StatsSegment[] {
  const unit = rollupUnit(request);
  const needed = [...new Set([...request.groupBy, ...request.filteredBy])];
  // The grains to cut by, finest first: those whose units lie in one bucket each, up to the request's
  // unit, then coarser ones whose units each straddle at most two buckets (the bucket a whole number of
  // units long), corrected by moving rows. Each with the smallest rollup that covers the request, kept
  // only if its key is no wider than the finer one's (a weekly row keyed by more fields can outnumber
  // seven daily rows keyed by fewer).
  const tiers: Tier[] = [];
  for (const grain of unit === null ? [] : GRAINS) {
    const aligned = GRAINS.indexOf(grain) <= GRAINS.indexOf(unit ?? grain);
    const shifted =
      !aligned &&
      tiers.length > 0 &&
      request.spec?.sizeMs !== undefined &&
      request.spec.sizeMs % GRAIN_MS[grain] === 0;
    if (!aligned && !shifted) continue;
    const rollup = rollupFor(grain, needed, request.countsOnly);
    const finer = tiers.at(-1);
    if (!rollup || (finer && !rollup.dimensions.every((field) => finer.dimensions.includes(field)))) continue;
    if (finer && !weeksPay(rollup, finer, request)) continue;
    if (grain === 'hour' && stepsFindItsCalls(rollup, request, needed)) continue;
    tiers.push({ grain, source: rollup.name, dimensions: rollup.dimensions, shifted });
  }
  // Rows of the coarsest tier aligned with the buckets correct the units of the shifted ones.
  const corrector = tiers.findLast((tier) => !tier.shifted);
  const segments: StatsSegment[] = [];
  const add = (from: Date, to: Date, level: number, subtract: boolean) => {
    if (from.getTime() >= to.getTime()) return;
    const tier = level < 0 ? undefined : tiers[level];
    const sign = subtract ? { subtract } : {};
    segments.push({ from, to, source: tier?.source ?? 'raw', ...sign });
    if (tier?.shifted && corrector)
      segments.push({ from, to, source: corrector.source, ...sign, movedFrom: tier.grain });
  };
  // [from, to), both on units of tier `level`: its whole units of the next tier go to that tier. An
  // edge longer than half a unit of the next tier is read as that whole unit less the rest of it.
  const cut = (from: Date, to: Date, level: number, subtract: boolean) => {
    const next = tiers[level + 1];
    const innerFrom = next ? floorTo(from, next.grain, true) : to;
    const innerTo = next ? floorTo(to, next.grain, false) : to;
    if (!next || innerFrom.getTime() >= innerTo.getTime()) {
      add(from, to, level, subtract);
      return;
    }
    const unit = GRAIN_MS[next.grain];
    let middleFrom = innerFrom;
    let middleTo = innerTo;
    // Whole units beyond the edges only within the instants a DateTime holds (the statements name them).
    const before = new Date(innerFrom.getTime() - unit);
    if (2 * (innerFrom.getTime() - from.getTime()) > unit && isInstantInRange(before)) {
      middleFrom = before;
      add(middleFrom, from, level, !subtract);
    } else add(from, innerFrom, level, subtract);
    const after = new Date(innerTo.getTime() + unit);
    // A range that ends at or after now: the rest of its last unit is yet to come, nothing to read.
    const restIsToCome = request.now !== undefined && to.getTime() >= request.now.getTime();
    const edge = to.getTime() - innerTo.getTime();
    if ((2 * edge > unit || (edge > 0 && restIsToCome)) && isInstantInRange(after)) {
      middleTo = after;
      add(to, middleTo, level, !subtract);
    } else add(innerTo, to, level, subtract);
    cut(middleFrom, middleTo, level + 1, subtract);
  };
  const whole = allOfTime(request, needed, tiers.at(-1));
  if (whole) {
    // Every call of the recorded days, less those before the range and those after it.
    const { recorded, rollup } = whole;
    segments.push({ from: recorded.from, to: recorded.to, source: rollup.name });
    cut(recorded.from, request.range.from, -1, true);
    cut(request.range.to, recorded.to, -1, true);
  } else cut(request.range.from, request.range.to, -1, false);
  // A part wholly outside the hours on record (the rest of a range's last week, yet to come) holds
  // no calls: no statement reads it, where it cost one, or an index probe for each of 500 groups.
  const recorded = request.recorded;
  return recorded
    ? segments.filter(
        ({ from, to }) => to.getTime() > recorded.from.getTime() && from.getTime() < recorded.to.getTime(),
      )
    : segments;
}

/**
 * The rollup of all time that reads a request's range as every call recorded
 * less those outside the range, when one covers it and the range holds more
 * of the recorded days than lie outside it, without time buckets (its rows
 * have no time). For counts alone, the one of fewest rows if it holds fewer
 * than the coarsest rollup of the range holds in the range (by the database's
 * estimates); otherwise, or without estimates, the first keyed by no field
 * the coarsest rollup lacks (a row per key of all time, where that one holds
 * a row per key and unit).
 */
function allOfTime(
  request: RollupRequest,
  needed: readonly OutcomeDimension[],
  coarsest: Tier | undefined,
): { rollup: RollupDefinition; recorded: StatsRange } | null {
  const { recorded, range } = request;
  if (!recorded || request.spec !== null || request.outcomeFilter || !coarsest) return null;
  // The statements name the days' bounds: only within the instants a DateTime holds.
  if (!isInstantInRange(recorded.from) || !isInstantInRange(recorded.to)) return null;
  const [from, to] = [range.from.getTime(), range.to.getTime()];
  const inside = Math.min(to, recorded.to.getTime()) - Math.max(from, recorded.from.getTime());
  const outside = Math.max(0, from - recorded.from.getTime()) + Math.max(0, recorded.to.getTime() - to);
  if (inside <= outside) return null;
  const candidates = rollupsCovering('all', needed, request.countsOnly === true);
  const rows = (name: RollupName) => {
    const estimate = request.rollupRows?.[name];
    return estimate !== undefined && estimate > 0 ? estimate : null;
  };
  const tierRows = rows(coarsest.source);
  const sized = candidates.flatMap((rollup) => {
    const estimate = rows(rollup.name);
    return estimate === null ? [] : [{ rollup, estimate }];
  });
  // Counts alone read every row of the range, whichever rollup holds them: the fewest rows win. A
  // histogram is read only for the groups returned, found by the key of a rollup keyed by no field
  // the coarsest lacks.
  if (request.countsOnly && tierRows !== null && sized.length === candidates.length && sized.length > 0) {
    // The coarsest rollup's rows of the range, as a share of its rows of the recorded days.
    const smallest = sized.reduce((a, b) => (b.estimate < a.estimate ? b : a));
    const inRange = (tierRows * inside) / (recorded.to.getTime() - recorded.from.getTime());
    return smallest.estimate < inRange ? { rollup: smallest.rollup, recorded } : null;
  }
  const rollup = candidates.find((each) =>
    each.dimensions.every((field) => coarsest.dimensions.includes(field)),
  );
  return rollup ? { rollup, recorded } : null;
}

/**
 * The largest share of the daily rollup's rows a weekly rollup of counts
 * alone, keyed by the same fields, may hold to be read for whole weeks: its
 * keys must have calls on two days of a week or more, on average. Otherwise
 * its weeks save too few rows to pay for the walk by count they rule out (its
 * weeks are not indexed by group, the daily rollup's are).
 */
const WEEKLY_ROWS_SHARE = 0.5;

/**
 * Whether whole weeks are read from a weekly rollup rather than from the
 * daily tier: always from one that keeps histograms or is keyed by fewer
 * fields; from one of counts alone keyed by the same fields only where it
 * holds at most WEEKLY_ROWS_SHARE of the daily rollup's rows, by the
 * database's estimates (without them it is: a weekly row never holds more
 * than the days it sums).
 */
function weeksPay(rollup: RollupDefinition, finer: Tier, request: RollupRequest): boolean {
  if (rollup.grain !== 'week' || !rollup.countsOnly || rollup.dimensions.length < finer.dimensions.length)
    return true;
  const weekly = request.rollupRows?.[rollup.name];
  const daily = request.rollupRows?.[finer.source];
  return weekly === undefined || daily === undefined || weekly <= WEEKLY_ROWS_SHARE * daily;
}

interface Tier {
  grain: RollupGrain;
  source: RollupName;
  dimensions: readonly OutcomeDimension[];
  /** Its units are not aligned with the buckets: each is corrected by moving rows of a finer tier. */
  shifted: boolean;
}

/**
 * The parts of the whole units of a grain in [from, to) that lie in another
 * bucket than their unit's start: from the bucket boundary inside a unit to
 * the unit's end (a unit a bucket holds whole has none). The rows a
 * `movedFrom` segment moves lie there.
 */
export function movedParts(range: StatsRange, grain: RollupGrain, spec: BucketSpec): StatsRange[] {
  const unit = GRAIN_MS[grain];
  const parts: StatsRange[] = [];
  for (let start = range.from.getTime(); start < range.to.getTime(); start += unit) {
    const boundary = bucketStart(spec, bucketIndex(spec, new Date(start)) + 1);
    if (boundary.getTime() < start + unit) parts.push({ from: boundary, to: new Date(start + unit) });
  }
  return parts;
}

/**
 * Whether each row of a rollup is a group of the answer on its own, so that
 * the statement reads rows instead of summing them: buckets of the rollup's own
 * unit, aligned with it, and every field of its key either grouped by or
 * filtered to a single value.
 */
export function oneRowPerGroup(
  rollup: RollupDefinition,
  request: {
    groupBy: readonly OutcomeDimension[];
    singleValued: readonly OutcomeDimension[];
    spec: BucketSpec | null;
  },
): boolean {
  const spec = request.spec;
  if (
    spec === null ||
    rollup.grain === 'all' ||
    spec.sizeMs !== GRAIN_MS[rollup.grain] ||
    !bucketsHoldUnits(rollup.grain, spec)
  )
    return false;
  return rollup.dimensions.every(
    (field) => request.groupBy.includes(field) || request.singleValued.includes(field),
  );
}
