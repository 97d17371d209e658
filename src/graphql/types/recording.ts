import { MAX_CONTENT_BYTES } from '../../domain/bounding.ts';
import { Limits } from '../../domain/limits.ts';
import { STARTING_RUN_STATUSES } from '../../domain/run-status.ts';
import { ARTIFACT_TYPES } from '../../domain/tool-result.ts';
import { cancelRun, finishRun } from '../../ledger/end-run.ts';
import {
  type AppendResult,
  recordBatch,
  recordStep,
  recordToolExecution,
  recordToolResult,
} from '../../ledger/record-steps.ts';
import { startRun } from '../../ledger/start-run.ts';
import { builder } from '../builder.ts';
import { enumValues, RunStatusEnum, StepKindEnum, TerminationReasonEnum, ToolOutcomeEnum } from './enums.ts';
import { RUN_END_ERRORS, START_RUN_ERRORS, STEP_ERRORS } from './errors.ts';
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

/** The one success of every step mutation (recordToolExecution, recordToolResult, recordStep, recordSteps, callTool). */
export const RecordedStepsSuccess = builder.objectRef<AppendResult>('RecordedStepsSuccess').implement({
  description: 'The success of every step mutation: what was stored.',
  fields: (t) => ({ data: t.field({ type: RecordedSteps, resolve: (result) => result }) }),
});

/** Step mutations answer RecordedStepsSuccess or one of the step errors. */
export const STEP_RESULT = { types: STEP_ERRORS, directResult: true } as const;

const ArtifactTypeEnum = builder.enumType('ArtifactType', { values: enumValues(ARTIFACT_TYPES) });
const StartStatusEnum = builder.enumType('StartStatus', { values: enumValues(STARTING_RUN_STATUSES) });

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
  description: `A typed tool result. FAILED and CANCELLED results keep no artifacts and no write target, whatever is sent. Content over ${MAX_CONTENT_BYTES.toLocaleString('en-US')} bytes is cut, never refused.`,
  fields: (t) => ({
    content: t.string({ required: true }),
    outcome: t.field({ type: ToolOutcomeEnum, required: true }),
    artifacts: t.field({ type: [ArtifactInput] }),
    writeTarget: t.field({ type: WriteTargetInput }),
    failureCode: t.string({
      description:
        'Why a FAILED call failed, as a stable code (1 to 64 characters: an upper-case letter, then upper-case letters, digits or _), shown as RunStep.failureCode. Only with outcome FAILED (else FAILURE_CODE_WITHOUT_FAILURE); a malformed one is FAILURE_CODE_INVALID.',
    }),
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
    steps: t.field({
      type: [BatchStepInput],
      required: true,
      description: `At most ${Limits.maxBatchSteps.toLocaleString('en-US')}; all or nothing.`,
    }),
  }),
});

builder.mutationFields((t) => ({
  startRun: t.field({
    type: RunRef,
    description: 'Starts a run owned by the caller. Sending the same uuid again returns the same run.',
    errors: { types: START_RUN_ERRORS },
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
    resolve: (_root, { input }, context) => startRun(context, input),
  }),
  recordToolExecution: t.field({
    type: RecordedStepsSuccess,
    errors: STEP_RESULT,
    args: { input: t.arg({ type: RecordToolExecutionInput, required: true }) },
    resolve: (_root, { input }, context) => recordToolExecution(context, input),
  }),
  recordToolResult: t.field({
    type: RecordedStepsSuccess,
    errors: STEP_RESULT,
    args: { input: t.arg({ type: RecordToolResultInput, required: true }) },
    resolve: (_root, { input }, context) => recordToolResult(context, input),
  }),
  recordStep: t.field({
    type: RecordedStepsSuccess,
    errors: STEP_RESULT,
    args: { input: t.arg({ type: RecordStepInput, required: true }) },
    resolve: (_root, { input }, context) => recordStep(context, input),
  }),
  recordSteps: t.field({
    type: RecordedStepsSuccess,
    description: `Up to ${Limits.maxBatchSteps.toLocaleString('en-US')} steps in one transaction: all are stored, or none.`,
    errors: STEP_RESULT,
    args: { input: t.arg({ type: RecordStepsInput, required: true }) },
    resolve: (_root, { input }, context) => recordBatch(context, input),
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
    resolve: (_root, { input }, context) => finishRun(context, input),
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
    resolve: (_root, { input }, context) => cancelRun(context, input, context.mcp.inFlight),
  }),
}));
