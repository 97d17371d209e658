import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { tool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { ChatOpenAI } from '@langchain/openai';
import type { SpanExporter } from '@opentelemetry/sdk-trace-node';
import * as traceloop from '@traceloop/node-server-sdk';
import { z } from 'zod';
import { MODEL } from './fake-model.ts';
import { type AgentLibrary, EVERYTHING_STDIO, LOOKUP_ORDER, lookupOrder, promptFor } from './harness.ts';

/**
 * The LangGraph ReAct agent of the OpenInference case, traced by OpenLLMetry
 * instead: its LangChain instrumentation (always on; handed the callback
 * manager module, as under ES modules it must be) and nothing else, no
 * `withWorkflow` around the invocation, as its LangChain guide shows.
 */
export const traceloopLangGraph: AgentLibrary = {
  async setup(exporter: SpanExporter) {
    traceloop.initialize({
      appName: 'support-agent',
      exporter,
      disableBatch: true,
      silenceInitializationMessage: true,
      traceloopSyncEnabled: false,
      instrumentModules: { langchain: true },
    });
    // What instrumentModules.langchain does not do under ES modules: patch the module this process loaded.
    const { LangChainInstrumentation } = await import('@traceloop/instrumentation-langchain');
    new LangChainInstrumentation().manuallyInstrument({ callbackManagerModule: CallbackManagerModule });
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
        llm: new ChatOpenAI({ model: MODEL, apiKey: 'sk-fake', configuration: { baseURL: model.baseURL } }),
        tools: [...(await mcp.getTools()), lookup],
        name: 'support-agent',
      });
      const state = await traceloop.withWorkflow({ name: 'support-agent' }, () =>
        agent.invoke({ messages: [{ role: 'user', content: promptFor(scenario) }] }, { signal }),
      );
      const last = state.messages.at(-1);
      return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content);
    } finally {
      await mcp.close();
    }
  },

  async flush() {
    await traceloop.forceFlush();
  },

  async shutdown() {
    await traceloop.forceFlush();
  },
};
