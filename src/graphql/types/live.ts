import type { RunEvent } from '../../ledger/run-events.ts';
import { builder } from '../builder.ts';
import { createLoaders } from '../loaders.ts';
import { RunRef } from './run-ref.ts';
import { RunStepRef } from './run-step.ts';

const RunEventRef = builder.objectRef<RunEvent>('RunEvent').implement({
  description:
    'One change of a watched run: a step appended (step), or a change of the run alone (status, termination, rollups; step is null).',
  fields: (t) => ({
    run: t.field({
      type: RunRef,
      description: 'The run as it stands after the event.',
      resolve: (e) => e.run,
    }),
    step: t.field({
      type: RunStepRef,
      nullable: true,
      description: 'The step just appended; null when only the run changed.',
      resolve: (e) => e.step,
    }),
  }),
});

builder.subscriptionType({});

builder.subscriptionFields((t) => ({
  runEvents: t.field({
    type: RunEventRef,
    description:
      'A run as it runs, over Server-Sent Events: first every stored step after afterSequence, then the live ones, in sequence order, each once; then the end of the stream once the run is terminal and its calls in flight have recorded. A run you may not see answers like a missing one (RUN_NOT_FOUND).',
    args: {
      uuid: t.arg.string({ required: true }),
      afterSequence: t.arg.int({
        description: 'The last sequence already seen (to resume after a reconnect); default: from the start.',
      }),
    },
    subscribe: async (_root, args, context) => {
      const stream = await context.events.watch(context, args);
      return {
        [Symbol.asyncIterator]: () => ({
          next: async () => {
            const result = await stream.next();
            // Each event is read afresh: loaders cache for a request, and this request lasts as long as the run.
            context.loaders = createLoaders(context);
            return result;
          },
          return: () => stream.return(),
          throw: (error: unknown) => stream.throw(error),
        }),
      };
    },
    resolve: (event) => event,
  }),
}));
