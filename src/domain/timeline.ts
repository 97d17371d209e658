import { isolated } from './bidi.ts';
import { type IsoInstant, isoInstant } from './date-time.ts';
import { decimal, type LabelKey, type Locale, label, outcomeLabel } from './labels.ts';
import { RunStep } from './run-step.ts';
import type { StepKind } from './step-kind.ts';
import { isToolOutcome, type ToolOutcome } from './tool-outcome.ts';
import { ToolCancel, type WriteTarget } from './tool-result.ts';

export interface TimelineEntry {
  sequence: number;
  kind: StepKind;
  /** As the DateTime scalar writes it: thousands of lines are not made into Dates and back. */
  occurredAt: IsoInstant;
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
  'failureCode',
  'cancelCode',
  'sessionStartMs',
  // A request of a person and its decision (docs/architecture.md, "A human in the loop"): what became of it, and who decided.
  'phase',
  'decision',
  'decidedBy',
] as const;

type DetailFact = (typeof DETAIL_FACTS)[number];
type DetailFacts = Partial<Record<DetailFact, string | number>>;

const DETAIL_FACT_NAMES: ReadonlySet<string> = new Set(DETAIL_FACTS);

/** Short identifiers only: a model or finish reason, never free text. */
const SHORT_IDENTIFIER = /^[\w.:/-]{1,64}$/;

/** What a detail line reads of a step: never its payload. */
export interface DetailSource {
  kind: StepKind;
  server: string | null;
  toolName: string | null;
  writeTarget: WriteTarget | null;
  /** The stated outcome: a failure code is shown on failed steps only. */
  outcome: ToolOutcome | null;
  metadata: Readonly<Record<string, unknown>>;
}

/** What a timeline entry reads of a step. */
export interface TimelineSource extends DetailSource {
  sequence: number;
  occurredAt: Date;
  round: number;
  durationMs: number;
}

/**
 * A stored row as the timeline reads it: the columns a line shows, the
 * outcome it states and its metadata (of which the line shows DETAIL_FACTS and
 * the write target), no payload.
 */
export interface TimelineRecord {
  sequence: number;
  kind: string;
  occurredAt: IsoInstant;
  round: number;
  durationMs: number;
  toolName: string | null;
  server: string | null;
  /** The stated outcome (the boolean-first rule), as the database applies it: `stated_tool_outcome`. */
  outcome: string | null;
  facts: Readonly<Record<string, unknown>>;
}

function allowedFacts(metadata: DetailSource['metadata']): DetailFacts {
  const facts: DetailFacts = {};
  // The step's own few keys, not every allowed name looked up in each step's metadata.
  for (const name in metadata) {
    if (!DETAIL_FACT_NAMES.has(name)) continue;
    const value = metadata[name];
    if (
      typeof value === 'number'
        ? Number.isFinite(value)
        : typeof value === 'string' && SHORT_IDENTIFIER.test(value)
    ) {
      facts[name as DetailFact] = value as string | number;
    }
  }
  return facts;
}

/** The parts of a line, joined as they come (no array per line: thousands of lines). */
function and(line: string, part: string): string {
  return line === '' ? part : `${line} · ${part}`;
}

const DECISIONS: ReadonlySet<string> = new Set([
  'approved',
  'denied',
  'answered',
  'declined',
  'expired',
  'cancelled',
]);

function requestPart(facts: DetailFacts, locale: Locale): string {
  const decision = String(facts.decision ?? '');
  if (facts.phase !== 'decided' || !DECISIONS.has(decision))
    return label(locale, 'runs.detail.request.asked');
  return label(locale, `runs.detail.request.${decision}` as LabelKey, {
    actor: isolated(String(facts.decidedBy ?? '')),
  });
}

function toolPart(step: DetailSource, locale: Locale): string {
  const { server, toolName } = step;
  // Names stand in a sentence of the viewer's words: isolated, none can turn those words around.
  if (server && toolName) return `${isolated(server)}/${isolated(toolName)}`;
  return isolated(server || toolName || '') || label(locale, 'runs.detail.tool');
}

