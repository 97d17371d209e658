import { runStatsCells, runWaitRows } from '../db/run-stats.ts';
import { type RequestKind, type RequestState, requestStateAt } from '../domain/human-request.ts';
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
/** How the runs counted waited for people: per kind and state of their requests. */
export interface RunWaits {
  kind: RequestKind;
  state: RequestState;
  /** Runs with at least one such request. */
  runs: number;
  requests: number;
  /** Time spent waiting, summed over the requests: from each request to its decision, expiry or run end, whichever came first, or to now while open. */
  waitMs: number;
  longestWaitMs: number;
}

export interface RunStatsAnswer extends RunStatsPage {
  /** The requests of the same runs, read only when asked for. */
  waited(): Promise<RunWaits[]>;
}

export async function runStats(
  { db, actor }: Scope,
  request: RunStatsRequest,
  now = new Date(),
): Promise<RunStatsAnswer> {
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
  if (owners?.length === 0) return { groups: [], truncated: false, waited: async () => [] };
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
  const waited = async (): Promise<RunWaits[]> => {
    const rows = await runWaitRows(
      db,
      { range: window.range, configurations: filter.configurations, owners, statuses: filter.statuses },
      now,
    );
    // Rows differ in what bears on their state; several may read as one (open past expiry: expired).
    const byState = new Map<string, RunWaits & { runIds: Set<number> }>();
    for (const row of rows) {
      const state = requestStateAt(
        { state: row.state as RequestState, expiresAt: row.pastExpiry ? now : null },
        { finishedAt: row.runEnded ? now : null },
        now,
      );
      const key = `${row.kind}:${state}`;
      const into = byState.get(key) ?? {
        kind: row.kind as RequestKind,
        state,
        runs: 0,
        runIds: new Set<number>(),
        requests: 0,
        waitMs: 0,
        longestWaitMs: 0,
      };
      for (const id of row.runIds) into.runIds.add(id);
      into.runs = into.runIds.size;
      into.requests += row.requests;
      into.waitMs += row.waitMs;
      into.longestWaitMs = Math.max(into.longestWaitMs, row.longestWaitMs);
      byState.set(key, into);
    }
    return [...byState.values()]
      .map(({ runIds: _ids, ...waits }) => waits)
      .sort((a, b) => a.kind.localeCompare(b.kind) || a.state.localeCompare(b.state));
  };
  return { ...runStatsPage(cells, window, first), waited };
}
