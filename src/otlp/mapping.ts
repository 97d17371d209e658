import {
  failureCodeFromEvidence,
  failureReasonFromEvidence,
  type RunEnding,
  runEndingFromEvidence,
  type SpanEvidence,
  type SpanException,
  toolOutcomeFromEvidence,
  worseEnding,
} from '../domain/span-evidence.ts';
import { ToolOutcome } from '../domain/tool-outcome.ts';
import type { JsonValue } from '../domain/tool-result.ts';
import { type IngestedSpan, refusalOf, type SpanStep } from '../ledger/ingest-spans.ts';
import {
  Attr,
  CANCELLED_NOTIFICATION,
  integer,
  langChainToolMessage,
  type Reading,
  readSpan,
  TRACELOOP_MCP_SCOPE,
  text,
} from './conventions.ts';
import type { AttributeValue, ReceivedSpan } from './decode.ts';

/**
 * An export request's spans onto runs and steps (docs/opentelemetry.md has the
 * table). Each span is read by its convention (conventions.ts); here the
 * request's structure decides the rest: an MCP `tools/call` span is folded
 * into the tool span above it (one step per call), a model span inside
 * another model span is the same call (its tokens counted once), the evidence
 * of a call is gathered from its span and the spans folded into it, and a
 * trace's root ends its run.
 */

export { Attr };

