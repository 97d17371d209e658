import { InvalidInputError } from './errors.ts';
import { isOneOf } from './one-of.ts';
import { isErrorOutcome, ToolOutcome } from './tool-outcome.ts';

/** A JSON value as stored: what an artifact may hold. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** `text` content is a string; `json` content any JSON value. */
export const ARTIFACT_TYPES = ['text', 'json'] as const;
export type ArtifactType = (typeof ARTIFACT_TYPES)[number];

export type ToolArtifact = {
  title: string;
  type: ArtifactType;
  content: JsonValue;
};

export const WRITE_KINDS = ['created', 'updated'] as const;
export type WriteKind = (typeof WRITE_KINDS)[number];

/** A record the tool wrote on our side: which table, which row, and how. */
export interface WriteTarget {
  readonly table: string;
  readonly uid: string;
  readonly kind: WriteKind;
}

/** A write target as stored in a step's metadata; null when the value is not one. */
export function decodeWriteTarget(value: unknown): WriteTarget | null {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const { table, uid, kind } = value as Record<string, unknown>;
  if (typeof table !== 'string' || typeof uid !== 'string' || !isOneOf(kind, WRITE_KINDS)) return null;
  return { table, uid, kind };
}

/** Failure codes of the domain itself; transports bring their own (MCP_*). */
export const ToolFailure = {
  /** The tool answered with isError, or threw: the server and the transport worked. */
  ToolError: 'TOOL_ERROR',
} as const;

/**
 * Who cut a cancelled call off, when the service itself made the call (callTool):
 * never the server, so neither is a failure or counts in a failure rate.
 */
export const ToolCancel = {
  /** The run was cancelled while the call was on the wire. */
  RunCancelled: 'MCP_CALL_CANCELLED',
  /** runledger stopped (SIGTERM) while the call was on the wire; the run stays open. */
  ServiceStopping: 'MCP_SERVICE_STOPPING',
} as const;

/** A failure code: a stable name in upper case, at most 64 characters. */
export const FAILURE_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/** The refusal of a failure code that is not one, or that comes with an outcome other than failed. */
export const FailureCodeRefusal = {
  Invalid: 'FAILURE_CODE_INVALID',
  WithoutFailure: 'FAILURE_CODE_WITHOUT_FAILURE',
} as const;

/** A failure code as given: null when none; refused (FAILURE_CODE_INVALID) when not one. */
export function checkFailureCode(
  code: string | null | undefined,
  field: string | null = null,
): string | null {
  if (code === null || code === undefined) return null;
  if (!FAILURE_CODE.test(code)) {
    throw new InvalidInputError(
      FailureCodeRefusal.Invalid,
      'a failure code is 1 to 64 characters: an upper-case letter, then upper-case letters, digits or _',
      field,
    );
  }
  return code;
}

/**
 * The result of one tool call. It holds one outcome; `isError` is derived from
 * it, so "cancelled but not an error" cannot be represented. Failed and
 * cancelled results are fail-closed: they carry no artifacts and no write target.
 */
export class ToolResult {
  private constructor(
    readonly outcome: ToolOutcome,
    readonly content: string,
    readonly artifacts: readonly ToolArtifact[],
    readonly writeTarget: WriteTarget | null,
    /** Why a failed call failed, as a stable code (TOOL_ERROR, MCP_*); null when not stated, and on ok and cancelled. */
    readonly failureCode: string | null = null,
    /**
     * Who cut a cancelled call off, as a stable code: MCP_CALL_CANCELLED (the
     * run was cancelled), MCP_SERVICE_STOPPING (runledger itself stopped);
     * null when not stated, and on ok and failed. Neither is the server's failure.
     */
    readonly cancelCode: string | null = null,
  ) {
    Object.freeze(this);
  }

  static ok(
    content: string,
    artifacts: readonly ToolArtifact[] = [],
    writeTarget: WriteTarget | null = null,
  ) {
    return new ToolResult(ToolOutcome.Ok, content, Object.freeze([...artifacts]), writeTarget);
  }

  static failed(content: string, failureCode: string | null = null): ToolResult {
    return new ToolResult(
      ToolOutcome.Failed,
      content,
      Object.freeze([]),
      null,
      checkFailureCode(failureCode),
    );
  }

  static cancelled(content: string, cancelCode: string | null = null): ToolResult {
    return new ToolResult(
      ToolOutcome.Cancelled,
      content,
      Object.freeze([]),
      null,
      null,
      checkFailureCode(cancelCode),
    );
  }

  /**
   * The one way to build a result from an outcome known only at run time. Whatever
   * the caller passes, a failed or cancelled result keeps neither artifacts nor
   * a write target.
   */
  static of(
    outcome: ToolOutcome,
    content: string,
    artifacts: readonly ToolArtifact[] = [],
    writeTarget: WriteTarget | null = null,
    failureCode: string | null = null,
    cancelCode: string | null = null,
  ): ToolResult {
    switch (outcome) {
      case ToolOutcome.Ok:
        return ToolResult.ok(content, artifacts, writeTarget);
      case ToolOutcome.Failed:
        return ToolResult.failed(content, failureCode);
      case ToolOutcome.Cancelled:
        return ToolResult.cancelled(content, cancelCode);
    }
  }

  get isError(): boolean {
    return isErrorOutcome(this.outcome);
  }

  /** Attaching a write target to a failed or cancelled result changes nothing. */
  withWriteTarget(writeTarget: WriteTarget): ToolResult {
    if (this.isError) return this;
    return new ToolResult(this.outcome, this.content, this.artifacts, writeTarget);
  }

  /** The same result with other channels, through the fail-closed factory. */
  withChannels(content: string, artifacts: readonly ToolArtifact[]): ToolResult {
    return ToolResult.of(
      this.outcome,
      content,
      artifacts,
      this.writeTarget,
      this.failureCode,
      this.cancelCode,
    );
  }
}
