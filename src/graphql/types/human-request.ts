import type { RequestOfRun } from '../../db/human-requests.ts';
import type { StepMetaRow } from '../../db/steps.ts';
import { KeyNotActiveError } from '../../domain/errors.ts';
import {
  APPROVAL_DECISIONS,
  OwnDecisionError,
  REQUEST_KINDS,
  REQUEST_SOURCES,
  REQUEST_STATES,
  type RequestKind,
  RequestNotFoundError,
  RequestNotOpenError,
  type RequestSource,
} from '../../domain/human-request.ts';
import { HumanRequestLimits } from '../../domain/human-request-limits.ts';
import type { JsonValue } from '../../domain/tool-result.ts';
import {
  awaitDecision,
  decideApproval,
  inbox,
  MAX_AWAIT_MS,
  provideInput,
  type RequestRecorded,
  requestApproval,
  requestInput,
  stateOf,
} from '../../ledger/human-requests.ts';
import { builder, privateField } from '../builder.ts';
import { enumValues } from './enums.ts';
import { ErrorInterface, RUN_END_ERRORS, STEP_ERRORS } from './errors.ts';
import { RunRef } from './run-ref.ts';
import { RunStepRef } from './run-step.ts';

export const RequestKindEnum = builder.enumType('RequestKind', {
  description: 'APPROVAL of a proposed tool call, or INPUT asked against a JSON Schema.',
  values: enumValues(REQUEST_KINDS),
});
const RequestSourceEnum = builder.enumType('RequestSource', {
  description:
    'API: asked by the run recorder (requestApproval, requestInput); MCP: asked by an MCP server during a callTool (elicitation).',
  values: enumValues(REQUEST_SOURCES),
});
export const RequestStateEnum = builder.enumType('RequestState', {
  description:
    'OPEN until decided. DENIED, DECLINED, EXPIRED and CANCELLED are facts about people and time, never failures: none of them is a failed tool call or enters a failure rate.',
  values: enumValues(REQUEST_STATES),
});
const ApprovalDecisionEnum = builder.enumType('ApprovalDecision', {
  values: enumValues(Object.keys(APPROVAL_DECISIONS) as Array<keyof typeof APPROVAL_DECISIONS>),
});

/** What was asked and answered is private: readable with read_payloads, or by whoever may decide it. */
const asked = (description: string) => privateField(description, 'read_payloads', 'approve_runs');

export const HumanRequestRef = builder.objectRef<RequestOfRun>('HumanRequest').implement({
  description:
    'A run waiting for a person: an approval of a proposed tool call (four eyes: whoever owns or recorded the run cannot decide it) or a request for input against a JSON Schema. Its request and decision are also steps of the timeline (kind APPROVAL or INPUT, metadata.request = uuid).',
  fields: (t) => ({
    uuid: t.string({ resolve: ({ request }) => request.uuid }),
    kind: t.field({ type: RequestKindEnum, resolve: ({ request }) => request.kind as RequestKind }),
    source: t.field({ type: RequestSourceEnum, resolve: ({ request }) => request.source as RequestSource }),
    state: t.field({
      type: RequestStateEnum,
      description:
        'How it stands now: an open request past expiresAt reads EXPIRED, one of an ended run CANCELLED.',
      resolve: (entry) => stateOf(entry),
    }),
    run: t.field({ type: RunRef, resolve: ({ run }) => run }),
    requestedBy: t.string({ resolve: ({ request }) => request.requestedBy }),
    requestedAt: t.field({ type: 'DateTime', resolve: ({ request }) => request.requestedAt }),
    expiresAt: t.field({ type: 'DateTime', nullable: true, resolve: ({ request }) => request.expiresAt }),
    toolName: t.string({ nullable: true, resolve: ({ request }) => request.toolName }),
    server: t.string({ nullable: true, resolve: ({ request }) => request.server }),
    arguments: t.field({
      type: 'JSON',
      ...asked("The proposed call's arguments."),
      resolve: ({ request }) => request.arguments as JsonValue,
    }),
    reason: t.string({
      ...asked('Why the agent asks.'),
      resolve: ({ request }) => request.reason,
    }),
    prompt: t.string({
      ...asked('What an input request asks.'),
      resolve: ({ request }) => request.prompt,
    }),
    schema: t.field({
      type: 'JSON',
      nullable: true,
      description: `The JSON Schema of the answer: an object of flat fields (string, number, integer, boolean, enums of strings), as MCP elicitation allows, at most ${HumanRequestLimits.schemaProperties} fields.`,
      resolve: ({ request }) => request.schema as JsonValue,
    }),
    decidedBy: t.string({ nullable: true, resolve: ({ request }) => request.decidedBy }),
    decidedAt: t.field({ type: 'DateTime', nullable: true, resolve: ({ request }) => request.decidedAt }),
    comment: t.string({
      ...asked("The decider's comment."),
      resolve: ({ request }) => request.comment,
    }),
    values: t.field({
      type: 'JSON',
      ...asked('The answer of an ANSWERED input request.'),
      resolve: ({ request }) => request.answer as JsonValue,
    }),
  }),
});

