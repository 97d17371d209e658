import { InvalidInputError } from '../domain/errors.ts';
import {
  checkBoolean,
  checkInteger,
  checkJson,
  checkName,
  checkNotInFuture,
  checkNumber,
  checkOneOf,
  checkString,
  Limits,
} from '../domain/limits.ts';
import type { JsonObject } from '../domain/run-step.ts';
import { type PlainStep, type StepCommand, type ToolCall, toolStepNeedsResult } from '../domain/run-trace.ts';
import type { StepKind } from '../domain/step-kind.ts';
import { TOOL_OUTCOMES, type ToolOutcome } from '../domain/tool-outcome.ts';
import {
  ARTIFACT_TYPES,
  type ArtifactType,
  checkFailureCode,
  FailureCodeRefusal,
  type JsonValue,
  type ToolArtifact,
  ToolResult,
  WRITE_KINDS,
  type WriteKind,
} from '../domain/tool-result.ts';

/**
 * Every step input, checked by one set of rules whatever the entry point
 * (GraphQL today, OTLP and the CLI tomorrow): the shapes are those of the
 * mutation inputs, absent optional fields null.
 */
export interface StepTimingInput {
  round: number;
  durationMs: number;
  occurredAt?: Date | null;
}

export interface ToolCallInput extends StepTimingInput {
  toolName: string;
  server?: string | null;
  arguments?: JsonValue | null;
}

export interface ToolResultInput {
  content: string;
  outcome: ToolOutcome;
  artifacts?: Array<{ title: string; type: ArtifactType; content?: JsonValue }> | null;
  writeTarget?: { table: string; uid: string; kind: WriteKind } | null;
  /** Why a failed call failed; only with outcome failed. */
  failureCode?: string | null;
}

export interface ModelFactsInput {
  model?: string | null;
  promptTokens?: number | null;
  completionTokens?: number | null;
  estimatedCost?: number | null;
  finishReason?: string | null;
}

export interface PlainStepInput extends StepTimingInput {
  kind: StepKind;
  payload?: JsonValue | null;
  model?: ModelFactsInput | null;
  messageCount?: number | null;
  droppedCount?: number | null;
}

/** One step of a batch: a tool call (with `isError` + `content`, or `result`) or a plain step. */
export interface BatchStepInput extends PlainStepInput {
  toolName?: string | null;
  server?: string | null;
  arguments?: JsonValue | null;
  isError?: boolean | null;
  content?: string | null;
  result?: ToolResultInput | null;
}

/** When a step happened and how long it took. */
function timing(input: StepTimingInput, now: Date, prefix: string) {
  return {
    durationMs: checkInteger(input.durationMs, `${prefix}durationMs`, 0, Limits.maxDurationMs),
    occurredAt: input.occurredAt ? checkNotInFuture(input.occurredAt, `${prefix}occurredAt`, now) : now,
  };
}

/** The round of any step: 0 to 100,000, else VALUE_OUT_OF_RANGE. */
export function checkRound(round: number, field: string): number {
  return checkInteger(round, field, 0, Limits.maxRound);
}

/** What a tool call says besides its timing. */
export type ToolCallFacts = Pick<ToolCall, 'round' | 'toolName' | 'server' | 'arguments'>;

/**
 * The one check of a tool call's round, tool, server and arguments, whatever
 * the entry point; `fieldOf` names each field as that entry point calls it.
 */
export function checkToolCallFacts(
  facts: ToolCallFacts,
  fieldOf: (name: keyof ToolCallFacts) => string,
  serverLength: number = Limits.nameLength,
): ToolCallFacts {
  checkJson(facts.arguments, fieldOf('arguments'), Limits.maxArgumentsBytes);
  return {
    round: checkRound(facts.round, fieldOf('round')),
    toolName: checkName(facts.toolName, fieldOf('toolName')),
    server: facts.server == null ? null : checkName(facts.server, fieldOf('server'), serverLength),
    arguments: facts.arguments,
  };
}

export function toolCall(input: ToolCallInput, now: Date, prefix = ''): ToolCall {
  const facts = checkToolCallFacts(
    {
      round: input.round,
      toolName: input.toolName,
      server: input.server ?? null,
      arguments: input.arguments ?? null,
    },
    (name) => `${prefix}${name}`,
  );
  return { ...timing(input, now, prefix), ...facts };
}

/**
 * A typed result from the input, through the domain's factories: whatever the
 * client sent, a failed or cancelled result keeps no artifacts and no write target.
 * Content is never refused for its size; bounding cuts it before it is stored.
 */
