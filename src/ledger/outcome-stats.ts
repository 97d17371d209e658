import type { Database } from '../db/connection.ts';
import {
  callsOnRecord,
  groupsRankedByCounts,
  inStatsSnapshot,
  outcomeStatsCells,
  type StatsQuery,
} from '../db/outcome-stats.ts';
import { checkEachOneOf, checkInteger, checkOneOf, STATS_LIMITS } from '../domain/limits.ts';
import { NO_OUTCOMES, type OutcomeCounts, outcomeCounts } from '../domain/outcome-counts.ts';
import {
  ORDER_DIRECTIONS,
  type OrderDirection,
  OUTCOME_DIMENSIONS,
  OUTCOME_ORDER_FIELDS,
  type OutcomeDimension,
  type OutcomeOrderField,
  type OutcomeStatsPage,
  type RankOptions,
  rankGroups,
  type StatsCell,
  summarise,
} from '../domain/outcome-stats.ts';
import { restrictOwners } from '../domain/permissions.ts';
import {
  type BucketSpec,
  type StatsRange,
  statsRange,
  statsWindow,
  type TimeBucket,
} from '../domain/time-buckets.ts';
import { TOOL_OUTCOMES, type ToolOutcome } from '../domain/tool-outcome.ts';
import type { Scope } from './scope.ts';

export interface ToolStepFilter {
  occurredAfter?: Date | null;
  occurredBefore?: Date | null;
  servers?: readonly string[] | null;
  tools?: readonly string[] | null;
  configurations?: readonly string[] | null;
  owners?: readonly string[] | null;
  outcomes?: readonly ToolOutcome[] | null;
}

export type { OutcomeStatsPage };

export interface OutcomeStatsRequest {
  groupBy: readonly OutcomeDimension[];
  filter?: ToolStepFilter | null;
  bucket?: TimeBucket | null;
  utcOffsetMinutes: number;
  /** With a bucket: false leaves out the rows of buckets without calls. Default true. */
  emptyBuckets?: boolean | null;
  orderBy?: { field: OutcomeOrderField; direction: OrderDirection } | null;
  minCalls: number;
  first: number;
  /** Whether durations are wanted: reading the histogram costs, so only when asked. */
  durations: boolean;
}

interface Pipeline {
  groupBy: readonly OutcomeDimension[];
  range: StatsRange;
  spec: BucketSpec | null;
  filter: ToolStepFilter;
  orderBy: OutcomeOrderField;
  descending: boolean;
  minCalls: number;
  first: number;
  emptyBuckets: boolean;
  durations: boolean;
  /** The instant the request is answered at. */
  now: Date;
}

/**
 * The one statistics pipeline: the owners the actor may see, the cells from
 * the rollups, then groups summed, ordered and cut. Nothing to see: no statement.
 *
 * Grouped by two fields or more, the groups are ranked in the database by
 * their counts first, and only the groups returned are read again: for their
 * time buckets, or for their durations (summing a histogram, 65 counts, costs
 * many times what summing three counts does). Two fields multiply into
 * thousands of groups, of which `first` are returned. A single field without
 * time buckets has as many groups as names (servers, tools...), where the
 * first pass would cost more than it saves; with them, each group is a row
 * for every bucket (168 an hour over a week), read only for the groups
 * returned: hourly by owner over 7 days, 100 of 300 owners, took 215 ms read
 * whole and 142 ranked first, on `wide`.
 */
async function outcomeGroups({ db, actor }: Scope, query: Pipeline): Promise<OutcomeStatsPage> {
  const owners = restrictOwners(actor, query.filter.owners);
  if (owners?.length === 0) return { groups: [], truncated: false };
  // One snapshot for every statement: a part of the range taken away from a whole unit, and the
  // second pass, see exactly the calls the others see, whatever commits meanwhile.
  return inStatsSnapshot(db, (tx) => groupsInSnapshot(tx, owners, query));
}

