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
  | 'ownerConfigurationServerToolDaily'
  | 'serverHourly'
  | 'ownerConfigurationHourly'
  | 'ownerConfigurationServerToolHourly'
  | 'ownerWeekly'
  | 'serverToolWeekly'
  | 'ownerConfigurationWeekly'
  | 'ownerServerWeekly'
  | 'configurationServerWeekly'
  | 'ownerToolWeekly'
  | 'ownerConfigurationServerWeekly'
  | 'configurationToolWeekly'
  | 'ownerConfigurationToolWeekly'
  | 'ownerConfigurationServerToolWeekly'
  | 'ownerConfigurationServerToolAllTime'
  | 'ownerConfigurationToolAllTime'
  | 'ownerConfigurationServerAllTime'
  | 'configurationServerToolAllTime'
  | 'ownerServerToolAllTime'
  | 'ownerServerAllTime'
  | 'configurationServerAllTime';

/**
 * Where a rollup keeps the histograms of its calls' durations:
 * - `inline`: in its rows, an array of a count per duration bucket;
 * - `beside`: in a table beside it, a row per key, unit and duration bucket
 *   with calls (a rollup keyed by every field holds about a row per call or
 *   two, whose arrays would be all but empty);
 * - `apart`: in a table beside it, a row per key with its array (a ranking's
 *   first pass reads the counts alone, the second the histograms of the groups
 *   it returns);
 * - `none`: it keeps none, and answers only a request that reads none.
 */
export type RollupDurations = 'inline' | 'beside' | 'apart' | 'none';

/** A key field, or the rollup's unit of time. */
export type RollupColumn = OutcomeDimension | 'time';

/**
 * An index of a rollup beside its primary key, for a read it serves (its
 * name, short: a table's name and the index's must fit in 63 characters):
 * - `fields`: a B-tree on these columns, then the counts when `withCounts`
 *   (a read of a group's counts from the index alone), in byte order (`C`)
 *   when `byteOrder` (a walk in the order names are compared in);
 * - `calls`: on the calls of a row (ok + failed + cancelled), to find the
 *   largest groups first;
 * - `failureRate` / `failures`: descending, then the key in byte order, to
 *   rank groups by failure rate or failures without sorting them.
 * A `beside` table of durations takes an index of `fields` as well when
 * `durations` says so, its bucket and calls after them.
 */
export type RollupIndex =
  | {
      kind: 'fields';
      name: string;
      fields: readonly RollupColumn[];
      withCounts?: true;
      byteOrder?: true;
      /** Also on the durations beside it; `only`: there alone. */
      durations?: 'also' | 'only';
      /**
       * With `withCounts`: a grouping by at least this many of its first key
       * fields reads each group as one range of it (default: every key field
       * before the unit of time).
       */
      groupsFrom?: number;
    }
  | { kind: 'calls' | 'failureRate' | 'failures'; name: string; fields?: readonly OutcomeDimension[] };

export interface RollupDefinition {
  /** Its key fields and unit: `ownerToolDaily` is keyed by owner and tool, a row per UTC day. */
  name: RollupName;
  grain: RollupSpan;
  /** Its key fields, in the order of its primary key after its unit of time. */
  dimensions: readonly OutcomeDimension[];
  durations: RollupDurations;
  indexes?: readonly RollupIndex[];
  /** The requests it answers (a part of), for the design's table. */
  serves: string;
}

/** The key fields in the order a rollup's name lists them. */
export const NAME_ORDER: readonly OutcomeDimension[] = ['owner', 'configuration', 'server', 'tool'];
const GRAIN_NAMES: Readonly<Record<RollupSpan, string>> = {
  hour: 'Hourly',
  day: 'Daily',
  week: 'Weekly',
  all: 'AllTime',
};

/** The name a rollup of these fields and this unit has: its fields in NAME_ORDER, then its unit. */
export function rollupNameOf(grain: RollupSpan, dimensions: readonly OutcomeDimension[]): string {
  const fields = NAME_ORDER.filter((field) => dimensions.includes(field));
  const words = fields.map((field, i) => (i === 0 ? field : field[0]?.toUpperCase() + field.slice(1)));
  return `${words.join('')}${GRAIN_NAMES[grain]}`;
}

/** Whether a rollup keeps histograms: one that keeps none answers only counts. */
export const keepsDurations = (rollup: RollupDefinition) => rollup.durations !== 'none';