export function toolResult(input: ToolResultInput, prefix = ''): ToolResult {
  const outcome = checkOneOf(input.outcome, TOOL_OUTCOMES, `${prefix}result.outcome`);
  const content = checkString(input.content, `${prefix}result.content`);
  const artifacts: ToolArtifact[] = (input.artifacts ?? []).map((artifact, index) => {
    const field = `${prefix}result.artifacts.${index}`;
    checkName(artifact.title, `${field}.title`);
    const type = checkOneOf(artifact.type, ARTIFACT_TYPES, `${field}.type`);
    return { title: artifact.title, type, content: artifact.content ?? null };
  });
  const target = input.writeTarget
    ? {
        table: checkName(input.writeTarget.table, `${prefix}result.writeTarget.table`),
        uid: checkName(input.writeTarget.uid, `${prefix}result.writeTarget.uid`),
        kind: checkOneOf(input.writeTarget.kind, WRITE_KINDS, `${prefix}result.writeTarget.kind`),
      }
    : null;
  const failureCode = checkFailureCode(input.failureCode, `${prefix}result.failureCode`);
  if (failureCode !== null && outcome !== 'failed') {
    throw new InvalidInputError(
      FailureCodeRefusal.WithoutFailure,
      'a failure code goes with outcome FAILED only',
      `${prefix}result.failureCode`,
    );
  }
  return ToolResult.of(outcome, content, artifacts, target, failureCode);
}

function modelFacts(input: PlainStepInput, prefix: string): JsonObject {
  const facts: JsonObject = {};
  const model = input.model;
  if (model?.model != null)
    facts.model = checkName(model.model, `${prefix}model.model`, Limits.shortNameLength);
  if (model?.promptTokens != null) {
    facts.promptTokens = checkInteger(model.promptTokens, `${prefix}model.promptTokens`, 0, Limits.maxTokens);
  }
  if (model?.completionTokens != null) {
    facts.completionTokens = checkInteger(
      model.completionTokens,
      `${prefix}model.completionTokens`,
      0,
      Limits.maxTokens,
    );
  }
  if (model?.estimatedCost != null) {
    facts.estimatedCost = checkNumber(model.estimatedCost, `${prefix}model.estimatedCost`, 0, Limits.maxCost);
  }
  if (model?.finishReason != null)
    facts.finishReason = checkName(
      model.finishReason,
      `${prefix}model.finishReason`,
      Limits.finishReasonLength,
    );
  if (input.messageCount != null) {
    facts.messageCount = checkInteger(input.messageCount, `${prefix}messageCount`, 0, Limits.maxTokens);
  }
  if (input.droppedCount != null) {
    facts.droppedCount = checkInteger(input.droppedCount, `${prefix}droppedCount`, 0, Limits.maxTokens);
  }
  return facts;
}

export function plainStep(input: PlainStepInput, now: Date, prefix = ''): PlainStep {
  if (input.kind === 'tool' || input.kind === 'tool_write') {
    throw toolStepNeedsResult(`${prefix}kind`);
  }
  const payload = input.payload ?? {};
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new InvalidInputError(
      'VALUE_INVALID',
      `${prefix}payload must be a JSON object`,
      `${prefix}payload`,
    );
  }
  checkJson(payload, `${prefix}payload`, Limits.maxPayloadBytes);
  return {
    kind: input.kind,
    round: checkRound(input.round, `${prefix}round`),
    ...timing(input, now, prefix),
    payload,
    metadata: modelFacts(input, prefix),
  };
}

export function batchCommands(steps: readonly BatchStepInput[], now: Date): StepCommand[] {
  if (steps.length === 0) throw new InvalidInputError('BATCH_EMPTY', 'steps must not be empty', 'steps');
  if (steps.length > Limits.maxBatchSteps) {
    throw new InvalidInputError(
      'BATCH_TOO_LARGE',
      `a batch holds at most ${Limits.maxBatchSteps} steps, not ${steps.length}`,
      'steps',
    );
  }
  return steps.map((step, index): StepCommand => {
    const prefix = `steps.${index}.`;
    if (step.kind !== 'tool') return { type: 'plain', step: plainStep(step, now, prefix) };
    if (step.toolName == null) {
      throw new InvalidInputError('VALUE_MISSING', 'a tool step needs toolName', `${prefix}toolName`);
    }
    const call = toolCall({ ...step, toolName: step.toolName }, now, prefix);
    if (step.result && step.isError == null)
      return { type: 'toolResult', call, result: toolResult(step.result, prefix) };
    if (!step.result && step.isError != null) {
      return {
        type: 'toolExecution',
        call,
        content: checkString(step.content ?? '', `${prefix}content`),
        isError: checkBoolean(step.isError, `${prefix}isError`),
      };
    }
    throw toolStepNeedsResult(`${prefix}result`);
  });
}
