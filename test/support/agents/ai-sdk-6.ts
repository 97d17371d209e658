import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { createOpenAI } from '@ai-sdk/openai';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { generateText, stepCountIs, streamText, type ToolSet, tool } from 'ai';
import { z } from 'zod';
import { MODEL } from './fake-model.ts';
import { type AgentLibrary, EVERYTHING_STDIO, LOOKUP_ORDER, lookupOrder, promptFor } from './harness.ts';

/**
 * The Vercel AI SDK 6 agent: `generateText` (and `streamText` for the run
 * cancelled mid-answer) with the tools of server-everything through
 * `@ai-sdk/mcp` and one tool of its own, traced by `experimental_telemetry`
 * on the globally registered tracer provider, as the AI SDK's docs set it up.
 */
let provider: NodeTracerProvider | undefined;

export const aiSdk6: AgentLibrary = {
  async setup(exporter: SpanExporter) {
    provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'support-agent' }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    provider.register();
  },

  async invoke(scenario, model, signal) {
    const openai = createOpenAI({ baseURL: model.baseURL, apiKey: 'sk-fake' });
    const mcp = await createMCPClient({ transport: new Experimental_StdioMCPTransport(EVERYTHING_STDIO) });
    try {
      // @ai-sdk/mcp 1.0.102 types its tools with its own copy of @ai-sdk/provider-utils (4.0.65, ai's is 4.0.67).
      const mcpTools = (await mcp.tools()) as unknown as ToolSet;
      const tools: ToolSet = {
        ...mcpTools,
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
        experimental_telemetry: {
          isEnabled: true,
          functionId: 'support-agent',
          metadata: { scenario },
        },
      };
      if (scenario === 'cancel-run') {
        const result = streamText(settings);
        let text = '';
        for await (const part of result.textStream) text += part;
        return text;
      }
      const result = await generateText(settings);
      return result.text;
    } finally {
      await mcp.close();
    }
  },

  async flush() {
    await provider?.forceFlush();
  },

  async shutdown() {
    await provider?.shutdown();
  },
};
