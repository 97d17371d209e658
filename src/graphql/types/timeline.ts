import type { TimelineEntry } from '../../domain/timeline.ts';
import { builder } from '../builder.ts';
import { StepKindEnum, ToolOutcomeEnum } from './enums.ts';

export const TimelineEntryRef = builder.objectRef<TimelineEntry>('TimelineEntry').implement({
  description:
    "One line of a run's timeline. detail shows metadata only, never prompts, arguments or tool output.",
  fields: (t) => ({
    sequence: t.exposeInt('sequence'),
    kind: t.field({ type: StepKindEnum, resolve: (entry) => entry.kind }),
    occurredAt: t.expose('occurredAt', { type: 'DateTime' }),
    round: t.exposeInt('round'),
    durationMs: t.exposeInt('durationMs'),
    outcome: t.field({ type: ToolOutcomeEnum, nullable: true, resolve: (entry) => entry.outcome }),
    outcomeLabel: t.exposeString('outcomeLabel', { nullable: true }),
    detail: t.exposeString('detail'),
  }),
});