const RequestRecordedRef = builder.objectRef<RequestRecorded>('RequestRecorded').implement({
  description: 'What a request or a decision stored, or, for a retry, what was stored the first time.',
  fields: (t) => ({
    request: t.field({ type: HumanRequestRef, resolve: ({ request, run }) => ({ request, run }) }),
    run: t.field({ type: RunRef, resolve: ({ run }) => run }),
    step: t.field({
      type: RunStepRef,
      nullable: true,
      description: 'The step appended to the timeline; null for a retry.',
      resolve: ({ step }) => step,
    }),
    replayed: t.exposeBoolean('replayed'),
  }),
});
const RequestRecordedSuccess = builder.objectRef<RequestRecorded>('RequestRecordedSuccess').implement({
  fields: (t) => ({ data: t.field({ type: RequestRecordedRef, resolve: (result) => result }) }),
});

builder.objectType(RequestNotFoundError, {
  name: 'RequestNotFoundError',
  description:
    'No such request in this run, or one you may not decide (REQUEST_NOT_FOUND). Nothing was written.',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => value instanceof RequestNotFoundError,
  fields: (t) => ({ requestUuid: t.exposeString('requestUuid') }),
});
builder.objectType(RequestNotOpenError, {
  name: 'RequestNotOpenError',
  description:
    'The request was already decided differently, was cancelled (REQUEST_NOT_OPEN) or has expired (REQUEST_EXPIRED). Nothing was written.',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => value instanceof RequestNotOpenError,
  fields: (t) => ({
    requestUuid: t.exposeString('requestUuid'),
    state: t.field({ type: RequestStateEnum, resolve: (error) => error.state }),
  }),
});
builder.objectType(OwnDecisionError, {
  name: 'OwnDecisionError',
  description:
    'Four eyes: whoever owns or recorded the run may not decide its request (FOUR_EYES_REQUIRED). Nothing was written.',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => value instanceof OwnDecisionError,
  fields: (t) => ({ requestUuid: t.exposeString('requestUuid') }),
});

const REQUEST_ERRORS = { types: STEP_ERRORS, directResult: true } as const;
const DECISION_ERRORS = {
  types: [...RUN_END_ERRORS, RequestNotFoundError, RequestNotOpenError, OwnDecisionError],
  directResult: true as const,
};

