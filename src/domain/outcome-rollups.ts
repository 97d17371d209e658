import type { OutcomeDimension } from './outcome-stats.ts';
import type { BucketSpec, StatsRange } from './time-buckets.ts';

/**
 * Which rollup of the tool calls answers which part of a statistics request:
 * the one definition, used by the statements (src/db/outcome-stats.ts) and
 * tested on its own.
 *
 * A rollup holds the calls counted per unit of time (a UTC hour or a UTC day)
 * and per the key fields it lists; it answers a request whose grouping and
 * filters need no field it lacks. The lists are in order of expected size,
 * smallest first, and the first rollup that covers a request answers it.
 */
export type RollupGrain = 'hour' | 'day';

export type RollupName =
  | 'serverDaily'
  | 'serverToolDaily'
  | 'ownerConfigurationDaily'
  | 'ownerToolDaily'
  | 'ownerConfigurationServerDaily'
  | 'everyKeyDaily'
  | 'serverHourly'
  | 'ownerConfigurationHourly'
  | 'everyKeyHourly';

export interface RollupDefinition {
  name: RollupName;
  grain: RollupGrain;
  dimensions: readonly OutcomeDimension[];
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
];

/** What a request asks of the rows: the fields it groups and filters by, and whether it filters by outcome. */
export interface RollupRequest {
  groupBy: readonly OutcomeDimension[];
  /** Fields with a filter (an actor who sees only its own runs filters by owner). */
  filteredBy: readonly OutcomeDimension[];
  outcomeFilter: boolean;
  range: StatsRange;
  spec: BucketSpec | null;
}

/** A part of the range and where it is read from: a rollup, or run_steps itself (`raw`). */
export interface StatsSegment {
  from: Date;
  to: Date;
  source: RollupName | 'raw';
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The first (smallest) rollup of a grain whose key holds every field the request needs. */
export function rollupFor(
  grain: RollupGrain,
  needed: readonly OutcomeDimension[],
): RollupDefinition | undefined {
  return OUTCOME_ROLLUPS.find(
    (rollup) => rollup.grain === grain && needed.every((field) => rollup.dimensions.includes(field)),
  );
}

/**
 * The largest time unit whose whole units the buckets are built from: a day
 * when buckets (if any) start at UTC midnight, an hour when they start on a
 * whole UTC hour, else none (an offset such as +05:30 reads run_steps). A
 * duration histogram mixes every outcome, so an outcome filter reads run_steps too.
 */
export function rollupUnit(request: Pick<RollupRequest, 'outcomeFilter' | 'spec'>): RollupGrain | null {
  if (request.outcomeFilter) return null;
  const spec = request.spec;
  if (spec === null) return 'day';
  if (spec.bucket !== 'hour' && spec.shiftMs % DAY_MS === 0) return 'day';
  return spec.shiftMs % HOUR_MS === 0 ? 'hour' : null;
}

function floorTo(at: Date, unitMs: number, roundUp: boolean): Date {
  const floor = Math.floor(at.getTime() / unitMs) * unitMs;
  return new Date(roundUp && floor < at.getTime() ? floor + unitMs : floor);
}

/**
 * The range cut into segments: whole UTC days from the smallest daily rollup
 * that covers the request, the whole hours around them from the smallest
 * hourly one, the partial hours at the edges from run_steps; everything from
 * run_steps when no rollup can answer (an outcome filter, an offset that is not
 * a whole hour, a range shorter than an hour).
 */
export function planOutcomeStats(request: RollupRequest): StatsSegment[] {
  const { from, to } = request.range;
  const unit = rollupUnit(request);
  const hourFrom = floorTo(from, HOUR_MS, true);
  const hourTo = floorTo(to, HOUR_MS, false);
  if (unit === null || hourFrom.getTime() >= hourTo.getTime()) return [{ from, to, source: 'raw' }];
  const needed = [...new Set([...request.groupBy, ...request.filteredBy])];
  const hourly = rollupFor('hour', needed)?.name ?? 'raw';
  const daily = rollupFor('day', needed)?.name ?? 'raw';
  const segments: StatsSegment[] = [];
  const add = (start: Date, end: Date, source: StatsSegment['source']) => {
    if (start.getTime() < end.getTime()) segments.push({ from: start, to: end, source });
  };
  add(from, hourFrom, 'raw');
  const dayFrom = floorTo(from, DAY_MS, true);
  const dayTo = floorTo(to, DAY_MS, false);
  if (unit === 'day' && dayFrom.getTime() < dayTo.getTime()) {
    add(hourFrom, dayFrom, hourly);
    add(dayFrom, dayTo, daily);
    add(dayTo, hourTo, hourly);
  } else {
    add(hourFrom, hourTo, hourly);
  }
  add(hourTo, to, 'raw');
  return segments;
}

const GRAIN_MS: Readonly<Record<RollupGrain, number>> = { hour: HOUR_MS, day: DAY_MS };

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
  const unit = GRAIN_MS[rollup.grain];
  const spec = request.spec;
  if (spec === null || spec.sizeMs !== unit || spec.shiftMs % unit !== 0) return false;
  return rollup.dimensions.every(
    (field) => request.groupBy.includes(field) || request.singleValued.includes(field),
  );
}
