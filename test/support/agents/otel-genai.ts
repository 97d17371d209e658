import { createRequire } from 'node:module';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { OpenAIInstrumentation } from '@opentelemetry/instrumentation-openai';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import type OpenAIModule from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { MODEL } from './fake-model.ts';
import { type AgentLibrary, EVERYTHING_STDIO, LOOKUP_ORDER, lookupOrder, promptFor } from './harness.ts';

/**
 * An agent written to the OpenTelemetry GenAI and MCP conventions: the model
 * calls traced by `@opentelemetry/instrumentation-openai` (`chat` spans), the
 * agent's own `invoke_agent` and `execute_tool` spans, and for an MCP tool a
 * `tools/call` client span below its `execute_tool` span (which, as the MCP
 * conventions say, carries `gen_ai.operation.name` = `execute_tool` too), and a
 * `notifications/cancelled` span below that when the client cancels the call.
 */
let provider: NodeTracerProvider | undefined;
let OpenAI: typeof OpenAIModule | undefined;
const tracer = () => trace.getTracer('support-agent', '1.0.0');

/** The error.type of the conventions: the exception's type name. */
function recordError(span: Span, error: unknown): void {
  const thrown = error instanceof Error ? error : new Error(String(error));
  span.recordException(thrown);
  span.setAttribute('error.type', thrown.name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: thrown.message });
}

export const otelGenai: AgentLibrary = {
  async setup(exporter: SpanExporter) {
    provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'support-agent' }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    provider.register();
    registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()] });
    // The instrumentation patches `openai` as it is required: loaded after it, as CommonJS.
    OpenAI = (createRequire(import.meta.url)('openai') as { OpenAI: typeof OpenAIModule }).OpenAI;
  },

  async invoke(scenario, model, signal) {
    if (!OpenAI) throw new Error('setup first');
    const openai = new OpenAI({ baseURL: model.baseURL, apiKey: 'sk-fake' });
    const transport = new StdioClientTransport(EVERYTHING_STDIO);
    // The JSON-RPC ids of tools/call requests, and the cancellations sent, as they leave.
    const sent: JSONRPCMessage[] = [];
    const send = transport.send.bind(transport);
    transport.send = async (message: JSONRPCMessage) => {
      sent.push(message);
      return send(message);
    };
    const mcp = new Client({ name: 'support-agent', version: '1.0.0' });
    return tracer().startActiveSpan(
      'invoke_agent support-agent',
      {
        kind: SpanKind.INTERNAL,
        attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'support-agent' },
      },
      async (agentSpan) => {
        try {
          await mcp.connect(transport);
          const listed = (await mcp.listTools()).tools;
          const tools: ChatCompletionTool[] = [
            ...listed.map((tool) => ({
              type: 'function' as const,
              function: {
                name: tool.name,
                description: tool.description ?? '',
                parameters: tool.inputSchema,
              },
            })),
            {
              type: 'function' as const,
              function: {
                name: LOOKUP_ORDER.name,
                description: LOOKUP_ORDER.description,
                parameters: {
                  type: 'object',
                  properties: { orderId: { type: 'string' } },
                  required: ['orderId'],
                },
              },
            },
          ];
          const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: promptFor(scenario) }];
          for (let round = 0; round < 3; round += 1) {
            const completion = await openai.chat.completions.create(
              { model: MODEL, messages, tools, stream: false },
              { signal },
            );
            const message = completion.choices[0]?.message;
            if (!message) throw new Error('no choice');
            messages.push(message);
            const calls = message.tool_calls ?? [];
            if (calls.length === 0) return message.content ?? '';
            for (const call of calls) {
              if (call.type !== 'function') continue;
              const name = call.function.name;
              const result = await tracer().startActiveSpan(
                `execute_tool ${name}`,
                {
                  attributes: {
                    'gen_ai.operation.name': 'execute_tool',
                    'gen_ai.tool.name': name,
                    'gen_ai.tool.call.id': call.id,
                    'gen_ai.tool.type': 'function',
                    'gen_ai.tool.call.arguments': call.function.arguments,
                  },
                },
                async (toolSpan) => {
                  try {
                    const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
                    const text =
                      name === LOOKUP_ORDER.name
                        ? await lookupOrder(String(args.orderId))
                        : await callMcpTool(mcp, sent, name, args, signal, toolSpan);
                    toolSpan.setAttribute('gen_ai.tool.call.result', text);
                    return text;
                  } catch (error) {
                    recordError(toolSpan, error);
                    // A tool that throws is told to the model; an abort ends the run.
                    if (signal.aborted) throw error;
                    return `error: ${error instanceof Error ? error.message : String(error)}`;
                  } finally {
                    toolSpan.end();
                  }
                },
              );
              messages.push({ role: 'tool', tool_call_id: call.id, content: result });
            }
          }
          return '';
        } catch (error) {
          recordError(agentSpan, error);
          throw error;
        } finally {
          agentSpan.end();
          await mcp.close();
        }
      },
    );
  },

  async flush() {
    await provider?.forceFlush();
  },

  async shutdown() {
    await provider?.shutdown();
  },
};

/** One MCP tools/call, with the client span the MCP conventions describe. */
async function callMcpTool(
  mcp: Client,
  sent: JSONRPCMessage[],
  name: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
  toolSpan: Span,
): Promise<string> {
  const parent = trace.setSpan(context.active(), toolSpan);
  const span = tracer().startSpan(
    `tools/call ${name}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': name,
        'mcp.protocol.version': mcp.getServerVersion() ? '2025-06-18' : '',
        'network.transport': 'pipe',
        'mcp.server.name': mcp.getServerVersion()?.name ?? '',
      },
    },
    parent,
  );
  const before = sent.length;
  const requestId = () => {
    const request = sent
      .slice(before)
      .find((message) => 'method' in message && message.method === 'tools/call' && 'id' in message);
    return request && 'id' in request ? String(request.id) : undefined;
  };
  const onAbort = () => {
    // The cancellation the SDK sends for the call, as its own span under the call's.
    const id = requestId();
    const cancel = tracer().startSpan(
      'notifications/cancelled',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'mcp.method.name': 'notifications/cancelled',
          ...(id ? { 'jsonrpc.request.id': id } : {}),
        },
      },
      trace.setSpan(parent, span),
    );
    cancel.end();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await mcp.callTool({ name, arguments: args }, undefined, { signal });
    const id = requestId();
    if (id) span.setAttribute('jsonrpc.request.id', id);
    const text = (result.content as Array<{ type: string; text?: string }>)
      .map((part) => part.text ?? '')
      .join('\n');
    if (result.isError) {
      span.setAttribute('error.type', 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: text });
      toolSpan.setAttribute('error.type', 'tool_error');
      toolSpan.setStatus({ code: SpanStatusCode.ERROR, message: text });
    }
    return text;
  } catch (error) {
    const id = requestId();
    if (id) span.setAttribute('jsonrpc.request.id', id);
    recordError(span, error);
    throw error;
  } finally {
    signal.removeEventListener('abort', onAbort);
    span.end();
  }
}
