import { InvalidInputError } from './errors.ts';
import { checkEachOneOf } from './limits.ts';
import type { RunStatus, TerminationReason } from './run-status.ts';
import { bucketIndices, bucketStart, type StatsWindow } from './time-buckets.ts';

/** What runs may be grouped by, in the order a group's key compares. */
export const RUN_DIMENSIONS = ['configuration', 'owner', 'status', 'terminationReason'] as const;
export type RunDimension = (typeof RUN_DIMENSIONS)[number];

/** At least one dimension, each at most once. */
export function checkRunGroupBy(groupBy: readonly RunDimension[]): readonly RunDimension[] {
  checkEachOneOf(groupBy, RUN_DIMENSIONS, 'groupBy');
  if (groupBy.length === 0) {
    throw new InvalidInputError('VALUE_EMPTY', 'groupBy must name at least one dimension', 'groupBy');
  }
  if (new Set(groupBy).size !== groupBy.length) {
    throw new InvalidInputError('VALUE_INVALID', 'groupBy names a dimension more than once', 'groupBy');
  }
  return groupBy;
}

/** The key of a group of runs: null in a dimension not grouped by (and a reason a run has none of yet). */
export interface RunGroupKey {
  configuration: string | null;
  owner: string | null;
  status: RunStatus | null;
  terminationReason: TerminationReason | null;
}

/**
 * One group's runs in one bucket, as the database counts them: `groupRank`
 * numbers the groups from 1 in their order (runs descending, then key).
 */
export interface RunStatsCell extends RunGroupKey {
  bucket: number | null;
  runs: number;
  groupRank: number;
}

export interface RunStatsGroup extends RunGroupKey {
  bucketStart: Date | null;
  runs: number;
}

export interface RunStatsPage {
  groups: RunStatsGroup[];
  /** More groups matched than `first`. */
  truncated: boolean;
}

const keyOf = ({ configuration, owner, status, terminationReason }: RunGroupKey): RunGroupKey => ({
  configuration,
  owner,
  status,
  terminationReason,
});

/**
 * The page from the counted cells (at most `first + 1` groups, in rank
 * order): the first `first` groups, and with a bucket one row per bucket of
 * the range for each, empty buckets at zero, the rows of a group together.
 */
export function runStatsPage(
  cells: readonly RunStatsCell[],
  window: StatsWindow,
  first: number,
): RunStatsPage {
  const byRank = new Map<number, RunStatsCell[]>();
  for (const cell of cells) {
    const ranked = byRank.get(cell.groupRank);
    if (ranked) ranked.push(cell);
    else byRank.set(cell.groupRank, [cell]);
  }
  const ranks = [...byRank.keys()].sort((a, b) => a - b);
  const kept = ranks.slice(0, first);
  const truncated = ranks.length > first;
  const { spec, range } = window;
  const groups = kept.flatMap((rank): RunStatsGroup[] => {
    const groupCells = byRank.get(rank) ?? [];
    const [head] = groupCells;
    if (!head) return [];
    const key = keyOf(head);
    if (!spec) return [{ ...key, bucketStart: null, runs: groupCells.reduce((sum, c) => sum + c.runs, 0) }];
    const runsByBucket = new Map(groupCells.map((cell) => [cell.bucket, cell.runs]));
    return bucketIndices(spec, range).map((bucket) => ({
      ...key,
      bucketStart: bucketStart(spec, bucket),
      runs: runsByBucket.get(bucket) ?? 0,
    }));
  });
  return { groups, truncated };
}
