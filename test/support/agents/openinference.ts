import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import { MCPInstrumentation } from '@arizeai/openinference-instrumentation-mcp';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import * as ClientStdioModule from '@modelcontextprotocol/sdk/client/stdio.js';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { AgentLibrary } from './harness.ts';
import { invokeReactAgent } from './langgraph.ts';

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

  invoke(scenario, model, signal) {
    return invokeReactAgent(scenario, model, (agent, input) =>
      agent.invoke(input, { signal, metadata: { session_id: `session-${scenario}` } }),
    );
  },

  async flush() {
    await provider?.forceFlush();
  },

  async shutdown() {
    await provider?.shutdown();
  },
};
