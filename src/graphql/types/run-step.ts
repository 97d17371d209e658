import type { StepMetaRow } from '../../db/steps.ts';
import { outcomeLabel } from '../../domain/labels.ts';
import { RunStep } from '../../domain/run-step.ts';
import { statedOutcome } from '../../domain/stated-outcome.ts';
import type { StepKind } from '../../domain/step-kind.ts';
import { WRITE_KINDS, type WriteTarget } from '../../domain/tool-result.ts';
import { builder, privateField } from '../builder.ts';
import { nodeTypename } from '../ids.ts';
import { enumValues, LocaleEnum, StepKindEnum, ToolOutcomeEnum } from './enums.ts';
import { RunRef } from './run-ref.ts';

export const RunStepRef = builder.objectRef<StepMetaRow>(nodeTypename('RunStep'));

export const WriteKindEnum = builder.enumType('WriteKind', { values: enumValues(WRITE_KINDS) });

const WriteTargetRef = builder.objectRef<WriteTarget>('WriteTarget').implement({
  description: 'A record a tool call wrote: which table, which row, and whether it was created or updated.',
  fields: (t) => ({
    table: t.exposeString('table'),
    uid: t.exposeString('uid'),
    kind: t.field({ type: WriteKindEnum, resolve: (target) => target.kind }),
  }),
});

builder.node(RunStepRef, {
  description: 'One event inside a run, ordered by sequence (unique per run).',
  isTypeOf: (value) => typeof value === 'object' && value !== null && 'sequence' in value && 'runId' in value,
  id: { resolve: (step) => step.id, parse: (id) => (/^\d{1,15}$/.test(id) ? Number(id) : 0) },
  loadMany: (ids, context) => ids.map((id) => context.loaders.stepById.load(id)),
  fields: (t) => ({
    sequence: t.exposeInt('sequence'),
    kind: t.field({ type: StepKindEnum, resolve: (step) => step.kind as StepKind }),
    round: t.exposeInt('round'),
    durationMs: t.exposeInt('durationMs'),
    occurredAt: t.expose('occurredAt', { type: 'DateTime' }),
    toolName: t.exposeString('toolName', { nullable: true }),
    server: t.exposeString('server', {
      nullable: true,
      description: 'The MCP server the tool was called on.',
    }),
    toolIsError: t.exposeBoolean('toolIsError', {
      nullable: true,
      description: 'The boolean as stored: true for FAILED and CANCELLED alike. Prefer outcome.',
    }),
    outcome: t.field({
      type: ToolOutcomeEnum,
      nullable: true,
      description:
        'The outcome this step states, by the boolean-first rule: null when toolIsError is null; else the stored outcome; else FAILED for true and OK for false (rows written before outcomes existed).',
      resolve: (step) => statedOutcome(step.kind, step.toolIsError, step.toolOutcome),
    }),
    outcomeLabel: t.string({
      nullable: true,
      args: { locale: t.arg({ type: LocaleEnum, defaultValue: 'en', required: true }) },
      resolve: (step, { locale }) => {
        const outcome = statedOutcome(step.kind, step.toolIsError, step.toolOutcome);
        return outcome === null ? null : outcomeLabel(outcome, locale);
      },
    }),
    failureCode: t.string({
      nullable: true,
      description:
        "Why a FAILED tool step failed, as a stable code: TOOL_ERROR (the tool answered isError or threw), an MCP_* transport fault (MCP_DEADLINE_EXHAUSTED, MCP_TRANSPORT_FAILURE, ...), or a code the recording client stated. Null for OK and CANCELLED steps, for other kinds, and when none was stated. The server's own words stay in the payload.",
      resolve: (step) => RunStep.failureCodeOf(step),
    }),
    cancelCode: t.string({
      nullable: true,
      description:
        "Who cut a CANCELLED tool step off, as a stable code, when runledger made the call (callTool): MCP_CALL_CANCELLED (the run was cancelled) or MCP_SERVICE_STOPPING (runledger stopped while the call was on the wire; the run stays open). Neither is the server's failure, and neither counts in a failure rate. Null for OK and FAILED steps, for other kinds, and when none was stated.",
      resolve: (step) => RunStep.cancelCodeOf(step),
    }),
    writeTarget: t.field({
      type: WriteTargetRef,
      nullable: true,
      resolve: (step) => RunStep.writeTargetOf(step),
    }),
    metadata: t.field({
      type: 'JSON',
      description: 'Public facts about the step: names, counts, lengths, tokens, cost.',
      resolve: (step) => step.metadata,
    }),
    payload: t.field({
      type: 'JSON',
      ...privateField('Prompts, messages, tool arguments, tool output, artifacts.', 'read_payloads'),
      // Read from the database only here: lists and nodes load steps without their payloads.
      resolve: async (step, _args, context) =>
        step.payload ?? (await context.loaders.stepPayload.load(step.id)),
    }),
    run: t.field({
      type: RunRef,
      resolve: async (step, _args, context) => {
        const run = await context.loaders.runById.load(step.runId);
        if (!run) throw new Error(`step ${step.id} has no run`);
        return run;
      },
    }),
  }),
});

export const RunStepConnection = builder.connectionObject({ type: RunStepRef, name: 'RunStepConnection' });
