import { InvalidInputError } from './errors.ts';
import { Limits } from './limits.ts';
import { statedOutcome } from './stated-outcome.ts';
import { isStepKind, type StepKind } from './step-kind.ts';
import { isErrorOutcome, isToolOutcome, type ToolOutcome } from './tool-outcome.ts';
import { decodeWriteTarget, FAILURE_CODE, type JsonValue, type WriteTarget } from './tool-result.ts';

export type JsonObject = { [key: string]: JsonValue };

/** Stable codes of the refusals a step makes; the database's CHECK constraints refuse the same pairs. */
export const StepRefusal = {
  InvalidKind: 'STEP_INVALID_KIND',
  InvalidSequence: 'STEP_INVALID_SEQUENCE',
  InvalidRound: 'STEP_INVALID_ROUND',
  InvalidDuration: 'STEP_INVALID_DURATION',
  InvalidOccurredAt: 'STEP_INVALID_OCCURRED_AT',
  UnknownOutcome: 'STEP_UNKNOWN_OUTCOME',
  OutcomeOnNonToolStep: 'STEP_OUTCOME_ON_NON_TOOL_STEP',
  OutcomeWithoutIsError: 'STEP_OUTCOME_WITHOUT_IS_ERROR',
  OutcomeContradictsIsError: 'STEP_OUTCOME_CONTRADICTS_IS_ERROR',
  WriteTargetOnWrongKind: 'STEP_WRITE_TARGET_ON_WRONG_KIND',
} as const;

export type StepRefusalCode = (typeof StepRefusal)[keyof typeof StepRefusal];

export class StepInvariantError extends InvalidInputError {
  declare readonly code: StepRefusalCode;
  constructor(code: StepRefusalCode, message: string) {
    super(code, message);
  }
}

/** One step as the database stores it (column names in camelCase). */
export interface RunStepRecord {
  sequence: number;
  kind: string;
  round: number;
  durationMs: number;
  occurredAt: Date;
  toolName: string | null;
  server: string | null;
  toolIsError: boolean | null;
  toolOutcome: string | null;
  /** Private: prompts, arguments, tool output, artifacts. */
  payload: JsonObject;
  /** Public facts: names, counts, lengths, token counts, cost, the write target. */
  metadata: JsonObject;
}

export interface RunStepProps {
  sequence: number;
  kind: StepKind;
  round: number;
  durationMs: number;
  occurredAt: Date;
  toolName?: string | null;
  server?: string | null;
  toolIsError?: boolean | null;
  toolOutcome?: ToolOutcome | null;
  writeTarget?: WriteTarget | null;
  payload?: JsonObject;
  metadata?: JsonObject;
}

/** What a stored row says of its outcome, and its public facts. */
interface OutcomeRecord {
  kind: string;
  toolIsError: boolean | null;
  toolOutcome: string | null;
  metadata: Record<string, unknown>;
}

/** The stated code of a step with this outcome, when it is a well-formed one. */
function codeOf(
  record: OutcomeRecord,
  outcome: ToolOutcome,
  fact: 'failureCode' | 'cancelCode',
): string | null {
  if (statedOutcome(record.kind, record.toolIsError, record.toolOutcome) !== outcome) return null;
  const code = record.metadata[fact];
  return typeof code === 'string' && FAILURE_CODE.test(code) ? code : null;
}

function refuse(code: StepRefusalCode, message: string): never {
  throw new StepInvariantError(code, message);
}

