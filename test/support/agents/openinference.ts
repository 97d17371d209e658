import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import { MCPInstrumentation } from '@arizeai/openinference-instrumentation-mcp';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { tool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { ChatOpenAI } from '@langchain/openai';
import * as ClientStdioModule from '@modelcontextprotocol/sdk/client/stdio.js';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { z } from 'zod';
import { MODEL } from './fake-model.ts';
import { type AgentLibrary, EVERYTHING_STDIO, LOOKUP_ORDER, lookupOrder, promptFor } from './harness.ts';

/**
 * A LangGraph ReAct agent (`createReactAgent`, `ChatOpenAI`, the tools of
 * server-everything through `@langchain/mcp-adapters` and one tool of its own)
 * traced by OpenInference: its LangChain and MCP instrumentations, applied by
 * hand as OpenInference says to under ES modules. Not its OpenAI
 * instrumentation too: its spans would repeat the LangChain LLM spans, each
 * as a trace of its own (LangChain's callbacks set no active OTel context).
 */
let provider: NodeTracerProvider | undefined;

export const openinference: AgentLibrary = {
  async setup(exporter: SpanExporter) {
    provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'support-agent' }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    provider.register();
    // Both trace on the global provider registered above.
    new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);
    new MCPInstrumentation().manuallyInstrument({ clientStdioModule: ClientStdioModule });
  },

  async invoke(scenario, model, signal) {
    const mcp = new MultiServerMCPClient({
      mcpServers: { everything: { transport: 'stdio', ...EVERYTHING_STDIO } },
    });
    try {
      const lookup = tool(async ({ orderId }) => lookupOrder(orderId), {
        name: LOOKUP_ORDER.name,
        description: LOOKUP_ORDER.description,
        schema: z.object({ orderId: z.string() }),
      });
      const agent = createReactAgent({
        llm: new ChatOpenAI({
          model: MODEL,
          apiKey: 'sk-fake',
          configuration: { baseURL: model.baseURL },
          // Not streaming: LangChain then counts tokens itself with tiktoken, which downloads its encodings.
        }),
        tools: [...(await mcp.getTools()), lookup],
        name: 'support-agent',
      });
      const state = await agent.invoke(
        { messages: [{ role: 'user', content: promptFor(scenario) }] },
        { signal, metadata: { session_id: `session-${scenario}` } },
      );
      const last = state.messages.at(-1);
      return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content);
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