const EVERY_KEY: readonly OutcomeDimension[] = ['owner', 'configuration', 'server', 'tool'];
/** An index led by the owner, then the unit: an actor who reads only its own runs. */
const BY_OWNER: RollupIndex = { kind: 'fields', name: 'owner', fields: ['owner', 'time'] };
/** The indexes a ranking of all time walks: the largest groups, and the groups in the order of their names. */
const RANKED = (keyOrder: readonly OutcomeDimension[], byRate: boolean): RollupIndex[] => [
  { kind: 'calls', name: 'calls' },
  ...(byRate
    ? [
        { kind: 'failureRate', name: 'rate', fields: keyOrder } as const,
        { kind: 'failures', name: 'failures', fields: keyOrder } as const,
      ]
    : []),
  { kind: 'fields', name: 'order', fields: keyOrder, byteOrder: true },
];
/** A group's weeks, and their counts, from the index alone (a ranking's first pass over weeks). */
const GROUP_WEEKS = (fields: readonly OutcomeDimension[]): RollupIndex => ({
  kind: 'fields',
  name: 'group',
  fields: [...fields, 'time'],
  withCounts: true,
});

/**
 * The catalogue: every rollup, what it is keyed by, what its rows hold and
 * the indexes its reads need. The tables, the fold's statements, the
 * recount, the statements that read them (src/db/rollup-sql.ts,
 * src/db/outcome-stats.ts), the tests' lists and the table in
 * docs/statistics-design.md are made from it.
 */