builder.mutationFields((t) => ({
  requestApproval: t.field({
    type: RequestRecordedSuccess,
    description:
      "The run recorder asks a person to approve a tool call it proposes (record). The run is WAITING_FOR_APPROVAL until a key with approve_runs, not the run's owner or recorder, decides it (decideApproval), or it expires. A retry with the same idempotencyKey answers the first request.",
    errors: REQUEST_ERRORS,
    args: {
      input: t.arg({
        required: true,
        type: builder.inputType('RequestApprovalInput', {
          fields: (f) => ({
            runUuid: f.string({ required: true }),
            toolName: f.string({ required: true }),
            server: f.string(),
            arguments: f.field({ type: 'JSON' }),
            reason: f.string({ description: `At most ${HumanRequestLimits.reasonLength} characters.` }),
            expiresAt: f.field({
              type: 'DateTime',
              description: `When an undecided request expires (EXPIRED: neither a denial nor a failure); at most ${HumanRequestLimits.maxExpiryMs / 86_400_000} days ahead.`,
            }),
            idempotencyKey: f.string(),
          }),
        }),
      }),
    },
    resolve: (_root, { input }, context) =>
      requestApproval(context, { ...input, arguments: (input.arguments ?? null) as JsonValue | null }),
  }),
  requestInput: t.field({
    type: RequestRecordedSuccess,
    description:
      'The run recorder asks a person for input (record): a prompt and the JSON Schema of the answer. The run is WAITING_FOR_INPUT until answered or declined (provideInput) or expired.',
    errors: REQUEST_ERRORS,
    args: {
      input: t.arg({
        required: true,
        type: builder.inputType('RequestInputInput', {
          fields: (f) => ({
            runUuid: f.string({ required: true }),
            prompt: f.string({
              required: true,
              description: `At most ${HumanRequestLimits.promptLength} characters.`,
            }),
            schema: f.field({
              type: 'JSON',
              required: true,
              description:
                'A JSON Schema: {"type":"object","properties":{...},"required":[...]}, fields of type string, number, integer or boolean (enums of strings); INPUT_SCHEMA_INVALID otherwise.',
            }),
            expiresAt: f.field({ type: 'DateTime' }),
            idempotencyKey: f.string(),
          }),
        }),
      }),
    },
    resolve: (_root, { input }, context) => requestInput(context, { ...input, schema: input.schema ?? null }),
  }),
  decideApproval: t.field({
    type: RequestRecordedSuccess,
    description:
      "Approve or deny a request for approval (approve_runs; four eyes: FOUR_EYES_REQUIRED for the run's owner or recorder). The decision is a step of the timeline; the run runs again. Repeating the same decision answers it again (replayed) and writes nothing.",
    errors: DECISION_ERRORS,
    args: {
      input: t.arg({
        required: true,
        type: builder.inputType('DecideApprovalInput', {
          fields: (f) => ({
            runUuid: f.string({ required: true }),
            request: f.string({ required: true, description: "The request's uuid." }),
            decision: f.field({ type: ApprovalDecisionEnum, required: true }),
            comment: f.string({ description: `At most ${HumanRequestLimits.commentLength} characters.` }),
          }),
        }),
      }),
    },
    resolve: (_root, { input }, context) => decideApproval(context, input),
  }),
  provideInput: t.field({
    type: RequestRecordedSuccess,
    description:
      "Answer a request for input with values that match its schema (INPUT_VALUES_INVALID otherwise, nothing stored), or decline it (decline: true). Needs approve_runs; four eyes as for approvals. An answer to an MCP server's elicitation is sent back to it as accept, a decline as decline.",
    errors: DECISION_ERRORS,
    args: {
      input: t.arg({
        required: true,
        type: builder.inputType('ProvideInputInput', {
          fields: (f) => ({
            runUuid: f.string({ required: true }),
            request: f.string({ required: true }),
            values: f.field({ type: 'JSON' }),
            decline: f.boolean(),
            comment: f.string(),
          }),
        }),
      }),
    },
    resolve: (_root, { input }, context) => provideInput(context, input),
  }),
}));

builder.queryFields((t) => ({
  openRequests: t.field({
    type: [HumanRequestRef],
    description:
      "The inbox: open requests (approvals and inputs) the key may decide, oldest first; empty without approve_runs. Requests of the key's own runs are left out (four eyes).",
    args: { first: t.arg.int({ description: 'At most 200; default 50.' }) },
    resolve: (_root, { first }, context) => inbox(context, first ?? 50),
  }),
  humanRequest: t.field({
    type: HumanRequestRef,
    nullable: true,
    description: 'A request by uuid, if its run is visible to the key or the key may decide it.',
    args: { uuid: t.arg.string({ required: true }) },
    resolve: (_root, { uuid }, context) => context.loaders.humanRequest.load(uuid),
  }),
  awaitDecision: t.field({
    type: HumanRequestRef,
    description: `Blocks until the request is decided (or expires, or the run ends), at most timeoutMs (up to ${MAX_AWAIT_MS} ms), and answers it as it then stands: an agent's way to wait without polling. state OPEN means the time ran out.`,
    errors: { types: [RequestNotFoundError], directResult: true },
    args: {
      runUuid: t.arg.string({ required: true }),
      request: t.arg.string({ required: true }),
      timeoutMs: t.arg.int({ required: true }),
    },
    // A slot of the actor's (TOO_MANY_WAITS); a client that goes away, a revoked key or a shutdown stops the wait.
    resolve: (_root, args, context) =>
      context.events.holdWait(context.actor, async (slot) => {
        const access = context.keys.hold(context.keyHash);
        try {
          const signals = [slot, access.signal, ...(context.request ? [context.request.signal] : [])];
          const answer = await awaitDecision(context, args, AbortSignal.any(signals));
          if (access.signal.aborted) throw new KeyNotActiveError();
          return answer;
        } finally {
          access.release();
        }
      }),
  }),
}));

/** A step of a request or its decision names it. */
builder.objectField(RunStepRef, 'humanRequest', (t) =>
  t.field({
    type: HumanRequestRef,
    nullable: true,
    description: 'For an APPROVAL or INPUT step made by a request or its decision: the request.',
    resolve: (step: StepMetaRow, _args, context) => {
      const uuid = (step.metadata as Record<string, unknown> | null)?.request;
      if ((step.kind !== 'approval' && step.kind !== 'input') || typeof uuid !== 'string') return null;
      return context.loaders.humanRequest.load(uuid);
    },
  }),
);
