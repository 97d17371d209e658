import { isKeyActive } from '../db/api-keys.ts';
import type { Database } from '../db/connection.ts';
import {
  anyTraceSeen,
  heldOfArriving,
  insertNewSpanRun,
  insertSpansSql,
  noteTracesSeen,
  runsOfTraces,
  type StoredSpan,
} from '../db/otlp-spans.ts';
import {
  insertRunUnlessPresent,
  lockRun,
  storeStepsSql,
  updateRunSql,
  writeTogether,
} from '../db/run-writes.ts';
import { serviceSecret } from '../db/service-secrets.ts';
import { DomainError, KeyNotActiveError } from '../domain/errors.ts';
import { checkName } from '../domain/limits.ts';
import { requirePermission } from '../domain/permissions.ts';
import { stepRollups } from '../domain/run-rollups.ts';
import { isTerminalStatus, type RunStatus } from '../domain/run-status.ts';
import type { RunStep } from '../domain/run-step.ts';
import type { StepCommand } from '../domain/run-trace.ts';
import { RunTrace } from '../domain/run-trace.ts';
import { checkRunAcceptsSpanStep, type RunEnding, spanRunUuid } from '../domain/span-evidence.ts';
import type { Scope } from './scope.ts';
import {
  type PlainStepInput,
  plainStep,
  type ToolCallInput,
  type ToolResultInput,
  toolCall,
  toolResult,
} from './step-input.ts';

/**
 * Recording from OpenTelemetry spans (docs/architecture.md, "Runs from OpenTelemetry"): the same rules as every other
 * entry point (record permission, the actor's own runs, the step checks,
 * gapless numbering under the run's lock, the run's rollups), plus the two a
 * stream of spans needs: each span is stored once, and spans find their run by
 * trace (or conversation) whichever request brings them.
 */

/** The step a span becomes, as plain inputs: checked here by the rules of every entry point. */
export type SpanStep =
  | { type: 'tool'; call: ToolCallInput; result: ToolResultInput }
  | { type: 'plain'; step: PlainStepInput };

/** A refusal of one span: a stable code, and what was wrong. */
export interface SpanRefusal {
  code: string;
  message: string;
}

/** One span, as the OTLP adapter maps it. */
export interface IngestedSpan {
  traceId: string;
  spanId: string;
  /** When it started, in nanoseconds since the epoch: the order of the run's steps. */
  startUnixNano: bigint;
  endUnixNano: bigint;
  endedAt: Date;
  /** `gen_ai.conversation.id`: spans of one conversation share a run. */
  conversationId: string | null;
  /** Candidates for a new run's configuration, strongest first within each span. */
  configuration: { stated: string | null; agentName: string | null; serviceName: string | null };
  /** The step it becomes; null for a span that is not a step. */
  step: SpanStep | null;
  /** A trace's root span ends its run this way; null for every other span. */
  ending: RunEnding | null;
  /** Its parent's span id; null for a root. */
  parentSpanId?: string | null;
  /** Whether its parent came in the same request. */
  parentInRequest?: boolean;
  /** For a tool step: made of the call's tool span, or of its MCP request with no tool span above it here. */
  callRole?: 'tool' | 'mcp_call' | null;
  /** Set when the span cannot be used at all. */
  refusal: SpanRefusal | null;
}

export interface IngestResult {
  /** Spans stored now, as steps or as a run's end. */
  stored: number;
  /** Spans already stored by an earlier request (or twice in this one): nothing written. */
  duplicates: number;
  /** Spans that are neither steps nor ends (HTTP, database, agent spans below the root). */
  ignored: number;
  rejected: SpanRefusal[];
}

/** A new run's configuration when no span names one. */
export const DEFAULT_SPAN_CONFIGURATION = 'opentelemetry';

const spanKey = (span: { traceId: string; spanId: string }) => `${span.traceId}/${span.spanId}`;

/** A domain refusal as one span's: its code, field and message; anything else is not a refusal and is thrown on. */
export function refusalOf(error: unknown): SpanRefusal {
  if (error instanceof DomainError) {
    const field = 'field' in error && typeof error.field === 'string' ? ` (${error.field})` : '';
    return { code: error.code, message: `${error.code}${field}: ${error.message}` };
  }
  throw error;
}

