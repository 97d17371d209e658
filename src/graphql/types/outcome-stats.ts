import { EXACT_BELOW_MS, PERCENTILE_BOUND } from '../../domain/duration-histogram.ts';
import { STATS_LIMITS } from '../../domain/limits.ts';
import { ORDER_DIRECTIONS, OUTCOME_DIMENSIONS, type OutcomeGroup } from '../../domain/outcome-stats.ts';
import { TIME_BUCKETS } from '../../domain/time-buckets.ts';
import { type OutcomeStatsPage, toolOutcomeStats } from '../../ledger/outcome-stats.ts';
import { builder } from '../builder.ts';
import { storableStrings } from '../input-text.ts';
import { selectsAnyField } from '../selection.ts';
import { enumValues, ToolOutcomeEnum } from './enums.ts';
import { OutcomeCountsRef } from './outcome-counts.ts';

const OutcomeGroupByEnum = builder.enumType('OutcomeGroupBy', { values: enumValues(OUTCOME_DIMENSIONS) });

export const TimeBucketEnum = builder.enumType('TimeBucket', {
  description: 'Buckets aligned in UTC, or at utcOffsetMinutes. Weeks start on Monday.',
  values: enumValues(TIME_BUCKETS),
});

const OutcomeOrderFieldEnum = builder.enumType('OutcomeOrderField', {
  values: {
    TOTAL: { value: 'total' },
    FAILED: { value: 'failed' },
    FAILURE_RATE: {
      value: 'failureRate',
      description: 'Use with minCalls, so that one failed call of one does not lead.',
    },
    KEY: {
      value: 'key',
      description:
        'server, tool, configuration, owner; each name by Unicode code point (the order of its UTF-8 bytes).',
    },
  } as const,
});

const SortDirectionEnum = builder.enumType('SortDirection', { values: enumValues(ORDER_DIRECTIONS) });

const OutcomeOrder = builder.inputType('OutcomeOrder', {
  fields: (t) => ({
    field: t.field({ type: OutcomeOrderFieldEnum, required: true }),
    direction: t.field({ type: SortDirectionEnum, defaultValue: 'desc', required: true }),
  }),
});

const ToolStepFilter = builder.inputType('ToolStepFilter', {
  description: `Tool calls to count. Without a range: the ${STATS_LIMITS.defaultRangeDays} days up to now. A range spans at most ${STATS_LIMITS.maxRangeDays} days.`,
  fields: (t) => ({
    occurredAfter: t.field({ type: 'DateTime', description: 'From this instant (inclusive).' }),
    occurredBefore: t.field({
      type: 'DateTime',
      description: 'Up to this instant (exclusive); default now.',
    }),
    servers: t.stringList(),
    tools: t.stringList(),
    configurations: t.stringList(),
    owners: t.stringList(),
    outcomes: t.field({ type: [ToolOutcomeEnum], description: 'Count only these outcomes.' }),
  }),
});

const ToolOutcomeGroupRef = builder.objectRef<OutcomeGroup>('ToolOutcomeGroup').implement({
  // The bound the domain holds and its test proves, not restated.
  description: `Tool calls of one group (and one time bucket). Key fields are null when not grouped by them. Durations are read from a histogram: within ${Math.round((PERCENTILE_BOUND - 1) * 100)}% of the true value (exact below ${EXACT_BELOW_MS} ms).`,
  fields: (t) => ({
    server: t.exposeString('server', { nullable: true }),
    toolName: t.exposeString('toolName', { nullable: true }),
    configuration: t.exposeString('configuration', { nullable: true }),
    owner: t.exposeString('owner', { nullable: true }),
    bucketStart: t.expose('bucketStart', { type: 'DateTime', nullable: true }),
    counts: t.field({ type: OutcomeCountsRef, resolve: (group) => group.counts }),
    p50DurationMs: t.exposeInt('p50DurationMs', { nullable: true }),
    p95DurationMs: t.exposeInt('p95DurationMs', { nullable: true }),
  }),
});

const ToolOutcomeStatsRef = builder.objectRef<OutcomeStatsPage>('ToolOutcomeStats').implement({
  description: 'The groups asked for, and whether first left some out.',
  fields: (t) => ({
    groups: t.field({
      type: [ToolOutcomeGroupRef],
      description: 'With a bucket, one row per group and bucket, the rows of a group together.',
      resolve: (page) => page.groups,
    }),
    truncated: t.exposeBoolean('truncated', {
      description: 'True when more groups matched than first: ask again with a larger first (at most 500).',
    }),
  }),
});

builder.queryFields((t) => ({
  toolOutcomeStats: t.field({
    type: ToolOutcomeStatsRef,
    description:
      'Tool calls grouped by server, tool, configuration and owner (any combination), by outcome, optionally as a time series. Cancelled calls count as cancelled only: they never raise failureRate.',
    args: {
      groupBy: t.arg({ type: [OutcomeGroupByEnum], required: true }),
      filter: t.arg({ type: ToolStepFilter }),
      bucket: t.arg({ type: TimeBucketEnum }),
      utcOffsetMinutes: t.arg.int({
        defaultValue: 0,
        required: true,
        description: 'Where buckets start, e.g. 60 for UTC+01:00.',
      }),
      orderBy: t.arg({ type: OutcomeOrder }),
      emptyBuckets: t.arg.boolean({
        defaultValue: true,
        required: true,
        description:
          'With a bucket: false leaves out the rows of buckets without calls (a sparse series: the rows of a group stay together, in time order; a missing bucket had no calls). Without a bucket it changes nothing.',
      }),
      minCalls: t.arg.int({
        defaultValue: 1,
        required: true,
        description: 'Leave out groups with fewer calls.',
      }),
      first: t.arg.int({
        defaultValue: STATS_LIMITS.defaultGroups,
        required: true,
        description: `Groups, at most ${STATS_LIMITS.maxGroups}.`,
      }),
    },
    resolve: (_root, args, context, info) => {
      for (const field of ['servers', 'tools', 'configurations', 'owners'] as const) {
        storableStrings(args.filter?.[field], `filter.${field}`);
      }
      return toolOutcomeStats(context, {
        ...args,
        durations: selectsAnyField(info, ['p50DurationMs', 'p95DurationMs']),
      });
    },
  }),
}));
