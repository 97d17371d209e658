import type { AppendResult } from '../../db/recording.ts';
import { appendSteps, cancelRun, createRun, finishRun } from '../../db/recording.ts';
import { InvalidInputError, RunAlreadyExistsError } from '../../domain/errors.ts';
import { requestFingerprint } from '../../domain/idempotency.ts';
import { checkName, Limits } from '../../domain/limits.ts';
import { can } from '../../domain/permissions.ts';
import type { StepCommand } from '../../domain/run-trace.ts';
import { builder } from '../builder.ts';
import { type Context, requirePermission } from '../context.ts';
import { batchCommands, plainStep, toolCall, toolResult } from '../step-commands.ts';
import { RunStatusEnum, StepKindEnum, TerminationReasonEnum, ToolOutcomeEnum } from './enums.ts';
import { RUN_END_ERRORS, STEP_ERRORS } from './errors.ts';
import { isUuid } from './run.ts';
import { RunRef } from './run-ref.ts';
import { RunStepRef, WriteKindEnum } from './run-step.ts';

export const RecordedSteps = builder.objectRef<AppendResult>('RecordedSteps').implement({
  description:
    'What a step mutation stored, or, for a retry with a known idempotency key, what was stored the first time.',
  fields: (t) => ({
    run: t.field({ type: RunRef, resolve: (result) => result.run }),
    steps: t.field({ type: [RunStepRef], resolve: (result) => result.steps }),
    replayed: t.exposeBoolean('replayed', {
      description:
        'True when this repeated an earlier request with the same idempotency key: nothing new was written.',
    }),
  }),
});

const ArtifactTypeEnum = builder.enumType('ArtifactType', {
  values: { TEXT: { value: 'text' }, JSON: { value: 'json' } } as const,
});
const StartStatusEnum = builder.enumType('StartStatus', {
  values: { QUEUED: { value: 'queued' }, RUNNING: { value: 'running' } } as const,
});

const ArtifactInput = builder.inputType('ArtifactInput', {
  fields: (t) => ({
    title: t.string({ required: true }),
    type: t.field({ type: ArtifactTypeEnum, required: true }),
    content: t.field({ type: 'JSON', required: true }),
  }),
});

const WriteTargetInput = builder.inputType('WriteTargetInput', {
  fields: (t) => ({
    table: t.string({ required: true }),
    uid: t.string({ required: true }),
    kind: t.field({ type: WriteKindEnum, required: true }),
  }),
});

const ToolResultInput = builder.inputType('ToolResultInput', {
  description:
    'A typed tool result. FAILED and CANCELLED results keep no artifacts and no write target, whatever is sent. Content over 50,000 bytes is cut, never refused.',
  fields: (t) => ({
    content: t.string({ required: true }),
    outcome: t.field({ type: ToolOutcomeEnum, required: true }),
    artifacts: t.field({ type: [ArtifactInput] }),
    writeTarget: t.field({ type: WriteTargetInput }),
  }),
});

const ModelFactsInput = builder.inputType('ModelFactsInput', {
  fields: (t) => ({
    model: t.string(),
    promptTokens: t.int(),
    completionTokens: t.int(),
    estimatedCost: t.float({ description: 'US dollars.' }),
    finishReason: t.string(),
  }),
});

type InputFields = PothosSchemaTypes.InputFieldBuilder<SchemaTypes, 'InputObject'>;
type SchemaTypes = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer Types> ? Types : never;

/** What both tool-call mutations take besides the result. */
const toolCallFields = (t: InputFields) => ({
  runUuid: t.string({ required: true }),
  idempotencyKey: t.string(),
  round: t.int({ required: true }),
  durationMs: t.int({ required: true }),
  occurredAt: t.field({ type: 'DateTime', description: 'When the call ended; default: now.' }),
  toolName: t.string({ required: true }),
  server: t.string(),
  arguments: t.field({ type: 'JSON' }),
});

