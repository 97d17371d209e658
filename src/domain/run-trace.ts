import {
  boundToolResult,
  utf8Bytes as byteLength,
  RepairCount,
  repairFacts,
  repairJson,
} from './bounding.ts';
import type { CallProgress } from './call-progress.ts';
import { InvalidInputError } from './errors.ts';
import { isInstantInRange } from './limits.ts';
import { type JsonObject, RunStep, StepInvariantError, StepRefusal } from './run-step.ts';
import type { StepKind } from './step-kind.ts';
import { isErrorOutcome, outcomeFromIsError } from './tool-outcome.ts';
import { type JsonValue, ToolResult } from './tool-result.ts';

/** One call of one tool, as the agent describes it. */
export interface ToolCall {
  round: number;
  durationMs: number;
  toolName: string;
  server: string | null;
  arguments: JsonValue;
  occurredAt?: Date;
  /** How long opening the MCP session took, when this call opened it: start-up is not in durationMs. */
  sessionStartMs?: number | null;
  /** The last progress the server reported while the call ran (MCP notifications/progress). */
  progress?: CallProgress | null;
}

/** One thing to record, as a client asked for it. */
export type StepCommand =
  | { type: 'toolExecution'; call: ToolCall; content: string; isError: boolean }
  | { type: 'toolResult'; call: ToolCall; result: ToolResult }
  | { type: 'plain'; step: PlainStep };

/** A step of any kind but the two a tool result produces. */
export interface PlainStep {
  kind: Exclude<StepKind, 'tool' | 'tool_write'>;
  round: number;
  durationMs: number;
  occurredAt?: Date;
  payload?: JsonObject;
  metadata?: JsonObject;
}

/** The one refusal of a tool step sent without a result, or with two (isError and result). */
export function toolStepNeedsResult(field: string): InvalidInputError {
  return new InvalidInputError(
    'STEP_TOOL_NEEDS_RESULT',
    'a tool step is recorded from its result: isError (with content) or a typed result, exactly one',
    field,
  );
}

/**
 * Turns what happens in a run into its steps, numbered from `nextSequence`.
 * Tool calls are recorded from the old boolean or from a typed result; both
 * end in one builder, where `toolIsError` is derived from the outcome.
 */
export class RunTrace {
  readonly #steps: RunStep[] = [];
  #nextSequence: number;
  readonly #clock: () => Date;

  constructor(options: { nextSequence?: number; clock?: () => Date } = {}) {
    this.#nextSequence = options.nextSequence ?? 1;
    this.#clock = options.clock ?? (() => new Date());
  }

  get steps(): readonly RunStep[] {
    return this.#steps;
  }

  /** The entry point of callers that only know the boolean: `ok` or `failed`, never `cancelled`. */
  recordToolExecution(call: ToolCall, content: string, isError: boolean): RunStep[] {
    return this.#recordToolCall(call, ToolResult.of(outcomeFromIsError(isError), content));
  }

  /** The typed entry point: the outcome is read off the result. */
  recordToolResult(call: ToolCall, result: ToolResult): RunStep[] {
    return this.#recordToolCall(call, result);
  }

  apply(command: StepCommand): RunStep[] {
    switch (command.type) {
      case 'toolExecution':
        return this.recordToolExecution(command.call, command.content, command.isError);
      case 'toolResult':
        return this.recordToolResult(command.call, command.result);
      case 'plain':
        return [this.recordStep(command.step)];
    }
  }

  recordStep(step: PlainStep): RunStep {
    if ((step.kind as StepKind) === 'tool' || (step.kind as StepKind) === 'tool_write') {
      throw toolStepNeedsResult('kind');
    }
    const repairs = new RepairCount();
    const payload = repairJson(step.payload ?? {}, repairs);
    const metadata = repairJson(step.metadata ?? {}, repairs);
    return this.#append({
      kind: step.kind,
      round: step.round,
      durationMs: step.durationMs,
      occurredAt: step.occurredAt ?? this.#clock(),
      payload,
      metadata: { ...metadata, ...repairFacts(repairs) },
    });
  }

  #recordToolCall(call: ToolCall, unbounded: ToolResult): RunStep[] {
    // Output, artifacts and arguments are stored repaired (bounding.ts), and the step says how much was.
    const repairs = new RepairCount();
    const result = boundToolResult(unbounded, repairs);
    const args = repairJson(call.arguments, repairs);
    const occurredAt = call.occurredAt ?? this.#clock();
    const argumentsJson = JSON.stringify(args) ?? 'null';
    const toolStep = this.#append({
      kind: 'tool',
      round: call.round,
      durationMs: call.durationMs,
      occurredAt,
      toolName: call.toolName,
      server: call.server,
      toolOutcome: result.outcome,
      toolIsError: isErrorOutcome(result.outcome),
      payload: {
        arguments: args,
        content: result.content,
        artifacts: [...result.artifacts],
        ...(call.progress?.message ? { progressMessage: call.progress.message } : {}),
      },
      metadata: {
        argumentsBytes: byteLength(argumentsJson),
        contentBytes: byteLength(result.content),
        artifactCount: result.artifacts.length,
        // Why it failed is public; the server's own words stay in the payload.
        ...(result.failureCode === null ? {} : { failureCode: result.failureCode }),
        // So is who cut a cancelled call off: never the server.
        ...(result.cancelCode === null ? {} : { cancelCode: result.cancelCode }),
        ...(call.sessionStartMs == null ? {} : { sessionStartMs: call.sessionStartMs }),
        // How far it came is public; the server's words about it are its own, and private.
        ...(call.progress == null
          ? {}
          : { progress: { progress: call.progress.progress, total: call.progress.total } }),
        ...repairFacts(repairs),
      },
    });
    if (!result.writeTarget) return [toolStep];
    const writeStep = this.#append({
      kind: 'tool_write',
      round: call.round,
      durationMs: 0,
      occurredAt,
      toolName: call.toolName,
      server: call.server,
      writeTarget: result.writeTarget,
    });
    return [toolStep, writeStep];
  }

  #append(props: Omit<ConstructorParameters<typeof RunStep>[0], 'sequence'>): RunStep {
    // New steps only: rows already stored are read back whatever their date.
    if (props.occurredAt instanceof Date && !isInstantInRange(props.occurredAt)) {
      throw new StepInvariantError(StepRefusal.InvalidOccurredAt, 'occurredAt must lie from 1970 to 9999');
    }
    const step = new RunStep({ ...props, sequence: this.#nextSequence });
    this.#nextSequence += 1;
    this.#steps.push(step);
    return step;
  }
}
