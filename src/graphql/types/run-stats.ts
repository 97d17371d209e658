import { STATS_LIMITS } from '../../domain/limits.ts';
import type { RunStatsGroup } from '../../domain/run-stats.ts';
import { type RunStatsAnswer, type RunWaits, runStats } from '../../ledger/run-stats.ts';
import { builder } from '../builder.ts';
import { storableStrings } from '../input-text.ts';
import { RunStatusEnum, TerminationReasonEnum } from './enums.ts';
import { RequestKindEnum, RequestStateEnum } from './human-request.ts';
import { TimeBucketEnum } from './outcome-stats.ts';

const RunGroupByEnum = builder.enumType('RunGroupBy', {
  values: {
    CONFIGURATION: { value: 'configuration' },
    OWNER: { value: 'owner' },
    STATUS: { value: 'status' },
    TERMINATION_REASON: { value: 'terminationReason' },
  } as const,
});

const RunStatsFilter = builder.inputType('RunStatsFilter', {
  description: `Runs to count, by when they were created. Without a range: the ${STATS_LIMITS.defaultRangeDays} days up to now. A range spans at most ${STATS_LIMITS.maxRangeDays} days.`,
  fields: (t) => ({
    createdAfter: t.field({ type: 'DateTime', description: 'Created at or after this instant (inclusive).' }),
    createdBefore: t.field({
      type: 'DateTime',
      description: 'Created before this instant (exclusive); default now.',
    }),
    configurations: t.stringList(),
    owners: t.stringList(),
    statuses: t.field({ type: [RunStatusEnum] }),
  }),
});

const RunStatsGroupRef = builder.objectRef<RunStatsGroup>('RunStatsGroup').implement({
  description:
    'One group (and bucket) of runs. A field is null when the query did not group by it (and terminationReason is also null for a run that has none yet).',
  fields: (t) => ({
    bucketStart: t.expose('bucketStart', { type: 'DateTime', nullable: true }),
    configuration: t.exposeString('configuration', { nullable: true }),
    owner: t.exposeString('owner', { nullable: true }),
    status: t.expose('status', { type: RunStatusEnum, nullable: true }),
    terminationReason: t.expose('terminationReason', { type: TerminationReasonEnum, nullable: true }),
    runs: t.expose('runs', { type: 'SafeInt' }),
  }),
});

const RunWaitsRef = builder.objectRef<RunWaits>('RunWaits').implement({
  description:
    'How the runs counted waited for people: their requests of one kind in one state (APPROVED, DENIED, EXPIRED, ANSWERED, DECLINED, CANCELLED, or OPEN still). None of them is a failure.',
  fields: (t) => ({
    kind: t.field({ type: RequestKindEnum, resolve: (waits) => waits.kind }),
    state: t.field({ type: RequestStateEnum, resolve: (waits) => waits.state }),
    runs: t.expose('runs', { type: 'SafeInt', description: 'Runs with at least one such request.' }),
    requests: t.expose('requests', { type: 'SafeInt' }),
    waitMs: t.expose('waitMs', {
      type: 'SafeInt',
      description:
        'Time spent waiting, summed over the requests: from each to its decision, its expiry or the end of its run, whichever came first, or to now while open.',
    }),
    longestWaitMs: t.expose('longestWaitMs', { type: 'SafeInt' }),
  }),
});

const RunStatsRef = builder.objectRef<RunStatsAnswer>('RunStats').implement({
  fields: (t) => ({
    waited: t.field({
      type: [RunWaitsRef],
      description:
        'The requests (approvals, inputs) of the same runs, by kind and state: how they waited, and for how long.',
      resolve: (answer) => answer.waited(),
    }),
    groups: t.field({
      type: [RunStatsGroupRef],
      description:
        'Groups by runs, descending, then by key (configuration, owner, status, terminationReason; a run without a termination reason first). With a bucket, one row per group and bucket of the range (empty ones at 0), the rows of a group together, buckets ascending.',
      resolve: (page) => page.groups,
    }),
    truncated: t.exposeBoolean('truncated', {
      description: `True when more groups matched than first: ask again with a larger first (at most ${STATS_LIMITS.maxGroups}).`,
    }),
  }),
});

builder.queryFields((t) => ({
  runStats: t.field({
    type: RunStatsRef,
    description:
      'Runs counted by configuration, owner, status and termination reason (any combination), optionally as a time series by creation time.',
    args: {
      groupBy: t.arg({ type: [RunGroupByEnum], required: true }),
      bucket: t.arg({ type: TimeBucketEnum }),
      filter: t.arg({ type: RunStatsFilter }),
      first: t.arg.int({
        defaultValue: STATS_LIMITS.defaultGroups,
        required: true,
        description: `Groups, from 1 to ${STATS_LIMITS.maxGroups}; with a bucket, each with all its buckets.`,
      }),
      utcOffsetMinutes: t.arg.int({
        defaultValue: 0,
        required: true,
        description: 'Where buckets start, e.g. 60 for UTC+01:00.',
      }),
    },
    resolve: (_root, args, context) => {
      const filter = args.filter ?? {};
      return runStats(context, {
        groupBy: args.groupBy,
        bucket: args.bucket,
        first: args.first,
        utcOffsetMinutes: args.utcOffsetMinutes,
        filter: {
          createdAfter: filter.createdAfter,
          createdBefore: filter.createdBefore,
          statuses: filter.statuses,
          configurations: storableStrings(filter.configurations, 'filter.configurations'),
          owners: storableStrings(filter.owners, 'filter.owners'),
        },
      });
    },
  }),
}));