const RecordToolExecutionInput = builder.inputType('RecordToolExecutionInput', {
  description: 'The entry point of callers that know only the boolean: isError false is OK, true is FAILED.',
  fields: (t) => ({
    ...toolCallFields(t),
    result: t.string({ required: true }),
    isError: t.boolean({ required: true }),
  }),
});

const RecordToolResultInput = builder.inputType('RecordToolResultInput', {
  fields: (t) => ({
    ...toolCallFields(t),
    result: t.field({ type: ToolResultInput, required: true }),
  }),
});

const RecordStepInput = builder.inputType('RecordStepInput', {
  description: 'Any step but a tool call: request, llm, context, approval, input, ...',
  fields: (t) => ({
    runUuid: t.string({ required: true }),
    idempotencyKey: t.string(),
    kind: t.field({ type: StepKindEnum, required: true }),
    round: t.int({ required: true }),
    durationMs: t.int({ required: true }),
    occurredAt: t.field({ type: 'DateTime' }),
    payload: t.field({ type: 'JSON', description: 'Private: prompts, messages. A JSON object.' }),
    model: t.field({ type: ModelFactsInput, description: 'For llm steps: tokens, cost and finish reason.' }),
    messageCount: t.int(),
    droppedCount: t.int(),
  }),
});

const BatchStepInput = builder.inputType('BatchStepInput', {
  description:
    'One step of a batch. A TOOL step takes isError (and content) or result; other kinds take payload and facts.',
  fields: (t) => ({
    kind: t.field({ type: StepKindEnum, required: true }),
    round: t.int({ required: true }),
    durationMs: t.int({ required: true }),
    occurredAt: t.field({ type: 'DateTime' }),
    toolName: t.string(),
    server: t.string(),
    arguments: t.field({ type: 'JSON' }),
    isError: t.boolean(),
    content: t.string(),
    result: t.field({ type: ToolResultInput }),
    payload: t.field({ type: 'JSON' }),
    model: t.field({ type: ModelFactsInput }),
    messageCount: t.int(),
    droppedCount: t.int(),
  }),
});

const RecordStepsInput = builder.inputType('RecordStepsInput', {
  fields: (t) => ({
    runUuid: t.string({ required: true }),
    idempotencyKey: t.string(),
    steps: t.field({ type: [BatchStepInput], required: true, description: 'At most 1,000; all or nothing.' }),
  }),
});

export function runUuidOf(value: string, field = 'runUuid'): string {
  if (!isUuid(value)) throw new InvalidInputError('VALUE_INVALID', `${field} must be a UUID`, field);
  return value.toLowerCase();
}

/** Every step mutation ends here: one transaction, the caller's run, an optional retry key. */
export function record(
  context: Context,
  input: { runUuid: string; idempotencyKey?: string | null },
  commands: (now: Date) => StepCommand[],
): Promise<AppendResult> {
  requirePermission(context, 'record');
  const runUuid = runUuidOf(input.runUuid);
  const { idempotencyKey, ...request } = input;
  if (idempotencyKey != null) checkName(idempotencyKey, 'idempotencyKey', Limits.idempotencyKeyLength);
  const now = new Date();
  const built = commands(now);
  return appendSteps(context.db, {
    runUuid,
    owner: context.actor.name,
    idempotencyKey: idempotencyKey ?? null,
    fingerprint: requestFingerprint(request),
    clock: () => now,
    build: (trace) => {
      for (const command of built) trace.apply(command);
    },
  });
}

