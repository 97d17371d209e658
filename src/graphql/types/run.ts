import type { GraphQLResolveInfo } from 'graphql';
import type { RunFilter, RunPageRow } from '../../db/runs.ts';
import type { StepMetaRow, TimelineRow } from '../../db/steps.ts';
import { InvalidInputError } from '../../domain/errors.ts';
import type { Locale } from '../../domain/labels.ts';
import { checkInteger, Limits } from '../../domain/limits.ts';
import { outcomeCounts } from '../../domain/outcome-counts.ts';
import type { RunStatus, TerminationReason } from '../../domain/run-status.ts';
import { timelineEntryOfRecord } from '../../domain/timeline.ts';
import { isUuid } from '../../domain/uuid.ts';
import { builder } from '../builder.ts';
import { decodeCursor, encodeCursor, isSequence, STEP_CURSOR, stepListHash } from '../ids.ts';
import { type Page, pageSize, toPage } from '../pagination.ts';
import { selectsAnyField } from '../selection.ts';
import { LocaleEnum, RunStatusEnum, StepKindEnum, TerminationReasonEnum, ToolOutcomeEnum } from './enums.ts';
import { OutcomeCountsRef } from './outcome-counts.ts';
import { RunRef } from './run-ref.ts';
import { RunStepConnection } from './run-step.ts';
import { type TimelineEntryOfStep, TimelineEntryRef } from './timeline.ts';

/** A page of runs, and the filter its totalCount counts (null: the actor sees none). */
export interface RunPage extends Page<RunPageRow> {
  countFilter: RunFilter | null;
}

export function runPage(page: Page<RunPageRow>, countFilter: RunFilter | null): RunPage {
  return { ...page, countFilter };
}

export const RunConnection = builder.connectionObject({
  type: RunRef,
  name: 'RunConnection',
  fields: (t) => ({
    totalCount: t.field({
      type: 'SafeInt',
      description:
        'How many runs the filter selects among those the caller may see, on every page alike. Counted only when asked for.',
      // The connection shape Pothos knows has no countFilter: every RunConnection is made by runPage.
      resolve: (page, _args, context) => {
        const { countFilter } = page as unknown as RunPage;
        return countFilter ? context.loaders.runCount.load(countFilter) : 0;
      },
    }),
  }),
});
export const TimelineConnection = builder.connectionObject({
  type: TimelineEntryRef,
  name: 'TimelineConnection',
});

/** Timeline entries of stored rows, each with the id of the step it describes. */
function entriesOfSteps(rows: readonly TimelineRow[], locale: Locale): TimelineEntryOfStep[] {
  return rows.map((row) => {
    const entry: TimelineEntryOfStep = timelineEntryOfRecord(row, locale);
    // Added to the entry as made rather than copied into a new one: thousands of entries per timeline.
    if (row.id !== undefined) entry.stepId = row.id;
    return entry;
  });
}

/** Whether a timeline's entries are asked for their steps: only then are the steps' ids read. */
function selectsStep(info: GraphQLResolveInfo): boolean {
  return selectsAnyField(info, ['step']);
}

function timelinePageSize(first: number | null | undefined): number {
  if (first === null || first === undefined) return Limits.defaultTimelinePageSize;
  return checkInteger(first, 'first', 0, Limits.maxTimelinePageSize);
}