async function groupsInSnapshot(
  db: Database,
  owners: readonly string[] | null,
  query: Pipeline,
): Promise<OutcomeStatsPage> {
  const { range, spec } = query;
  const statsQuery = {
    groupBy: [...new Set(query.groupBy)],
    range,
    spec,
    servers: query.filter.servers,
    tools: query.filter.tools,
    configurations: query.filter.configurations,
    owners,
    outcomes: query.filter.outcomes,
    now: query.now,
    // Without buckets a range may be read as every call recorded less those outside it.
    ...(spec === null ? await callsOnRecord(db) : {}),
  };
  const ranking = {
    orderBy: query.orderBy,
    descending: query.descending,
    minCalls: query.minCalls,
    first: query.first,
    emptyBuckets: query.emptyBuckets,
  };
  if (statsQuery.groupBy.length === 0 || (statsQuery.groupBy.length === 1 && spec === null)) {
    const cells = await outcomeStatsCells(db, { ...statsQuery, durations: query.durations });
    return summarise(cells, { ...ranking, spec, range });
  }
  // The first pass counts each group over the whole range, buckets or not: with buckets too, it may
  // read the range as every call recorded less those outside it.
  const { groups, cut } = await rankedGroups(
    db,
    spec === null ? statsQuery : { ...statsQuery, ...(await callsOnRecord(db)) },
    ranking,
  );
  if (groups.length === 0) return { groups: [], truncated: cut };
  // Without time buckets the first pass counted each group over the whole range: its histograms are
  // all that is left to read, if asked for.
  const counted = spec === null;
  if (counted && !query.durations)
    return { groups: summarise(groups, { ...ranking, spec, range }).groups, truncated: cut };
  const cells = await outcomeStatsCells(db, {
    ...statsQuery,
    durations: query.durations,
    onlyGroups: cut ? groups : null,
    histogramsOnly: counted,
  });
  // Only the groups returned were read: whether others were left out, the first pass says.
  const summary = summarise(counted ? [...groups, ...cells] : cells, { ...ranking, spec, range });
  return { groups: summary.groups, truncated: cut };
}

/**
 * The first pass: the groups returned, in order, each with its counts over
 * the whole range, and whether others were left out. The database sums the
 * groups, ranks them as the domain does and returns the first `first + 1`.
 */
async function rankedGroups(
  db: Database,
  statsQuery: StatsQuery,
  ranking: RankOptions,
): Promise<{ groups: StatsCell[]; cut: boolean }> {
  const candidates = await groupsRankedByCounts(db, statsQuery, ranking);
  return { groups: rankGroups(candidates.cells, ranking).groups, cut: candidates.more };
}

/** Tool calls grouped by any of server, tool, configuration and owner, optionally by time bucket. */
export async function toolOutcomeStats(
  scope: Scope,
  request: OutcomeStatsRequest,
  now = new Date(),
): Promise<OutcomeStatsPage> {
  const first = checkInteger(request.first, 'first', 0, STATS_LIMITS.maxGroups);
  return outcomeGroupsOf(scope, { ...request, first }, now);
}

function outcomeGroupsOf(scope: Scope, request: OutcomeStatsRequest, now: Date) {
  const filter = request.filter ?? {};
  // Words outside their sets (from a cast, or an entry point without a schema) are refused here,
  // never made into a statement.
  checkEachOneOf(request.groupBy, OUTCOME_DIMENSIONS, 'groupBy');
  checkEachOneOf(filter.outcomes, TOOL_OUTCOMES, 'filter.outcomes');
  if (request.orderBy) {
    checkOneOf(request.orderBy.field, OUTCOME_ORDER_FIELDS, 'orderBy.field');
    checkOneOf(request.orderBy.direction, ORDER_DIRECTIONS, 'orderBy.direction');
  }
  const { range, spec } = statsWindow(
    {
      after: filter.occurredAfter,
      before: filter.occurredBefore,
      bucket: request.bucket,
      utcOffsetMinutes: request.utcOffsetMinutes,
    },
    now,
  );
  return outcomeGroups(scope, {
    groupBy: request.groupBy,
    range,
    spec,
    filter,
    orderBy: request.orderBy?.field ?? 'key',
    descending: (request.orderBy?.direction ?? 'asc') === 'desc',
    first: request.first,
    minCalls: checkInteger(request.minCalls, 'minCalls', 0, Number.MAX_SAFE_INTEGER),
    emptyBuckets: request.emptyBuckets ?? true,
    durations: request.durations,
    now,
  });
}

/** Tool calls per MCP server over the default range, in runs the actor may see: one statement for all servers. */
export async function serverOutcomeCounts(
  scope: Scope,
  servers: readonly string[],
  now = new Date(),
): Promise<OutcomeCounts[]> {
  const { groups } = await outcomeGroups(scope, {
    groupBy: ['server'],
    range: statsRange(null, null, now),
    spec: null,
    filter: { servers },
    orderBy: 'key',
    descending: false,
    minCalls: 0,
    first: servers.length,
    emptyBuckets: true,
    durations: false,
    now,
  });
  const byServer = new Map(groups.map((group) => [group.server, group.counts]));
  const noCalls = outcomeCounts(NO_OUTCOMES);
  return servers.map((server) => byServer.get(server) ?? noCalls);
}