export const OUTCOME_ROLLUPS: readonly RollupDefinition[] = [
  {
    name: 'serverDaily',
    serves: 'no grouping, or by server',
    grain: 'day',
    dimensions: ['server'],
    durations: 'inline',
  },
  {
    name: 'serverToolDaily',
    serves: 'by tool, by server and tool',
    grain: 'day',
    dimensions: ['server', 'tool'],
    durations: 'inline',
    indexes: [{ kind: 'fields', name: 'server', fields: ['server', 'time'] }],
  },
  {
    name: 'ownerConfigurationDaily',
    serves: 'by owner, by configuration, and both; an own-runs actor without server or tool',
    grain: 'day',
    dimensions: ['owner', 'configuration'],
    durations: 'inline',
    indexes: [BY_OWNER],
  },
  {
    name: 'ownerToolDaily',
    serves: 'owner × tool; an own-runs actor by tool',
    grain: 'day',
    dimensions: ['owner', 'tool'],
    durations: 'inline',
    indexes: [BY_OWNER],
  },
  {
    name: 'ownerConfigurationServerDaily',
    serves: 'owner × server, configuration × server; an own-runs actor by server',
    grain: 'day',
    dimensions: ['owner', 'configuration', 'server'],
    durations: 'inline',
    indexes: [BY_OWNER],
  },
  {
    // Grouped by all four fields, by owner, server and tool (a group's few configurations, one each on
    // most owners, read with it; the durations have one more index with the day after the tool, so such
    // a group reads the range's days alone) or by configuration, server and tool (its few owners: that
    // index has the day before the owner). Each index holds the columns summed, so a group is read
    // without the table.
    name: 'ownerConfigurationServerToolDaily',
    serves:
      "everything else by day (configuration × tool, owner × configuration × tool, owner × server × tool, all four); the histograms of a ranking's groups",
    grain: 'day',
    dimensions: EVERY_KEY,
    durations: 'beside',
    indexes: [
      {
        kind: 'fields',
        name: 'group',
        fields: ['owner', 'server', 'tool', 'configuration', 'time'],
        withCounts: true,
        durations: 'also',
        groupsFrom: 3,
      },
      {
        kind: 'fields',
        name: 'cgroup',
        fields: ['configuration', 'server', 'tool', 'time', 'owner'],
        withCounts: true,
        durations: 'also',
        groupsFrom: 3,
      },
      {
        kind: 'fields',
        name: 'toolday',
        fields: ['owner', 'server', 'tool', 'time'],
        withCounts: true,
        durations: 'only',
      },
    ],
  },
  {
    name: 'serverHourly',
    serves: 'the hours of no grouping or by server; the hours on record',
    grain: 'hour',
    dimensions: ['server'],
    durations: 'inline',
  },
  {
    name: 'ownerConfigurationHourly',
    serves: 'the hours of by owner and by configuration',
    grain: 'hour',
    dimensions: ['owner', 'configuration'],
    durations: 'inline',
    indexes: [BY_OWNER],
  },
  {
    name: 'ownerConfigurationServerToolHourly',
    serves: 'the hours of everything else',
    grain: 'hour',
    dimensions: EVERY_KEY,
    durations: 'beside',
    indexes: [{ ...BY_OWNER, durations: 'also' }],
  },
  // Weeks where a day holds many rows (many owners and configurations, and
  // their servers): a week's row is read instead of seven days' rows.
  // Keyed by exactly the fields of the groupings asked most: a row per key and week, where a
  // rollup keyed by more fields holds one per value of the others.
  {
    name: 'ownerWeekly',
    serves: 'by owner; an own-runs actor without server, tool or configuration',
    grain: 'week',
    dimensions: ['owner'],
    durations: 'inline',
    indexes: [BY_OWNER],
  },
  {
    name: 'serverToolWeekly',
    serves: 'by tool, server × tool',
    grain: 'week',
    dimensions: ['server', 'tool'],
    durations: 'inline',
  },
  {
    name: 'ownerConfigurationWeekly',
    serves: 'by configuration, owner × configuration',
    grain: 'week',
    dimensions: ['owner', 'configuration'],
    durations: 'inline',
    indexes: [BY_OWNER],
  },
  {
    name: 'ownerServerWeekly',
    serves: 'owner × server; an own-runs actor by server',
    grain: 'week',
    dimensions: ['owner', 'server'],
    durations: 'inline',
    indexes: [GROUP_WEEKS(['owner', 'server'])],
  },
  {
    name: 'configurationServerWeekly',
    serves: 'configuration × server',
    grain: 'week',
    dimensions: ['configuration', 'server'],
    durations: 'inline',
    indexes: [GROUP_WEEKS(['configuration', 'server'])],
  },
  {
    name: 'ownerToolWeekly',
    serves: 'owner × tool; an own-runs actor by tool',
    grain: 'week',
    dimensions: ['owner', 'tool'],
    durations: 'inline',
    indexes: [BY_OWNER],
  },
  {
    name: 'ownerConfigurationServerWeekly',
    serves: 'owner × configuration × server',
    grain: 'week',
    dimensions: ['owner', 'configuration', 'server'],
    durations: 'inline',
    indexes: [GROUP_WEEKS(['owner', 'configuration', 'server'])],
  },
  {
    name: 'configurationToolWeekly',
    serves: 'configuration × tool',
    grain: 'week',
    dimensions: ['configuration', 'tool'],
    durations: 'inline',
  },
  {
    name: 'ownerConfigurationToolWeekly',
    serves: 'owner × configuration × tool; an own-runs actor by configuration and tool',
    grain: 'week',
    dimensions: ['owner', 'configuration', 'tool'],
    durations: 'inline',
    indexes: [GROUP_WEEKS(['owner', 'configuration', 'tool'])],
  },
  // Every field, counts alone: the weeks of a ranking's first pass none of the above answers (all
  // four fields, owner or configuration x server x tool). Its histograms would cost every write
  // a row per duration bucket and key; the groups returned read theirs from the days.
  {
    name: 'ownerConfigurationServerToolWeekly',
    serves:
      "a ranking's first pass of all four fields, owner × server × tool and configuration × server × tool, where its weeks hold at most half the rows of the days",
    grain: 'week',
    dimensions: EVERY_KEY,
    durations: 'none',
  },
  // Every call ever recorded, per key: a range holding most of the calls is read as all of them
  // less those outside it, where the daily rollup keyed by every field holds about a row per call.
  // Counts alone keyed by exactly the fields of groupings with many groups, whose groups the rows
  // keyed by every field would sum a hash entry each.
  {
    name: 'configurationServerAllTime',
    serves: "a ranking's first pass of configuration × server",
    grain: 'all',
    dimensions: ['configuration', 'server'],
    durations: 'none',
    indexes: RANKED(['server', 'configuration'], false),
  },
  {
    name: 'ownerServerAllTime',
    serves: 'the first pass of owner × server, and of an own-runs actor by server',
    grain: 'all',
    dimensions: ['owner', 'server'],
    durations: 'none',
    indexes: RANKED(['server', 'owner'], false),
  },
  {
    name: 'ownerConfigurationToolAllTime',
    serves: 'the first pass of owner × configuration × tool, configuration × tool, owner × tool',
    grain: 'all',
    dimensions: ['owner', 'configuration', 'tool'],
    durations: 'none',
    indexes: RANKED(['tool', 'configuration', 'owner'], false),
  },
  {
    name: 'ownerConfigurationServerAllTime',
    serves: 'the first pass of owner × configuration × server',
    grain: 'all',
    dimensions: ['owner', 'configuration', 'server'],
    durations: 'none',
    indexes: RANKED(['server', 'configuration', 'owner'], false),
  },
  {
    name: 'configurationServerToolAllTime',
    serves: 'the first pass of configuration × server × tool',
    grain: 'all',
    dimensions: ['server', 'tool', 'configuration'],
    durations: 'none',
    indexes: RANKED(['server', 'tool', 'configuration'], true),
  },
  {
    name: 'ownerServerToolAllTime',
    serves: 'the first pass of owner × server × tool',
    grain: 'all',
    dimensions: ['server', 'tool', 'owner'],
    durations: 'none',
    indexes: RANKED(['server', 'tool', 'owner'], true),
  },
  // Every call ever recorded, per key of all four fields, with histograms: what the others count,
  // and the histograms of the groups a ranking returns.
  {
    name: 'ownerConfigurationServerToolAllTime',
    serves:
      'the counts of all four fields; the histograms of the second pass of the groupings with server and tool',
    grain: 'all',
    dimensions: ['server', 'tool', 'owner', 'configuration'],
    durations: 'apart',
    indexes: RANKED(['server', 'tool', 'configuration', 'owner'], true),
  },
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
      (countsOnly || keepsDurations(rollup)) &&
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
  if (rollup.grain !== 'week' || keepsDurations(rollup) || rollup.dimensions.length < finer.dimensions.length)
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
