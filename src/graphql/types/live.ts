import type { ProgressEvent, RunEvent, RunEventStream } from '../../ledger/run-events.ts';
import { builder, privateField } from '../builder.ts';
import { unauthenticated } from '../context.ts';
import { createLoaders } from '../loaders.ts';
import { RunRef } from './run-ref.ts';
import { RunStepRef } from './run-step.ts';

const ToolCallProgressRef = builder.objectRef<ProgressEvent>('ToolCallProgress').implement({
  description:
    "How far a tool call on the wire has come, as its MCP server reported it (notifications/progress): live only, while the call runs. The last report is kept once the call ends: how far in the step's metadata (metadata.progress), the message in its payload (payload.progressMessage).",
  fields: (t) => ({
    callId: t.string({
      description: 'Which call of the run it is, while it lasts (an id of its own; the step has none yet).',
      resolve: (e) => e.call.id,
    }),
    toolName: t.string({ resolve: (e) => e.call.toolName }),
    server: t.string({ description: "The registered server's identifier.", resolve: (e) => e.call.server }),
    progress: t.float({
      description: 'How far it has come; grows with every report.',
      resolve: (e) => e.progress.progress,
    }),
    total: t.float({
      nullable: true,
      description: 'Where progress ends, when the server knows it.',
      resolve: (e) => e.progress.total,
    }),
    message: t.string({
      ...privateField(
        "The server's words, one line of at most 200 characters; the step keeps the last one in its payload (payload.progressMessage).",
        'read_payloads',
      ),
      resolve: (e) => e.progress.message,
    }),
  }),
});

const RunEventRef = builder.objectRef<RunEvent>('RunEvent').implement({
  description:
    'One change of a watched run: a step appended (step), a change of the run alone (status, termination, rollups; step is null), or the progress a call on the wire reported (progress; step is null).',
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
    progress: t.field({
      type: ToolCallProgressRef,
      nullable: true,
      description:
        'The latest progress of a call of the run on the wire (callTool); null for any other event.',
      resolve: (e) => e.progress ?? null,
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
      // A revoked key's stream ends within a second, on every instance (KeyWatch).
      const access = context.keys.hold(context.keyHash);
      let stream: RunEventStream;
      try {
        stream = await context.events.watch(context, args, access.signal);
      } catch (error) {
        access.release();
        throw error;
      }
      const ended = () => {
        access.release();
        // A GraphQL error as it is: an error from a stream's source would otherwise be masked.
        if (access.signal.aborted) throw unauthenticated('the API key was revoked');
      };
      return {
        [Symbol.asyncIterator]: () => ({
          next: async () => {
            const result = await stream.next().catch((error: unknown) => {
              ended();
              throw error;
            });
            if (result.done || access.signal.aborted) {
              ended();
              return { done: true, value: undefined };
            }
            // Each event is read afresh: loaders cache for a request, and this request lasts as long as the run.
            context.loaders = createLoaders(context);
            return result;
          },
          return: async () => {
            access.release();
            return stream.return();
          },
          throw: (error: unknown) => {
            access.release();
            return stream.throw(error);
          },
        }),
      };
    },
    resolve: (event) => event,
  }),
}));