/** Where a group of spans goes: a run keyed by trace or by conversation. */
interface SpanGroup {
  uuid: string;
  spans: IngestedSpan[];
}

/**
 * The run of each span: the run its trace already went to (`known`, by
 * trace id); else, for a trace new to the sender, the run of its
 * conversation when one of its spans here names one; else a run of its own.
 */
function groupsOf(
  secret: string,
  owner: string,
  spans: readonly IngestedSpan[],
  known: ReadonlyMap<string, string>,
): SpanGroup[] {
  const conversationOf = new Map<string, string>();
  for (const span of spans) {
    if (span.conversationId !== null && !conversationOf.has(span.traceId)) {
      conversationOf.set(span.traceId, span.conversationId);
    }
  }
  const groups = new Map<string, SpanGroup>();
  // A run's uuid is an HMAC: made once a trace, not once a span.
  const runOfTrace = new Map<string, string>();
  for (const span of spans) {
    let uuid = runOfTrace.get(span.traceId);
    if (uuid === undefined) {
      const conversation = conversationOf.get(span.traceId);
      uuid =
        known.get(span.traceId) ??
        (conversation !== undefined
          ? spanRunUuid(secret, owner, 'conversation', conversation)
          : spanRunUuid(secret, owner, 'trace', span.traceId));
      runOfTrace.set(span.traceId, uuid);
    }
    const group = groups.get(uuid) ?? { uuid, spans: [] };
    group.spans.push(span);
    groups.set(uuid, group);
  }
  return [...groups.values()];
}

function configurationOf(spans: readonly IngestedSpan[]): string {
  for (const pick of ['stated', 'agentName', 'serviceName'] as const) {
    const found = spans.find((s) => s.configuration[pick])?.configuration[pick];
    if (found) return found;
  }
  return DEFAULT_SPAN_CONFIGURATION;
}

function commandOf(step: SpanStep, now: Date): StepCommand {
  if (step.type === 'tool') {
    return { type: 'toolResult', call: toolCall(step.call, now), result: toolResult(step.result) };
  }
  return { type: 'plain', step: plainStep(step.step, now) };
}

interface GroupOutcome {
  stored: number;
  duplicates: number;
  ignored: number;
  rejected: SpanRefusal[];
}

/** A span that became a tool step: which span of its call it is, and the tool's name. */
function callOf(span: IngestedSpan): { role: 'tool' | 'mcp_call'; toolName: string } | null {
  if (span.step?.type !== 'tool' || !span.callRole) return null;
  return { role: span.callRole, toolName: span.step.call.toolName };
}

/** What a run already holds of a group arriving for it (heldOfArriving), as the plan reads it. */
interface Held {
  stored: ReadonlySet<string>;
  recordedApart: ReadonlySet<string>;
  lastSequence: number;
}
/** A run new to this group holds nothing. */
const NOTHING_HELD: Held = { stored: new Set(), recordedApart: new Set(), lastSequence: 0 };

/** What a group writes: its steps, the spans recorded as stored, the run's end, and the answer's counts. */
interface GroupPlan {
  outcome: GroupOutcome;
  steps: readonly RunStep[];
  records: StoredSpan[];
  ending: (RunEnding & { finishedAt: Date }) | null;
}

/** The spans of a group that write something: steps, and the root span that ends the run of its own trace. */
function relevantOf(secret: string, owner: string, group: SpanGroup) {
  const traceRuns = new Map<string, string>();
  const runOfTrace = (traceId: string) => {
    let uuid = traceRuns.get(traceId);
    if (uuid === undefined) {
      uuid = spanRunUuid(secret, owner, 'trace', traceId);
      traceRuns.set(traceId, uuid);
    }
    return uuid;
  };
  // A root span ends the run of its own trace; a conversation's run has no last span.
  const endsRun = (s: IngestedSpan) => s.ending !== null && group.uuid === runOfTrace(s.traceId);
  return { relevant: group.spans.filter((s) => s.step !== null || endsRun(s)), endsRun };
}

