import {
  type RunEnding,
  runEndingFromEvidence,
  type SpanEvidence,
  STATED_OUTCOME_ATTRIBUTE,
  toolOutcomeFromEvidence,
  worseEnding,
} from '../domain/span-evidence.ts';
import type { JsonValue } from '../domain/tool-result.ts';
import { type IngestedSpan, refusalOf, type SpanStep } from '../ledger/ingest-spans.ts';
import type { Attributes, AttributeValue, ReceivedSpan } from './decode.ts';

/**
 * GenAI and MCP semantic conventions onto runs and steps (README: "Ingestion
 * from OpenTelemetry" has the table). Attribute names are OpenTelemetry's
 * (semantic conventions 1.45 / GenAI), plus the few `runledger.*` ones a sender
 * may add to say what the conventions cannot.
 */
export const Attr = {
  operation: 'gen_ai.operation.name',
  conversationId: 'gen_ai.conversation.id',
  agentName: 'gen_ai.agent.name',
  toolName: 'gen_ai.tool.name',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  errorType: 'error.type',
  serverAddress: 'server.address',
  mcpMethod: 'mcp.method.name',
  mcpSession: 'mcp.session.id',
  mcpServerName: 'mcp.server.name',
  jsonRpcRequestId: 'jsonrpc.request.id',
  serviceName: 'service.name',
  statedOutcome: STATED_OUTCOME_ATTRIBUTE,
  configuration: 'runledger.configuration',
  server: 'runledger.server',
  round: 'runledger.round',
} as const;

/** Operations that are a model call: an `llm` step. */
const MODEL_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content']);
const CANCELLED_NOTIFICATION = 'notifications/cancelled';

function text(attributes: Attributes, name: string): string | null {
  const value = attributes.get(name);
  if (typeof value === 'string') return value.length > 0 ? value : null;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return null;
}

function integer(attributes: Attributes, name: string): number | null {
  const value = attributes.get(name);
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : null;
}