/** A short line of metadata about one step, in a fixed order, in the locale's words. */
export function detailLine(step: DetailSource, locale: Locale = 'en'): string {
  const facts = allowedFacts(step.metadata);
  let line = '';
  if (step.kind === 'tool' || step.kind === 'tool_write') line = toolPart(step, locale);
  if ((step.kind === 'approval' || step.kind === 'input') && facts.phase !== undefined)
    line = requestPart(facts, locale);
  if (step.kind === 'tool_write' && step.writeTarget) {
    const target = isolated(`${step.writeTarget.table}#${step.writeTarget.uid}`);
    line = and(line, label(locale, `runs.detail.write.${step.writeTarget.kind}`, { target }));
  }
  // The code is a stable name in every locale; only the words around it are translated.
  if (step.outcome === 'failed' && typeof facts.failureCode === 'string') {
    line = and(line, label(locale, 'runs.detail.failure', { code: facts.failureCode }));
  }
  if (step.outcome === 'cancelled' && facts.cancelCode === ToolCancel.ServiceStopping) {
    line = and(line, label(locale, 'runs.detail.serviceStopping'));
  }
  if (typeof facts.sessionStartMs === 'number') {
    line = and(line, label(locale, 'runs.detail.sessionStart', { ms: facts.sessionStartMs }));
  }
  if (facts.model !== undefined) line = and(line, isolated(String(facts.model)));
  if (facts.promptTokens !== undefined || facts.completionTokens !== undefined) {
    line = and(
      line,
      label(locale, 'runs.detail.tokens', { in: facts.promptTokens ?? 0, out: facts.completionTokens ?? 0 }),
    );
  }
  if (typeof facts.estimatedCost === 'number') {
    line = and(line, label(locale, 'runs.detail.cost', { cost: decimal(facts.estimatedCost, 4, locale) }));
  }
  if (facts.finishReason !== undefined)
    line = and(line, label(locale, 'runs.detail.finish', { reason: facts.finishReason }));
  if (facts.argumentsBytes !== undefined) {
    line = and(line, label(locale, 'runs.detail.arguments', { bytes: facts.argumentsBytes }));
  }
  if (facts.contentBytes !== undefined)
    line = and(line, label(locale, 'runs.detail.result', { bytes: facts.contentBytes }));
  if (typeof facts.artifactCount === 'number' && facts.artifactCount > 0) {
    const key = facts.artifactCount === 1 ? 'runs.detail.artifacts.one' : 'runs.detail.artifacts.other';
    line = and(line, label(locale, key, { count: facts.artifactCount }));
  }
  if (facts.messageCount !== undefined)
    line = and(line, label(locale, 'runs.detail.messages', { count: facts.messageCount }));
  if (facts.droppedCount !== undefined)
    line = and(line, label(locale, 'runs.detail.dropped', { count: facts.droppedCount }));
  return line === '' ? label(locale, `runs.detail.kind.${step.kind}`) : line;
}

function entryOf(
  step: DetailSource & { sequence: number; round: number; durationMs: number },
  occurredAt: IsoInstant,
  locale: Locale,
): TimelineEntry {
  const outcome = step.outcome;
  return {
    sequence: step.sequence,
    kind: step.kind,
    occurredAt,
    round: step.round,
    durationMs: step.durationMs,
    outcome,
    outcomeLabel: outcome === null ? null : outcomeLabel(outcome, locale),
    detail: detailLine(step, locale),
  };
}

export function timelineEntry(step: TimelineSource, locale: Locale): TimelineEntry {
  return entryOf(step, isoInstant(step.occurredAt), locale);
}

export function buildTimeline(steps: readonly TimelineSource[], locale: Locale): TimelineEntry[] {
  return [...steps].sort((a, b) => a.sequence - b.sequence).map((step) => timelineEntry(step, locale));
}

/** The timeline entry of a stored row. */
export function timelineEntryOfRecord(record: TimelineRecord, locale: Locale): TimelineEntry {
  const { outcome, kind, facts } = record;
  // Stored outcomes are guarded by a CHECK constraint; anything else is a corrupt row.
  if (outcome !== null && !isToolOutcome(outcome))
    throw new TypeError(`unknown stored tool outcome: ${outcome}`);
  return entryOf(
    {
      sequence: record.sequence,
      kind: kind as StepKind,
      round: record.round,
      durationMs: record.durationMs,
      server: record.server,
      toolName: record.toolName,
      outcome,
      writeTarget: RunStep.writeTargetOf({ kind, metadata: facts }),
      // Not copied without its writeTarget: a line reads DETAIL_FACTS of it and nothing else.
      metadata: facts,
    },
    record.occurredAt,
    locale,
  );
}

/** Timeline entries from stored rows already in sequence order. */
export function timelineOfRecords(records: readonly TimelineRecord[], locale: Locale): TimelineEntry[] {
  return records.map((record) => timelineEntryOfRecord(record, locale));
}