/**
 * The plan of one group against what its run holds, the rules applied: spans
 * already stored left out, the rest numbered after the last stored step in
 * start-time order, the run ended by its root span (a trace's run only). A
 * refusal of one span is reported and the others are planned; a refusal of
 * the group (a token total past its limit) is thrown.
 */
function planGroup(
  relevant: readonly IngestedSpan[],
  endsRun: (s: IngestedSpan) => boolean,
  run: {
    uuid: string;
    status: string;
    finishedAt: Date | null;
    promptTokens: number;
    completionTokens: number;
  },
  held: Held,
  now: Date,
  ignored: number,
): GroupPlan {
  const outcome: GroupOutcome = { stored: 0, duplicates: 0, ignored, rejected: [] };
  const fresh = relevant.filter((s) => !held.stored.has(spanKey(s)));
  outcome.duplicates = relevant.length - fresh.length;
  const state = { uuid: run.uuid, status: run.status as RunStatus, finishedAt: run.finishedAt };
  const trace = new RunTrace({ nextSequence: held.lastSequence + 1, clock: () => now });
  const records: StoredSpan[] = [];
  // Start-time order; spans that started in the same nanosecond keep the order they arrived in (a stable sort).
  const ordered = [...fresh].sort((a, b) =>
    a.startUnixNano === b.startUnixNano ? 0 : a.startUnixNano < b.startUnixNano ? -1 : 1,
  );
  for (const span of ordered) {
    if (span.step === null) continue;
    // The other span of a call an earlier request recorded: kept as seen, not recorded twice.
    if (held.recordedApart.has(spanKey(span))) {
      records.push({
        traceId: span.traceId,
        spanId: span.spanId,
        sequence: null,
        parentSpanId: span.parentSpanId ?? null,
      });
      continue;
    }
    try {
      const call = callOf(span);
      const command = commandOf(span.step, now);
      const timing = command.type === 'plain' ? command.step : command.call;
      checkRunAcceptsSpanStep(state, {
        occurredAt: timing.occurredAt ?? now,
        durationMs: timing.durationMs,
      });
      const [first] = trace.apply(command);
      records.push({
        traceId: span.traceId,
        spanId: span.spanId,
        sequence: first?.sequence ?? null,
        parentSpanId: span.parentSpanId ?? null,
        callRole: call?.role ?? null,
        call:
          call === null
            ? null
            : { toolName: call.toolName, startUnixNano: span.startUnixNano, endUnixNano: span.endUnixNano },
      });
    } catch (error) {
      outcome.rejected.push(refusalOf(error));
    }
  }

  // The root span ends a trace's run, after its steps: the latest-ending root if sent more than once.
  const endings = ordered.filter(endsRun);
  const recorded = new Set(records.map(spanKey));
  for (const span of endings) {
    if (!recorded.has(spanKey(span)))
      records.push({ traceId: span.traceId, spanId: span.spanId, sequence: null });
  }
  const last = endings.reduce<IngestedSpan | null>(
    (a, b) => (a === null || b.endedAt > a.endedAt ? b : a),
    null,
  );
  const ending =
    last?.ending && !isTerminalStatus(state.status) ? { ...last.ending, finishedAt: last.endedAt } : null;
  // The run's token totals are checked here, for the whole group.
  if (trace.steps.length > 0) stepRollups(trace.steps, run);
  outcome.stored = records.length;
  return { outcome, steps: trace.steps, records, ending };
}

/** One group to record, and how. */
interface GroupIngest {
  db: Database;
  secret: string;
  owner: string;
  group: SpanGroup;
  now: Date;
  /** The run's live notice sent by the group's own write statement (a notice through PostgreSQL). */
  announce: boolean;
  /** A key the actor was remembered by, to check before anything is written (null: checked already). */
  rememberedKey: string | null;
}

/** The new run of a group: keyed, owned and configured by its spans, created when its earliest span started. */
function newRunOf(owner: string, group: SpanGroup) {
  const earliest = group.spans.reduce((a, b) => (b.startUnixNano < a.startUnixNano ? b : a));
  const createdAt = new Date(Number(earliest.startUnixNano / 1_000_000n));
  return {
    uuid: group.uuid,
    owner,
    configuration: checkName(configurationOf(group.spans), 'configuration'),
    status: 'running' as const,
    createdAt,
    startedAt: createdAt,
  };
}