function isNonNegativeInteger(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/**
 * One step of a run. It refuses to disagree with itself: an outcome only on a
 * tool step, and only one that agrees with `toolIsError`.
 */
export class RunStep {
  readonly sequence: number;
  readonly kind: StepKind;
  readonly round: number;
  readonly durationMs: number;
  readonly occurredAt: Date;
  readonly toolName: string | null;
  readonly server: string | null;
  readonly toolIsError: boolean | null;
  readonly toolOutcome: ToolOutcome | null;
  readonly writeTarget: WriteTarget | null;
  readonly payload: JsonObject;
  readonly metadata: JsonObject;

  constructor(props: RunStepProps) {
    if (!isStepKind(props.kind)) refuse(StepRefusal.InvalidKind, `unknown step kind: ${String(props.kind)}`);
    if (!Number.isSafeInteger(props.sequence) || props.sequence < 1 || props.sequence > Limits.maxSequence) {
      refuse(
        StepRefusal.InvalidSequence,
        `sequence must be an integer from 1 to ${Limits.maxSequence}: a run holds at most that many steps`,
      );
    }
    if (!isNonNegativeInteger(props.round))
      refuse(StepRefusal.InvalidRound, 'round must be a non-negative integer');
    if (!isNonNegativeInteger(props.durationMs)) {
      refuse(StepRefusal.InvalidDuration, 'durationMs must be a non-negative integer');
    }
    if (!(props.occurredAt instanceof Date) || Number.isNaN(props.occurredAt.getTime())) {
      refuse(StepRefusal.InvalidOccurredAt, 'occurredAt must be a valid date');
    }
    const toolIsError = props.toolIsError ?? null;
    const toolOutcome = props.toolOutcome ?? null;
    if (toolOutcome !== null) {
      if (!isToolOutcome(toolOutcome))
        refuse(StepRefusal.UnknownOutcome, `unknown outcome: ${String(toolOutcome)}`);
      if (props.kind !== 'tool') {
        refuse(StepRefusal.OutcomeOnNonToolStep, `a ${props.kind} step cannot state a tool outcome`);
      }
      if (toolIsError === null) {
        refuse(StepRefusal.OutcomeWithoutIsError, `outcome ${toolOutcome} needs toolIsError`);
      }
      if (toolIsError !== isErrorOutcome(toolOutcome)) {
        refuse(
          StepRefusal.OutcomeContradictsIsError,
          `outcome ${toolOutcome} contradicts toolIsError=${String(toolIsError)}`,
        );
      }
    }
    const writeTarget = props.writeTarget ?? null;
    if (writeTarget !== null && props.kind !== 'tool_write') {
      refuse(StepRefusal.WriteTargetOnWrongKind, 'only a tool_write step carries a write target');
    }

    this.sequence = props.sequence;
    this.kind = props.kind;
    this.round = props.round;
    this.durationMs = props.durationMs;
    this.occurredAt = props.occurredAt;
    this.toolName = props.toolName ?? null;
    this.server = props.server ?? null;
    this.toolIsError = toolIsError;
    this.toolOutcome = toolOutcome;
    this.writeTarget = writeTarget;
    this.payload = props.payload ?? {};
    this.metadata = props.metadata ?? {};
    Object.freeze(this);
  }

  /** The outcome this step states, by the boolean-first rule; null when it states none. */
  get outcome(): ToolOutcome | null {
    return statedOutcome(this.kind, this.toolIsError, this.toolOutcome);
  }

  toRecord(): RunStepRecord {
    const metadata: JsonObject = { ...this.metadata };
    if (this.writeTarget) metadata.writeTarget = { ...this.writeTarget };
    return {
      sequence: this.sequence,
      kind: this.kind,
      round: this.round,
      durationMs: this.durationMs,
      occurredAt: this.occurredAt,
      toolName: this.toolName,
      server: this.server,
      toolIsError: this.toolIsError,
      toolOutcome: this.toolOutcome,
      payload: this.payload,
      metadata,
    };
  }

  /** The write target a stored row records: a tool_write row's, else none. */
  static writeTargetOf(record: { kind: string; metadata: Record<string, unknown> }): WriteTarget | null {
    return record.kind === 'tool_write' ? decodeWriteTarget(record.metadata.writeTarget) : null;
  }

  /** Why a stored tool step failed, as its stable code; null for any other step, or when it states none. */
  static failureCodeOf(record: OutcomeRecord): string | null {
    return codeOf(record, 'failed', 'failureCode');
  }

  /** Who cut a cancelled tool step off (MCP_CALL_CANCELLED, MCP_SERVICE_STOPPING); null for any other step. */
  static cancelCodeOf(record: OutcomeRecord): string | null {
    return codeOf(record, 'cancelled', 'cancelCode');
  }

  /** A stored row, read back through the same refusals a new step meets. */
  static fromRecord(record: RunStepRecord): RunStep {
    const { writeTarget, ...metadata } = record.metadata;
    return new RunStep({
      sequence: record.sequence,
      kind: record.kind as StepKind,
      round: record.round,
      durationMs: record.durationMs,
      occurredAt: record.occurredAt,
      toolName: record.toolName,
      server: record.server,
      toolIsError: record.toolIsError,
      toolOutcome: record.toolOutcome as ToolOutcome | null,
      writeTarget: decodeWriteTarget(writeTarget),
      payload: record.payload,
      metadata,
    });
  }
}