/** What JSON text can start with, after white space: text that starts otherwise is not parsed (a throw is costly). */
const JSON_START = /^[\s]*[[{"\-0-9tfn]/;

export function asJson(value: AttributeValue | undefined): JsonValue | null {
  if (value === undefined) return null;
  // Arguments are sent as a JSON string by the conventions: stored as the JSON they hold when they hold JSON.
  if (typeof value === 'string') {
    if (!JSON_START.test(value)) return value;
    try {
      return JSON.parse(value) as JsonValue;
    } catch {
      return value;
    }
  }
  return value;
}

function asText(value: AttributeValue | undefined): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A result that says it failed: an MCP `CallToolResult` with `isError: true` (as the libraries record it, maybe wrapped once), or a LangChain `ToolMessage` of status `error`. */
function resultIsError(value: AttributeValue | undefined): boolean {
  if (langChainToolMessage(value)?.failed) return true;
  const json = asJson(value);
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return false;
  if (json.isError === true || json.is_error === true) return true;
  for (const wrapper of ['output', 'result', 'value']) {
    const inner = json[wrapper];
    if (typeof inner === 'object' && inner !== null && !Array.isArray(inner)) {
      if (inner.isError === true || inner.is_error === true) return true;
    } else if (typeof inner === 'string' && /isError|is_error/.test(inner) && resultIsError(inner)) {
      return true;
    }
  }
  return false;
}

const nanosToDate = (nanos: bigint) => new Date(Number(nanos / 1_000_000n));
const durationMs = (span: ReceivedSpan) =>
  Number((span.endUnixNano - span.startUnixNano + 500_000n) / 1_000_000n);

/** What no evidence says: the neutral start of `worseEnding`. */
const COMPLETED_ENDING: RunEnding = { status: 'completed', reason: 'completed' };

/** How deep a span's ancestors are searched for the call it belongs to. */
const MAX_ANCESTORS = 64;

const keyOf = (traceId: string, spanId: string) => `${traceId}/${spanId}`;

/**
 * The server an MCP `initialize` span's answer names (`serverInfo.name`), as
 * OpenLLMetry records it under its client session span; null for any other span.
 */
function initializedServer(span: ReceivedSpan): string | null {
  if (span.scope !== TRACELOOP_MCP_SCOPE || span.name !== 'initialize.mcp') return null;
  const answer = asJson(span.attributes.get(Attr.tlEntityOutput));
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return null;
  const info = answer.serverInfo;
  if (typeof info !== 'object' || info === null || Array.isArray(info)) return null;
  return typeof info.name === 'string' && info.name !== '' ? info.name : null;
}

/** The span's `exception` events, and an error recorded as attributes (`error.message`, `error.data`) as some bridges do. */
function exceptionsOf(span: ReceivedSpan): SpanException[] {
  const events = span.events
    .filter((event) => event.name === 'exception')
    .map((event) => ({
      type: text(event.attributes, 'exception.type'),
      message: text(event.attributes, 'exception.message'),
    }));
  const message = text(span.attributes, 'error.message');
  if (message === null) return events;
  const data = text(span.attributes, 'error.data');
  return [...events, { type: null, message: data === null ? message : `${message}\n${data}` }];
}

/**
 * The spans of one request, read and indexed once, so that every lookup costs
 * what it finds: a request of 10,000 spans of one trace must not cost
 * 10,000 × 10,000 comparisons.
 */
class RequestSpans {
  readonly #readings = new Map<ReceivedSpan, Reading>();
  readonly #byId = new Map<string, ReceivedSpan>();
  /** Spans folded into the call or model span above them: not steps of their own. */
  readonly #foldedInto = new Map<ReceivedSpan, ReceivedSpan>();
  readonly #folded = new Map<ReceivedSpan, ReceivedSpan[]>();
  /** `notifications/cancelled` spans by the span they hang under, and by the JSON-RPC request id they name. */
  readonly #cancelledUnder = new Set<string>();
  readonly #cancelledByRequest = new Map<string, ReceivedSpan[]>();
  /** The agent spans of each trace, and the worst ending they say. */
  readonly #agents = new Map<string, ReceivedSpan[]>();
  readonly #agentsEnding = new Map<string, RunEnding>();
  /** Tool spans by trace and tool name, to find the call an MCP request recorded apart belongs to. */
  readonly #toolsByName = new Map<string, ReceivedSpan[]>();

  constructor(spans: readonly ReceivedSpan[]) {
    const add = <K>(map: Map<K, ReceivedSpan[]>, key: K, span: ReceivedSpan) => {
      const list = map.get(key);
      if (list) list.push(span);
      else map.set(key, [span]);
    };
    for (const span of spans) {
      this.#readings.set(span, readSpan(span));
      this.#byId.set(keyOf(span.traceId, span.spanId), span);
    }
    // A client session's server, as its `initialize` answer names it, for the MCP requests under the session.
    const sessionServers = new Map<string, string>();
    for (const span of spans) {
      const server = span.parentSpanId === null ? null : initializedServer(span);
      if (server !== null) sessionServers.set(keyOf(span.traceId, span.parentSpanId ?? ''), server);
    }
    for (const span of spans) {
      const reading = this.reading(span);
      if (reading.role === 'tool' && reading.toolName !== null)
        add(this.#toolsByName, keyOf(span.traceId, reading.toolName), span);
      const sessionServer =
        span.parentSpanId === null ? undefined : sessionServers.get(keyOf(span.traceId, span.parentSpanId));
      if (reading.role === 'mcp_call' && reading.server === null && sessionServer !== undefined)
        this.#readings.set(span, { ...reading, server: sessionServer });
    }
    for (const span of spans) {
      const reading = this.reading(span);
      if (reading.role === 'agent') add(this.#agents, span.traceId, span);
      if (reading.role === 'cancel_notice') {
        if (span.parentSpanId !== null) this.#cancelledUnder.add(keyOf(span.traceId, span.parentSpanId));
        const requestId = text(span.attributes, Attr.jsonRpcRequestId);
        if (requestId !== null) add(this.#cancelledByRequest, keyOf(span.traceId, requestId), span);
      }
      const host = this.#hostOf(span, reading);
      if (host) {
        this.#foldedInto.set(span, host);
        add(this.#folded, host, span);
      }
    }
  }

  has(traceId: string, spanId: string | null): boolean {
    return spanId !== null && this.#byId.has(keyOf(traceId, spanId));
  }

  reading(span: ReceivedSpan): Reading {
    const reading = this.#readings.get(span);
    if (!reading) throw new Error('a span read before it was indexed');
    return reading;
  }

  /**
   * The span this one is part of, if any: an MCP `tools/call` belongs to the
   * nearest tool span above it; a tool span to a tool span above it that names
   * the same tool or call id (two instrumentations of one call); a model span
   * to a model span above it (a framework's span around the provider's).
   */
  #hostOf(span: ReceivedSpan, reading: Reading): ReceivedSpan | null {
    if (reading.role !== 'tool' && reading.role !== 'mcp_call' && reading.role !== 'model') return null;
    const above = this.#ancestorHost(span, reading);
    if (above !== null || reading.role !== 'mcp_call' || reading.toolName === null) return above;
    // An MCP request recorded apart from its call (under its session span): the call of the same tool, in
    // the same trace, whose time holds the request's.
    return (
      (this.#toolsByName.get(keyOf(span.traceId, reading.toolName)) ?? []).find(
        (tool) =>
          tool !== span &&
          this.reading(tool).role === 'tool' &&
          tool.startUnixNano <= span.startUnixNano &&
          tool.endUnixNano >= span.endUnixNano,
      ) ?? null
    );
  }

  #ancestorHost(span: ReceivedSpan, reading: Reading): ReceivedSpan | null {
    let parentId = span.parentSpanId;
    for (let depth = 0; parentId !== null && depth < MAX_ANCESTORS; depth += 1) {
      const parent = this.#byId.get(keyOf(span.traceId, parentId));
      if (!parent) return null;
      const above = this.reading(parent);
      if (reading.role === 'model') {
        if (above.role === 'model') return this.#hostOf(parent, above) ?? parent;
        if (above.role === 'tool' || above.role === 'agent') return null;
      } else if (above.role === 'tool' || above.role === 'mcp_call') {
        const sameCall =
          reading.role === 'mcp_call' ||
          (reading.toolCallId !== null && reading.toolCallId === above.toolCallId) ||
          (reading.toolName !== null && reading.toolName === above.toolName);
        return sameCall ? (this.#hostOf(parent, above) ?? parent) : null;
      } else if (above.role === 'agent' || above.role === 'model') {
        return null;
      }
      parentId = parent.parentSpanId;
    }
    return null;
  }

  /** A span that is a step: a tool, MCP call or model span not folded into another. */
  isStep(span: ReceivedSpan): boolean {
    const role = this.reading(span).role;
    return (role === 'tool' || role === 'mcp_call' || role === 'model') && !this.#foldedInto.has(span);
  }

  /** The span and those folded into it. */
  callSpans(span: ReceivedSpan): ReceivedSpan[] {
    return [span, ...(this.#folded.get(span) ?? [])];
  }

  /**
   * An MCP `notifications/cancelled` for this call: an event of that name on
   * the call's spans, a notification span under one of them, or one in this
   * request naming a call span's JSON-RPC request id (in the same MCP session,
   * when both say one).
   */
  cancelNotified(calls: readonly ReceivedSpan[]): boolean {
    const eventSays = (s: ReceivedSpan) =>
      s.events.some(
        (e) =>
          e.name === CANCELLED_NOTIFICATION || text(e.attributes, Attr.mcpMethod) === CANCELLED_NOTIFICATION,
      );
    if (calls.some(eventSays)) return true;
    return calls.some((call) => {
      if (this.#cancelledUnder.has(keyOf(call.traceId, call.spanId))) return true;
      const requestId = text(call.attributes, Attr.jsonRpcRequestId);
      if (requestId === null) return false;
      const session = text(call.attributes, Attr.mcpSession);
      return (this.#cancelledByRequest.get(keyOf(call.traceId, requestId)) ?? []).some((notice) => {
        const noticeSession = text(notice.attributes, Attr.mcpSession);
        return session === null || noticeSession === null || session === noticeSession;
      });
    });
  }

  /** The worst ending the agent spans of a trace say, worked out once per trace. */
  agentsEnding(traceId: string): RunEnding {
    let ending = this.#agentsEnding.get(traceId);
    if (!ending) {
      ending = (this.#agents.get(traceId) ?? []).reduce<RunEnding>(
        (worst, agent) => worseEnding(worst, runEndingFromEvidence(endingEvidence(agent))),
        COMPLETED_ENDING,
      );
      this.#agentsEnding.set(traceId, ending);
    }
    return ending;
  }
}

/** The evidence of one call, from its span and every span folded into it. */
function callEvidence(span: ReceivedSpan, spans: RequestSpans): SpanEvidence {
  const calls = spans.callSpans(span);
  return {
    statedOutcome: text(span.attributes, Attr.statedOutcome),
    // A folded MCP call span's error.type (tool_error for an isError answer) speaks for the tool span when that is silent.
    errorType: calls.map((s) => text(s.attributes, Attr.errorType)).find((t) => t !== null) ?? null,
    status: calls.some((s) => s.status === 'error') ? 'error' : span.status,
    cancelNotified: spans.cancelNotified(calls),
    exceptions: calls.flatMap(exceptionsOf),
    resultIsError: calls.some((s) => resultIsError(spans.reading(s).result)),
  };
}

function endingEvidence(span: ReceivedSpan) {
  return {
    errorType: text(span.attributes, Attr.errorType),
    status: span.status,
    cancelNotified: false,
    exceptions: exceptionsOf(span),
  };
}

/** The first of the call's spans that says this. */
function firstOf<T>(
  calls: readonly ReceivedSpan[],
  spans: RequestSpans,
  pick: (r: Reading) => T | null | undefined,
) {
  for (const call of calls) {
    const value = pick(spans.reading(call));
    if (value !== null && value !== undefined) return value;
  }
  return null;
}

function toolStep(span: ReceivedSpan, spans: RequestSpans): SpanStep {
  const calls = spans.callSpans(span);
  const evidence = callEvidence(span, spans);
  const outcome = toolOutcomeFromEvidence(evidence);
  const result = firstOf(calls, spans, (r) => r.result);
  const reason = outcome === ToolOutcome.Ok ? null : failureReasonFromEvidence(evidence, span.statusMessage);
  return {
    type: 'tool',
    call: {
      round: integer(span.attributes, Attr.round) ?? 0,
      durationMs: durationMs(span),
      occurredAt: nanosToDate(span.endUnixNano),
      toolName: firstOf(calls, spans, (r) => r.toolName) ?? span.name,
      server: firstOf(calls, spans, (r) => r.server),
      arguments: asJson(firstOf(calls, spans, (r) => r.arguments) ?? undefined),
    },
    result: {
      // What the call answered; a call that answered nothing keeps why it failed or was cut off (private, as content is).
      content: asText(result ?? undefined) || (reason ?? ''),
      outcome,
      failureCode: outcome === ToolOutcome.Failed ? failureCodeFromEvidence(evidence) : null,
    },
  };
}

function modelStep(span: ReceivedSpan, spans: RequestSpans): SpanStep {
  const reading = spans.reading(span);
  return {
    type: 'plain',
    step: {
      kind: 'llm',
      round: integer(span.attributes, Attr.round) ?? 0,
      durationMs: durationMs(span),
      occurredAt: nanosToDate(span.endUnixNano),
      payload: { operation: text(span.attributes, Attr.operation) ?? reading.convention },
      model: {
        model: reading.model,
        promptTokens: reading.inputTokens,
        completionTokens: reading.outputTokens,
        finishReason: reading.finishReason,
      },
    },
  };
}

/**
 * How a root span ends its run: by its own evidence, or worse when an agent
 * span of the same trace in this request ended worse (a root that is an HTTP
 * or job span around the agent).
 */
function rootEnding(root: ReceivedSpan, spans: RequestSpans): RunEnding {
  return worseEnding(runEndingFromEvidence(endingEvidence(root)), spans.agentsEnding(root.traceId));
}

/** Every span of a request as the ledger takes it: a step, a run's end, or neither. */
export function mapSpans(received: readonly ReceivedSpan[]): IngestedSpan[] {
  const spans = new RequestSpans(received);
  return received.map((span): IngestedSpan => {
    const reading = spans.reading(span);
    const base = {
      traceId: span.traceId,
      spanId: span.spanId,
      startUnixNano: span.startUnixNano,
      endUnixNano: span.endUnixNano,
      endedAt: nanosToDate(span.endUnixNano),
      conversationId: reading.conversationId,
      configuration: {
        stated: text(span.attributes, Attr.configuration) ?? text(span.resource, Attr.configuration),
        agentName: reading.agentName,
        serviceName: text(span.resource, Attr.serviceName),
      },
      step: null,
      ending: null,
      refusal: null,
      parentSpanId: span.parentSpanId,
      parentInRequest: spans.has(span.traceId, span.parentSpanId),
      callRole: reading.role === 'tool' || reading.role === 'mcp_call' ? reading.role : null,
    };
    if (span.problem)
      return { ...base, refusal: { code: 'SPAN_INVALID', message: `SPAN_INVALID: ${span.problem}` } };
    try {
      const step = !spans.isStep(span)
        ? null
        : reading.role === 'model'
          ? modelStep(span, spans)
          : toolStep(span, spans);
      return { ...base, step, ending: span.parentSpanId === null ? rootEnding(span, spans) : null };
    } catch (error) {
      return { ...base, refusal: refusalOf(error) };
    }
  });
}
