import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_ERROR_TYPE, ATTR_SERVER_ADDRESS, ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
} from '@opentelemetry/semantic-conventions/incubating';

/**
 * An agent instrumented the way the OpenTelemetry GenAI conventions say, with
 * the real SDK: spans are collected in memory, then sent by the real OTLP
 * exporters (protobuf and JSON) to a runledger at some URL.
 */

/** A tool function that honours an AbortSignal, as an agent's tools do. */
function slowTool(signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve('done'), 60_000);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

async function toolSpan(
  tracer: Tracer,
  parent: Context,
  name: string,
  attributes: Attributes,
  work: (span: ReturnType<Tracer['startSpan']>) => Promise<void>,
): Promise<void> {
  const span = tracer.startSpan(
    `${GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${name}`,
    {
      attributes: {
        [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
        [ATTR_GEN_AI_TOOL_NAME]: name,
        ...attributes,
      },
    },
    parent,
  );
  try {
    await work(span);
  } finally {
    span.end();
  }
}

export interface AgentTrace {
  spans: ReadableSpan[];
  traceId: string;
}

/**
 * One agent run: an invoke_agent root, a chat span, and four tool calls that
 * end ok, with tool_error (an isError answer), with a thrown exception
 * (recordException + ERROR), and cancelled through an AbortSignal.
 */
export async function agentTrace(
  configuration: string,
  extra?: (tracer: Tracer, parent: Context) => Promise<void>,
): Promise<AgentTrace> {
  const memory = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    // The service's name differs from the agent's: a run takes the agent's name when its span is at hand.
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: `${configuration}-service` }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('runledger-test-agent', '1.0.0');
  // Parents are passed explicitly: no global context manager is registered by a test.
  const root = tracer.startSpan(`${GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT} ${configuration}`, {
    attributes: {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
      [ATTR_GEN_AI_AGENT_NAME]: configuration,
    },
  });
  const traceId = root.spanContext().traceId;
  const parent = trace.setSpan(ROOT_CONTEXT, root);
  const chat = tracer.startSpan(
    `${GEN_AI_OPERATION_NAME_VALUE_CHAT} gpt-test`,
    {
      attributes: {
        [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
        [ATTR_GEN_AI_REQUEST_MODEL]: 'gpt-test',
        [ATTR_GEN_AI_RESPONSE_MODEL]: 'gpt-test-2026-01',
        [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: 1200,
        [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 80,
        [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['tool_calls'],
      },
    },
    parent,
  );
  await new Promise((resolve) => setTimeout(resolve, 2));
  chat.end();

  await toolSpan(
    tracer,
    parent,
    'search_docs',
    {
      [ATTR_SERVER_ADDRESS]: 'docs.example.com',
      [ATTR_GEN_AI_TOOL_CALL_ARGUMENTS]: JSON.stringify({ q: 'refund policy' }),
      [ATTR_GEN_AI_TOOL_CALL_RESULT]: 'Refunds within 30 days.',
    },
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 2));
    },
  );
  await toolSpan(
    tracer,
    parent,
    'create_ticket',
    { [ATTR_SERVER_ADDRESS]: 'tickets.example.com' },
    async (span) => {
      // An MCP answer with isError: true, as the MCP conventions record it.
      span.setAttribute(ATTR_ERROR_TYPE, 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'ticket queue is closed' });
    },
  );
  await toolSpan(
    tracer,
    parent,
    'read_file',
    { [ATTR_SERVER_ADDRESS]: 'files.example.com' },
    async (span) => {
      try {
        throw new TypeError('path must be a string');
      } catch (error) {
        const thrown = error as Error;
        span.recordException(thrown);
        span.setAttribute(ATTR_ERROR_TYPE, thrown.name);
        span.setStatus({ code: SpanStatusCode.ERROR, message: thrown.message });
      }
    },
  );
  await toolSpan(
    tracer,
    parent,
    'long_report',
    { [ATTR_SERVER_ADDRESS]: 'reports.example.com' },
    async (span) => {
      const controller = new AbortController();
      const call = slowTool(controller.signal);
      setTimeout(() => controller.abort(), 5);
      try {
        await call;
      } catch (error) {
        // What an agent's tool wrapper records: the DOMException's name, AbortError.
        const aborted = error as Error;
        span.recordException(aborted);
        span.setAttribute(ATTR_ERROR_TYPE, aborted.name);
        span.setStatus({ code: SpanStatusCode.ERROR, message: aborted.message });
      }
    },
  );
  await extra?.(tracer, parent);
  root.end();
  await provider.forceFlush();
  const spans = memory.getFinishedSpans();
  await provider.shutdown();
  return { spans, traceId };
}

export type ExporterKind = 'protobuf' | 'json';

/** What an exporter reports: code 0 is success, 1 failure. */
export interface ExportResult {
  code: number;
  error?: Error;
}

/** Sends spans with the real exporter, once; the SDK's own result (code 0: success). */
export async function exportSpans(
  kind: ExporterKind,
  spans: ReadableSpan[],
  options: { url?: string; headers?: Record<string, string> } = {},
): Promise<ExportResult> {
  const exporter = kind === 'protobuf' ? new ProtoExporter(options) : new JsonExporter(options);
  try {
    return await new Promise<ExportResult>((resolve) => exporter.export(spans, resolve));
  } finally {
    await exporter.shutdown();
  }
}

/** The tracer API, for tests that add their own spans. */
export { SpanStatusCode, trace };
