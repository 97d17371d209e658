import { InvalidInputError } from '../domain/errors.ts';
import {
  checkInteger,
  checkJson,
  checkName,
  checkNotInFuture,
  checkNumber,
  Limits,
} from '../domain/limits.ts';
import type { JsonObject } from '../domain/run-step.ts';
import type { PlainStep, StepCommand, ToolCall } from '../domain/run-trace.ts';
import type { StepKind } from '../domain/step-kind.ts';
import type { ToolOutcome } from '../domain/tool-outcome.ts';
import { type JsonValue, type ToolArtifact, ToolResult, type WriteKind } from '../domain/tool-result.ts';

/** The shapes of the mutation inputs, as GraphQL hands them over (absent optional fields are null). */
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
  artifacts?: Array<{ title: string; type: 'text' | 'json'; content?: JsonValue }> | null;
  writeTarget?: { table: string; uid: string; kind: WriteKind } | null;
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

function timing(input: StepTimingInput, now: Date, prefix: string) {
  return {
    round: checkInteger(input.round, `${prefix}round`, 0, Limits.maxRound),
    durationMs: checkInteger(input.durationMs, `${prefix}durationMs`, 0, Limits.maxDurationMs),
    occurredAt: input.occurredAt ? checkNotInFuture(input.occurredAt, `${prefix}occurredAt`, now) : now,
  };
}

export function toolCall(input: ToolCallInput, now: Date, prefix = ''): ToolCall {
  const args = input.arguments ?? null;
  checkJson(args, `${prefix}arguments`, Limits.maxArgumentsBytes);
  return {
    ...timing(input, now, prefix),
    toolName: checkName(input.toolName, `${prefix}toolName`),
    server: input.server == null ? null : checkName(input.server, `${prefix}server`),
    arguments: args,
  };
}

/**
 * A typed result from the input, through the domain's factories: whatever the
 * client sent, a failed or cancelled result keeps no artifacts and no write target.
 * Content is never refused for its size; bounding cuts it before it is stored.
 */
export function toolResult(input: ToolResultInput, prefix = ''): ToolResult {
  const artifacts: ToolArtifact[] = (input.artifacts ?? []).map((artifact, index) => {
    checkName(artifact.title, `${prefix}result.artifacts.${index}.title`);
    return { title: artifact.title, type: artifact.type, content: artifact.content ?? null };
  });
  const target = input.writeTarget
    ? {
        table: checkName(input.writeTarget.table, `${prefix}result.writeTarget.table`),
        uid: checkName(input.writeTarget.uid, `${prefix}result.writeTarget.uid`),
        kind: input.writeTarget.kind,
      }
    : null;
  return ToolResult.of(input.outcome, input.content, artifacts, target);
}

function modelFacts(input: PlainStepInput, prefix: string): JsonObject {
  const facts: JsonObject = {};
  const model = input.model;
  if (model?.model != null) facts.model = checkName(model.model, `${prefix}model.model`, 100);
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
    facts.finishReason = checkName(model.finishReason, `${prefix}model.finishReason`, 64);
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
    throw new InvalidInputError(
      'STEP_TOOL_NEEDS_RESULT',
      'tool steps are recorded with recordToolExecution or recordToolResult',
      `${prefix}kind`,
    );
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
  return { kind: input.kind, ...timing(input, now, prefix), payload, metadata: modelFacts(input, prefix) };
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
      return { type: 'toolExecution', call, content: step.content ?? '', isError: step.isError };
    }
    throw new InvalidInputError(
      'STEP_TOOL_NEEDS_RESULT',
      'a tool step needs either isError (with content) or result, not both',
      `${prefix}result`,
    );
  });
}