function asJson(value: AttributeValue | undefined): JsonValue | null {
  if (value === undefined) return null;
  // Arguments are sent as a JSON string by the conventions: stored as the JSON they hold when they hold JSON.
  if (typeof value === 'string') {
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

const nanosToDate = (nanos: bigint) => new Date(Number(nanos / 1_000_000n));
const durationMs = (span: ReceivedSpan) =>
  Number((span.endUnixNano - span.startUnixNano + 500_000n) / 1_000_000n);

/** The spans of a request by id, and their children, to read MCP facts recorded one level down. */
/** What no evidence says: the neutral start of `worseEnding`. */
const COMPLETED_ENDING: RunEnding = { status: 'completed', reason: 'completed' };

class RequestSpans {
  readonly #children = new Map<string, ReceivedSpan[]>();
  /** `notifications/cancelled` spans by the span they hang under, and by the JSON-RPC request id they name. */
  readonly #cancelledUnder = new Set<string>();
  readonly #cancelledByRequest = new Map<string, ReceivedSpan[]>();
  /** The `invoke_agent` spans of each trace. */
  readonly #agents = new Map<string, ReceivedSpan[]>();
  readonly #agentsEnding = new Map<string, RunEnding>();

  // Indexed once, so that every lookup below costs what it finds: a request of 10,000 spans of one trace
  // must not cost 10,000 × 10,000 comparisons.
  constructor(spans: readonly ReceivedSpan[]) {
    const add = (map: Map<string, ReceivedSpan[]>, key: string, span: ReceivedSpan) => {
      const list = map.get(key);
      if (list) list.push(span);
      else map.set(key, [span]);
    };
    for (const span of spans) {
      if (span.parentSpanId !== null) add(this.#children, `${span.traceId}/${span.parentSpanId}`, span);
      if (text(span.attributes, Attr.operation) === 'invoke_agent') add(this.#agents, span.traceId, span);
      if (text(span.attributes, Attr.mcpMethod) !== CANCELLED_NOTIFICATION) continue;
      if (span.parentSpanId !== null) this.#cancelledUnder.add(`${span.traceId}/${span.parentSpanId}`);
      const requestId = text(span.attributes, Attr.jsonRpcRequestId);
      if (requestId !== null) add(this.#cancelledByRequest, `${span.traceId}/${requestId}`, span);
    }
  }

  /** The worst ending the `invoke_agent` spans of a trace say, worked out once per trace. */
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

  children(span: ReceivedSpan): ReceivedSpan[] {
    return this.#children.get(`${span.traceId}/${span.spanId}`) ?? [];
  }

  /** The MCP `tools/call` client span under a tool span, where the MCP instrumentation puts server and request id. */
  mcpCall(span: ReceivedSpan): ReceivedSpan | null {
    return this.children(span).find((c) => text(c.attributes, Attr.mcpMethod) === 'tools/call') ?? null;
  }

  /**
   * An MCP `notifications/cancelled` for this call: an event of that name on the
   * span (or on its MCP call span), a notification span under either, or a
   * notification span in this request naming the call's JSON-RPC request id
   * (in the same MCP session, when both say one).
   */
  cancelNotified(span: ReceivedSpan): boolean {
    const calls = [span, this.mcpCall(span)].filter((s): s is ReceivedSpan => s !== null);
    const eventSays = (s: ReceivedSpan) =>
      s.events.some(
        (e) =>
          e.name === CANCELLED_NOTIFICATION || text(e.attributes, Attr.mcpMethod) === CANCELLED_NOTIFICATION,
      );
    if (calls.some(eventSays)) return true;
    return calls.some((call) => {
      if (this.#cancelledUnder.has(`${call.traceId}/${call.spanId}`)) return true;
      const requestId = text(call.attributes, Attr.jsonRpcRequestId);
      if (requestId === null) return false;
      const session = text(call.attributes, Attr.mcpSession);
      return (this.#cancelledByRequest.get(`${call.traceId}/${requestId}`) ?? []).some((notice) => {
        const noticeSession = text(notice.attributes, Attr.mcpSession);
        return session === null || noticeSession === null || session === noticeSession;
      });
    });
  }
}

function evidenceOf(span: ReceivedSpan, spans: RequestSpans): SpanEvidence {
  const call = spans.mcpCall(span);
  return {
    statedOutcome: text(span.attributes, Attr.statedOutcome),
    // The MCP call span's error.type (tool_error for an isError answer) speaks for the tool span when that is silent.
    errorType: text(span.attributes, Attr.errorType) ?? (call ? text(call.attributes, Attr.errorType) : null),
    status: span.status === 'error' || call?.status === 'error' ? 'error' : span.status,
    cancelNotified: spans.cancelNotified(span),
  };
}

function serverOf(span: ReceivedSpan, spans: RequestSpans): string | null {
  const call = spans.mcpCall(span);
  for (const source of [span, call]) {
    if (!source) continue;
    const named =
      text(source.attributes, Attr.server) ??
      text(source.attributes, Attr.mcpServerName) ??
      text(source.attributes, Attr.serverAddress);
    if (named) return named;
  }
  return null;
}

function toolStep(span: ReceivedSpan, spans: RequestSpans): SpanStep {
  const name = text(span.attributes, Attr.toolName) ?? span.name.replace(/^execute_tool\s+/, '');
  return {
    type: 'tool',
    call: {
      round: integer(span.attributes, Attr.round) ?? 0,
      durationMs: durationMs(span),
      occurredAt: nanosToDate(span.endUnixNano),
      toolName: name,
      server: serverOf(span, spans),
      arguments: asJson(span.attributes.get(Attr.toolArguments)),
    },
    result: {
      content: asText(span.attributes.get(Attr.toolResult)),
      outcome: toolOutcomeFromEvidence(evidenceOf(span, spans)),
    },
  };
}

function modelStep(span: ReceivedSpan): SpanStep {
  const reasons = span.attributes.get(Attr.finishReasons);
  const finishReason = Array.isArray(reasons) ? reasons.find((r) => typeof r === 'string') : reasons;
  return {
    type: 'plain',
    step: {
      kind: 'llm',
      round: integer(span.attributes, Attr.round) ?? 0,
      durationMs: durationMs(span),
      occurredAt: nanosToDate(span.endUnixNano),
      payload: { operation: text(span.attributes, Attr.operation) },
      model: {
        model: text(span.attributes, Attr.responseModel) ?? text(span.attributes, Attr.requestModel),
        promptTokens: integer(span.attributes, Attr.inputTokens),
        completionTokens: integer(span.attributes, Attr.outputTokens),
        finishReason: typeof finishReason === 'string' && finishReason.length > 0 ? finishReason : null,
      },
    },
  };
}

function endingEvidence(span: ReceivedSpan) {
  return { errorType: text(span.attributes, Attr.errorType), status: span.status, cancelNotified: false };
}

/**
 * How a root span ends its run: by its own evidence, or worse when an
 * `invoke_agent` span of the same trace in this request ended worse (a root
 * that is an HTTP or job span around the agent).
 */
function rootEnding(root: ReceivedSpan, spans: RequestSpans): RunEnding {
  return worseEnding(runEndingFromEvidence(endingEvidence(root)), spans.agentsEnding(root.traceId));
}

/** Every span of a request as the ledger takes it: a step, a run's end, or neither. */
export function mapSpans(received: readonly ReceivedSpan[]): IngestedSpan[] {
  const spans = new RequestSpans(received);
  return received.map((span): IngestedSpan => {
    const base = {
      traceId: span.traceId,
      spanId: span.spanId,
      startUnixNano: span.startUnixNano,
      endedAt: nanosToDate(span.endUnixNano),
      conversationId: text(span.attributes, Attr.conversationId),
      configuration: {
        stated: text(span.attributes, Attr.configuration) ?? text(span.resource, Attr.configuration),
        agentName: text(span.attributes, Attr.agentName),
        serviceName: text(span.resource, Attr.serviceName),
      },
      step: null,
      ending: null,
      refusal: null,
    };
    if (span.problem)
      return { ...base, refusal: { code: 'SPAN_INVALID', message: `SPAN_INVALID: ${span.problem}` } };
    try {
      const operation = text(span.attributes, Attr.operation);
      const step =
        operation === 'execute_tool'
          ? toolStep(span, spans)
          : operation !== null && MODEL_OPERATIONS.has(operation)
            ? modelStep(span)
            : null;
      return { ...base, step, ending: span.parentSpanId === null ? rootEnding(span, spans) : null };
    } catch (error) {
      return { ...base, refusal: refusalOf(error) };
    }
  });
}
