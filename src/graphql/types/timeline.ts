import type { TimelineEntry } from '../../domain/timeline.ts';
import { builder } from '../builder.ts';
import { StepKindEnum, ToolOutcomeEnum } from './enums.ts';
import { RunStepRef } from './run-step.ts';

/** A timeline entry and the id of the stored step it describes, read only when `step` is selected. */
export interface TimelineEntryOfStep extends TimelineEntry {
  stepId?: number;
}

export const TimelineEntryRef = builder.objectRef<TimelineEntryOfStep>('TimelineEntry').implement({
  description:
    "One line of a run's timeline. detail shows metadata only, never prompts, arguments or tool output.",
  fields: (t) => ({
    sequence: t.exposeInt('sequence'),
    // Exposed, not resolved: compiled queries read the properties of thousands of entries inline.
    kind: t.expose('kind', { type: StepKindEnum }),
    occurredAt: t.expose('occurredAt', { type: 'DateTime' }),
    round: t.exposeInt('round'),
    durationMs: t.exposeInt('durationMs'),
    outcome: t.expose('outcome', { type: ToolOutcomeEnum, nullable: true }),
    outcomeLabel: t.exposeString('outcomeLabel', { nullable: true }),
    detail: t.exposeString('detail', {
      description: 'Metadata in the words of the locale: EN or DE (names, counts, bytes, tokens, cost).',
    }),
    step: t.field({
      type: RunStepRef,
      description: 'The step this entry describes: its id (a node id) and every field of it.',
      resolve: async (entry, _args, context) => {
        // The timeline read the ids because this field is selected (selectsStep).
        if (entry.stepId === undefined) throw new Error('a timeline entry was read without its step id');
        const step = await context.loaders.stepById.load(entry.stepId);
        // The entry came from a run the caller sees, so its step is there and visible.
        if (!step) throw new Error(`step ${entry.stepId} of a visible timeline could not be read`);
        return step;
      },
    }),
  }),
});
