import { type Locale, outcomeLabel } from './labels.ts';
import { RunStep } from './run-step.ts';
import { statedOutcome } from './stated-outcome.ts';
import type { StepKind } from './step-kind.ts';
import type { ToolOutcome } from './tool-outcome.ts';
import type { WriteTarget } from './tool-result.ts';

export interface TimelineEntry {
  sequence: number;
  kind: StepKind;
  occurredAt: Date;
  round: number;
  durationMs: number;
  /** The step's stated outcome (the boolean-first rule); null when it states none. */
  outcome: ToolOutcome | null;
  outcomeLabel: string | null;
  detail: string;
}

/**
 * The facts a detail line may show. Anything else in a step's metadata, and
 * its whole payload (prompts, arguments, tool output), never reaches the line.
 */
export const DETAIL_FACTS = [
  'model',
  'promptTokens',
  'completionTokens',
  'estimatedCost',
  'finishReason',
  'argumentsBytes',
  'contentBytes',
  'artifactCount',
  'messageCount',
  'droppedCount',
] as const;

type DetailFacts = Partial<Record<(typeof DETAIL_FACTS)[number], string | number>>;

/** What a detail line reads of a step: never its payload. */
export interface DetailSource {
  kind: StepKind;
  server: string | null;
  toolName: string | null;
  writeTarget: WriteTarget | null;
  metadata: Readonly<Record<string, unknown>>;
}

/** What a timeline entry reads of a step. */
export interface TimelineSource extends DetailSource {
  sequence: number;
  occurredAt: Date;
  round: number;
  durationMs: number;
  outcome: ToolOutcome | null;
}

/**
 * A stored row as the timeline reads it: the columns a line shows and its
 * metadata (of which the line shows DETAIL_FACTS and the write target), no payload.
 */
export interface TimelineRecord {
  sequence: number;
  kind: string;
  occurredAt: Date;
  round: number;
  durationMs: number;
  toolName: string | null;
  server: string | null;
  toolIsError: boolean | null;
  toolOutcome: string | null;
  facts: Readonly<Record<string, unknown>>;
}

export function timelineSource(record: TimelineRecord): TimelineSource {
  const { writeTarget: _writeTarget, ...metadata } = record.facts;
  return {
    sequence: record.sequence,
    kind: record.kind as StepKind,
    occurredAt: record.occurredAt,
    round: record.round,
    durationMs: record.durationMs,
    server: record.server,
    toolName: record.toolName,
    outcome: statedOutcome(record.kind, record.toolIsError, record.toolOutcome),
    writeTarget: RunStep.writeTargetOf({ kind: record.kind, metadata: record.facts }),
    metadata,
  };
}

function allowedFacts(metadata: DetailSource['metadata']): DetailFacts {
  const facts: DetailFacts = {};
  for (const name of DETAIL_FACTS) {
    const value = metadata[name];
    if (typeof value === 'number' && Number.isFinite(value)) facts[name] = value;
    // Short identifiers only: a model or finish reason, never free text.
    else if (typeof value === 'string' && /^[\w.:/-]{1,64}$/.test(value)) facts[name] = value;
  }
  return facts;
}

function toolLine(step: DetailSource): string[] {
  return [[step.server, step.toolName].filter(Boolean).join('/') || 'tool'];
}

/** A short line of metadata about one step, in a fixed order. */
export function detailLine(step: DetailSource): string {
  const facts = allowedFacts(step.metadata);
  const parts: string[] = [];
  if (step.kind === 'tool' || step.kind === 'tool_write') parts.push(...toolLine(step));
  if (step.kind === 'tool_write' && step.writeTarget) {
    parts.push(`${step.writeTarget.kind} ${step.writeTarget.table}#${step.writeTarget.uid}`);
  }
  if (facts.model !== undefined) parts.push(String(facts.model));
  if (facts.promptTokens !== undefined || facts.completionTokens !== undefined) {
    parts.push(`${facts.promptTokens ?? 0} in / ${facts.completionTokens ?? 0} out tokens`);
  }
  if (typeof facts.estimatedCost === 'number') parts.push(`$${facts.estimatedCost.toFixed(4)}`);
  if (facts.finishReason !== undefined) parts.push(`finish: ${facts.finishReason}`);
  if (facts.argumentsBytes !== undefined) parts.push(`args ${facts.argumentsBytes} B`);
  if (facts.contentBytes !== undefined) parts.push(`result ${facts.contentBytes} B`);
  if (typeof facts.artifactCount === 'number' && facts.artifactCount > 0) {
    parts.push(`${facts.artifactCount} artifact${facts.artifactCount === 1 ? '' : 's'}`);
  }
  if (facts.messageCount !== undefined) parts.push(`${facts.messageCount} messages`);
  if (facts.droppedCount !== undefined) parts.push(`${facts.droppedCount} dropped`);
  return parts.length > 0 ? parts.join(' · ') : step.kind;
}

export function timelineEntry(step: TimelineSource, locale: Locale): TimelineEntry {
  const outcome = step.outcome;
  return {
    sequence: step.sequence,
    kind: step.kind,
    occurredAt: step.occurredAt,
    round: step.round,
    durationMs: step.durationMs,
    outcome,
    outcomeLabel: outcome === null ? null : outcomeLabel(outcome, locale),
    detail: detailLine(step),
  };
}

export function buildTimeline(steps: readonly TimelineSource[], locale: Locale): TimelineEntry[] {
  return [...steps].sort((a, b) => a.sequence - b.sequence).map((step) => timelineEntry(step, locale));
}

/** Timeline entries from stored rows already in sequence order. */
export function timelineOfRecords(records: readonly TimelineRecord[], locale: Locale): TimelineEntry[] {
  return records.map((record) => timelineEntry(timelineSource(record), locale));
}
