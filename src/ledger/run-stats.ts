import { runStatsCells } from '../db/run-stats.ts';
import { checkEachOneOf, checkInteger, STATS_LIMITS } from '../domain/limits.ts';
import { restrictOwners } from '../domain/permissions.ts';
import { checkRunGroupBy, type RunDimension, type RunStatsPage, runStatsPage } from '../domain/run-stats.ts';
import { RUN_STATUSES, type RunStatus } from '../domain/run-status.ts';
import { statsWindow, type TimeBucket } from '../domain/time-buckets.ts';
import type { Scope } from './scope.ts';

export interface RunStatsFilter {
  createdAfter?: Date | null;
  createdBefore?: Date | null;
  configurations?: readonly string[] | null;
  owners?: readonly string[] | null;
  statuses?: readonly RunStatus[] | null;
}

export interface RunStatsRequest {
  groupBy: readonly RunDimension[];
  bucket?: TimeBucket | null;
  filter?: RunStatsFilter | null;
  first: number;
  utcOffsetMinutes: number;
}

/**
 * Runs counted by any of configuration, owner, status and termination reason,
 * by when they were created, optionally per time bucket; the range, bucket and
 * offset rules are toolOutcomeStats's. An actor without read_all_runs counts
 * its own runs only; asking for nobody it may see runs no statement.
 */
export async function runStats(
  { db, actor }: Scope,
  request: RunStatsRequest,
  now = new Date(),
): Promise<RunStatsPage> {
  const groupBy = checkRunGroupBy(request.groupBy);
  const first = checkInteger(request.first, 'first', 1, STATS_LIMITS.maxGroups);
  const filter = request.filter ?? {};
  checkEachOneOf(filter.statuses, RUN_STATUSES, 'filter.statuses');
  const window = statsWindow(
    {
      after: filter.createdAfter,
      before: filter.createdBefore,
      bucket: request.bucket,
      utcOffsetMinutes: request.utcOffsetMinutes,
    },
    now,
    { after: 'createdAfter', before: 'createdBefore' },
  );
  const owners = restrictOwners(actor, filter.owners);
  if (owners?.length === 0) return { groups: [], truncated: false };
  // One group more than first: its presence says the list was cut.
  const cells = await runStatsCells(db, {
    groupBy,
    range: window.range,
    spec: window.spec,
    configurations: filter.configurations,
    owners,
    statuses: filter.statuses,
    groups: first + 1,
  });
  return runStatsPage(cells, window, first);
}