builder.node(RunRef, {
  description: 'One agent execution, identified by its UUID (the correlation id).',
  // Not only the loader's brand: node and nodes in one request can share a row before it is branded.
  isTypeOf: (value) => typeof value === 'object' && value !== null && 'configuration' in value,
  id: { resolve: (run) => run.uuid },
  loadMany: (uuids, context) =>
    uuids.map((uuid) => (isUuid(uuid) ? context.loaders.runByUuid.load(uuid) : null)),
  fields: (t) => ({
    uuid: t.exposeString('uuid'),
    status: t.field({ type: RunStatusEnum, resolve: (run) => run.status as RunStatus }),
    terminationReason: t.field({
      type: TerminationReasonEnum,
      nullable: true,
      resolve: (run) => run.terminationReason as TerminationReason | null,
    }),
    configuration: t.exposeString('configuration'),
    owner: t.exposeString('owner'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    startedAt: t.expose('startedAt', { type: 'DateTime', nullable: true }),
    finishedAt: t.expose('finishedAt', {
      type: 'DateTime',
      nullable: true,
      description:
        'When the run ended: set exactly when status is terminal (COMPLETED, FAILED, CANCELLED), null before.',
    }),
    rounds: t.exposeInt('rounds'),
    promptTokens: t.expose('promptTokens', { type: 'SafeInt' }),
    completionTokens: t.expose('completionTokens', { type: 'SafeInt' }),
    totalTokens: t.field({ type: 'SafeInt', resolve: (run) => run.promptTokens + run.completionTokens }),
    estimatedCost: t.exposeFloat('estimatedCost', { description: 'Estimated cost in US dollars.' }),
    toolOutcomeCounts: t.field({
      type: OutcomeCountsRef,
      resolve: async (run, _args, context) =>
        outcomeCounts(await context.loaders.toolOutcomeTally.load(run.id)),
    }),
    steps: t.field({
      type: RunStepConnection,
      description: 'Steps in sequence order.',
      args: {
        first: t.arg.int({
          description: `Page size: default ${Limits.defaultPageSize}, at most ${Limits.maxPageSize}.`,
        }),
        after: t.arg.string(),
        kind: t.arg({ type: [StepKindEnum], description: 'Only steps of these kinds.' }),
        outcome: t.arg({ type: [ToolOutcomeEnum], description: 'Only steps stating one of these outcomes.' }),
      },
      resolve: async (run, args, context) => {
        const size = pageSize(args.first);
        const hash = stepListHash({ kinds: args.kind, outcomes: args.outcome });
        const afterSequence = args.after ? decodeCursor(STEP_CURSOR, args.after, isSequence, hash) : null;
        const rows = await context.loaders.stepSlice.load({
          runId: run.id,
          slice: { afterSequence, limit: size + 1, kinds: args.kind ?? null, outcomes: args.outcome ?? null },
        });
        return toPage<StepMetaRow>(rows, size, afterSequence !== null, (step) =>
          encodeCursor(STEP_CURSOR, step.sequence, hash),
        );
      },
    }),
    timeline: t.field({
      type: [TimelineEntryRef],
      description: `Every step as a timeline entry, in sequence order: for runs of up to ${Limits.maxTimelineSteps} steps. A longer run is refused with TIMELINE_TOO_LONG, never cut short: page it with timelinePage.`,
      args: { locale: t.arg({ type: LocaleEnum, defaultValue: 'en', required: true }) },
      resolve: async (run, { locale }, context, info) => {
        const rows = await context.loaders.timelineRows.load({
          runId: run.id,
          afterSequence: null,
          limit: Limits.maxTimelineSteps + 1,
          stepIds: selectsStep(info),
        });
        if (rows.length > Limits.maxTimelineSteps) {
          throw new InvalidInputError(
            'TIMELINE_TOO_LONG',
            `the run has more than ${Limits.maxTimelineSteps} steps: page its timeline with timelinePage`,
            'timeline',
          );
        }
        return entriesOfSteps(rows, locale);
      },
    }),
    timelinePage: t.field({
      type: TimelineConnection,
      description: `The timeline a page at a time, in sequence order, for runs of any length. Page size: default ${Limits.defaultTimelinePageSize}, at most ${Limits.maxTimelinePageSize}; the cursor is the entry's sequence.`,
      args: {
        locale: t.arg({ type: LocaleEnum, defaultValue: 'en', required: true }),
        first: t.arg.int(),
        after: t.arg.string(),
      },
      resolve: async (run, args, context, info) => {
        const size = timelinePageSize(args.first);
        // The timeline is the unfiltered step list: its cursors are bound like that list's.
        const hash = stepListHash({});
        const afterSequence = args.after ? decodeCursor(STEP_CURSOR, args.after, isSequence, hash) : null;
        const rows = await context.loaders.timelineRows.load({
          runId: run.id,
          afterSequence,
          limit: size + 1,
          stepIds: selectsStep(info),
        });
        return toPage<TimelineEntryOfStep>(
          entriesOfSteps(rows, args.locale),
          size,
          afterSequence !== null,
          (entry) => encodeCursor(STEP_CURSOR, entry.sequence, hash),
        );
      },
    }),
  }),
});