/**
 * A group whose traces the sender never sent before, written as a new run in
 * one statement and one round trip (`insertNewSpanRun`): the plan made for a
 * run that holds nothing, the run inserted with its totals and end, its steps
 * and span records, all or nothing. When that does not hold (a span of its
 * traces stored, its run already there, a concurrent delivery of the same
 * spans), nothing is written and the group takes the general path, with the
 * runs its traces went to when the statement could read them.
 */
async function ingestNewRun(
  ingest: GroupIngest,
): Promise<{ written: GroupOutcome } | { known: ReadonlyMap<string, string> | null }> {
  const { owner, group, now } = ingest;
  const { relevant, endsRun } = relevantOf(ingest.secret, owner, group);
  let run: ReturnType<typeof newRunOf>;
  let plan: GroupPlan;
  try {
    run = newRunOf(owner, group);
    plan = planGroup(
      relevant,
      endsRun,
      { ...run, finishedAt: null, promptTokens: 0, completionTokens: 0 },
      NOTHING_HELD,
      now,
      group.spans.length - relevant.length,
    );
  } catch (error) {
    // A refusal of the whole group (a configuration name, a token total) is answered by the general path,
    // in the order its rules give.
    if (error instanceof DomainError) return { known: null };
    throw error;
  }
  const written = await insertNewSpanRun(ingest.db, {
    run,
    rollups: plan.steps.length > 0 ? stepRollups(plan.steps, { promptTokens: 0, completionTokens: 0 }) : null,
    ending: plan.ending,
    traceIds: [...new Set(group.spans.map((s) => s.traceId))],
    steps: plan.steps,
    records: plan.records,
    keyHash: ingest.rememberedKey,
    announce: ingest.announce && plan.records.length > 0,
  });
  if (!written.keyActive) throw new KeyNotActiveError();
  return written.inserted ? { written: plan.outcome } : { known: written.known };
}

/**
 * One group in one transaction: the run created if new and locked, then one
 * statement for what it already holds of the group, the plan, and one
 * statement that writes it.
 */
async function ingestGroup({
  db,
  secret,
  owner,
  group,
  now,
  announce,
  rememberedKey,
}: GroupIngest): Promise<GroupOutcome> {
  return db.transaction(async (tx) => {
    const run =
      (await insertRunUnlessPresent(tx, newRunOf(owner, group))) ?? (await lockRun(tx, group.uuid, [owner]));
    if (!run) {
      if (rememberedKey !== null && !(await isKeyActive(tx, rememberedKey))) throw new KeyNotActiveError();
      const refusal = { code: 'RUN_NOT_FOUND', message: `RUN_NOT_FOUND: no run ${group.uuid}` };
      return { stored: 0, duplicates: 0, ignored: 0, rejected: group.spans.map(() => refusal) };
    }
    const { relevant, endsRun } = relevantOf(secret, owner, group);
    // An exporter that sends span by span delivers a call's MCP request before its tool span: whichever
    // came first is the call's step. Asked of every relevant call span (one already stored is left out below).
    const held = await heldOfArriving(
      tx,
      owner,
      run.id,
      relevant,
      relevant.flatMap((s) => {
        const call = callOf(s);
        if (call === null) return [];
        return [
          {
            traceId: s.traceId,
            spanId: s.spanId,
            callRole: call.role,
            parentApart: s.parentSpanId && !s.parentInRequest ? s.parentSpanId : null,
            toolName: call.toolName,
            startUnixNano: s.startUnixNano,
            endUnixNano: s.endUnixNano,
          },
        ];
      }),
      rememberedKey,
    );
    // Revoked since it was remembered: nothing of the request is written (the transaction rolls back).
    if (!held.keyActive) throw new KeyNotActiveError();
    const plan = planGroup(relevant, endsRun, run, held, now, group.spans.length - relevant.length);
    const { steps, records, ending } = plan;
    // The steps, the run's rollups and its end (after its steps), the spans as stored: one statement,
    // which sends the run's notice too when asked (delivered once it commits).
    await writeTogether(
      tx,
      [
        ...(steps.length > 0 ? [storeStepsSql(run.id, steps)] : []),
        ...(steps.length > 0 || ending
          ? [updateRunSql(tx, run.id, { rollups: steps.length > 0 ? stepRollups(steps, run) : null, ending })]
          : []),
        ...(records.length > 0 ? [insertSpansSql(owner, run.id, records)] : []),
      ],
      announce && records.length > 0 ? run.uuid : undefined,
    );
    return plan.outcome;
  });
}