builder.mutationFields((t) => ({
  startRun: t.field({
    type: RunRef,
    description: 'Starts a run owned by the caller. Sending the same uuid again returns the same run.',
    errors: { types: [InvalidInputError, RunAlreadyExistsError] },
    args: {
      input: t.arg({
        required: true,
        type: builder.inputType('StartRunInput', {
          fields: (f) => ({
            configuration: f.string({ required: true }),
            uuid: f.string({ description: 'A correlation id chosen by the client; default: a new one.' }),
            status: f.field({ type: StartStatusEnum, defaultValue: 'running', required: true }),
          }),
        }),
      }),
    },
    resolve: (_root, { input }, context) => {
      requirePermission(context, 'record');
      return createRun(context.db, {
        uuid: input.uuid == null ? undefined : runUuidOf(input.uuid, 'uuid'),
        owner: context.actor.name,
        configuration: checkName(input.configuration, 'configuration'),
        status: input.status,
      });
    },
  }),
  recordToolExecution: t.field({
    type: RecordedSteps,
    errors: { types: STEP_ERRORS },
    args: { input: t.arg({ type: RecordToolExecutionInput, required: true }) },
    resolve: (_root, { input }, context) =>
      record(context, input, (now) => [
        { type: 'toolExecution', call: toolCall(input, now), content: input.result, isError: input.isError },
      ]),
  }),
  recordToolResult: t.field({
    type: RecordedSteps,
    errors: { types: STEP_ERRORS },
    args: { input: t.arg({ type: RecordToolResultInput, required: true }) },
    resolve: (_root, { input }, context) =>
      record(context, input, (now) => [
        { type: 'toolResult', call: toolCall(input, now), result: toolResult(input.result) },
      ]),
  }),
  recordStep: t.field({
    type: RecordedSteps,
    errors: { types: STEP_ERRORS },
    args: { input: t.arg({ type: RecordStepInput, required: true }) },
    resolve: (_root, { input }, context) =>
      record(context, input, (now) => [{ type: 'plain', step: plainStep(input, now) }]),
  }),
  recordSteps: t.field({
    type: RecordedSteps,
    description: 'Up to 1,000 steps in one transaction: all are stored, or none.',
    errors: { types: STEP_ERRORS },
    args: { input: t.arg({ type: RecordStepsInput, required: true }) },
    resolve: (_root, { input }, context) => record(context, input, (now) => batchCommands(input.steps, now)),
  }),
  finishRun: t.field({
    type: RunRef,
    description: 'Ends a run. Terminal states are final: ending it again is refused and changes nothing.',
    errors: { types: RUN_END_ERRORS },
    args: {
      input: t.arg({
        required: true,
        type: builder.inputType('FinishRunInput', {
          fields: (f) => ({
            uuid: f.string({ required: true }),
            status: f.field({ type: RunStatusEnum, required: true }),
            terminationReason: f.field({ type: TerminationReasonEnum, required: true }),
          }),
        }),
      }),
    },
    resolve: (_root, { input }, context) => {
      requirePermission(context, 'record');
      return finishRun(context.db, {
        runUuid: runUuidOf(input.uuid, 'uuid'),
        owner: context.actor.name,
        status: input.status,
        reason: input.terminationReason,
      });
    },
  }),
  cancelRun: t.field({
    type: RunRef,
    description:
      'An operator cancel: the run ends CANCELLED. Calls already in flight may still record their steps.',
    errors: { types: RUN_END_ERRORS },
    args: {
      input: t.arg({
        required: true,
        type: builder.inputType('CancelRunInput', {
          fields: (f) => ({ uuid: f.string({ required: true }) }),
        }),
      }),
    },
    resolve: async (_root, { input }, context) => {
      const { actor } = context;
      if (!can(actor, 'cancel_any_run')) requirePermission(context, 'cancel_own_runs');
      // With cancel_any_run any run will do; otherwise someone else's run is not found.
      const owner = can(actor, 'cancel_any_run') ? undefined : actor.name;
      const run = await cancelRun(context.db, { runUuid: runUuidOf(input.uuid, 'uuid'), owner });
      // The run is cancelled first, so that the cut-off calls find it so when they record their steps.
      context.calls.cancelRun(run.uuid);
      return run;
    },
  }),
}));