/**
 * Records an export request's spans. Each run's spans are written in one
 * transaction; a refused span is reported and the others are stored. A span
 * stored before (a retried export) is counted and not written again.
 */
export async function ingestSpans(
  { db, actor, events, rememberedKey = null }: Scope,
  spans: readonly IngestedSpan[],
): Promise<IngestResult> {
  requirePermission(actor, 'record');
  const result: IngestResult = { stored: 0, duplicates: 0, ignored: 0, rejected: [] };
  const seen = new Set<string>();
  const usable: IngestedSpan[] = [];
  for (const span of spans) {
    if (span.refusal) {
      result.rejected.push(span.refusal);
    } else if (seen.has(spanKey(span))) {
      result.duplicates += 1;
    } else {
      seen.add(spanKey(span));
      usable.push(span);
    }
  }
  const now = new Date();
  const secret = await serviceSecret(db, 'otlp_run_ids');
  // Through PostgreSQL, a group's own statement sends the run's notice: no statement and round trip of its own.
  const announce = events?.channelKind === 'postgres';
  const add = (outcome: GroupOutcome) => {
    result.stored += outcome.stored;
    result.duplicates += outcome.duplicates;
    result.ignored += outcome.ignored;
    result.rejected.push(...outcome.rejected);
  };
  // The common request, one trace the sender never sent before (an exporter sends each trace once): one
  // statement, which finds the trace new as it writes it; otherwise the general path, nothing written.
  // A trace this process has seen is most likely not new (a retry, a later part): straight to the general path.
  const traceIds = [...new Set(usable.map((s) => s.traceId))];
  const ifNew = groupsOf(secret, actor.name, usable, new Map());
  const [single] = ifNew;
  let known: ReadonlyMap<string, string> | null = null;
  if (ifNew.length === 1 && single && !anyTraceSeen(db, actor.name, traceIds)) {
    const tried = await ingestNewRun({
      db,
      secret,
      owner: actor.name,
      group: single,
      now,
      announce,
      rememberedKey,
    });
    noteTracesSeen(db, actor.name, traceIds);
    if ('written' in tried) {
      if (tried.written.stored > 0 && !announce) await events?.runChanged(single.uuid);
      add(tried.written);
      return result;
    }
    known = tried.known;
  }
  const groups = groupsOf(
    secret,
    actor.name,
    usable,
    known ?? (await runsOfTraces(db, actor.name, traceIds)),
  );
  // A remembered key is checked once, before anything is written: by the transaction of a request's one
  // group (no round trip of its own), else here.
  const checkedByGroup = groups.length === 1 ? rememberedKey : null;
  if (rememberedKey !== null && checkedByGroup === null && !(await isKeyActive(db, rememberedKey)))
    throw new KeyNotActiveError();
  for (const group of groups) {
    let outcome: GroupOutcome;
    try {
      outcome = await ingestGroup({
        db,
        secret,
        owner: actor.name,
        group,
        now,
        announce,
        rememberedKey: checkedByGroup,
      });
      // Committed: live streams of the run read it now.
      if (outcome.stored > 0 && !announce) await events?.runChanged(group.uuid);
    } catch (error) {
      // A key revoked since it was remembered refuses the request, not a group.
      if (error instanceof KeyNotActiveError) throw error;
      // A refusal of the whole group (a run's token total past its limit): its spans are reported, nothing of it written.
      const refusal = refusalOf(error);
      outcome = { stored: 0, duplicates: 0, ignored: 0, rejected: group.spans.map(() => refusal) };
    }
    add(outcome);
  }
  noteTracesSeen(db, actor.name, traceIds);
  return result;
}
