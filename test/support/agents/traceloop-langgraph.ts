import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import type { SpanExporter } from '@opentelemetry/sdk-trace-node';
import * as traceloop from '@traceloop/node-server-sdk';
import type { AgentLibrary } from './harness.ts';
import { invokeReactAgent } from './langgraph.ts';

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

  invoke(scenario, model, signal) {
    return invokeReactAgent(scenario, model, (agent, input) =>
      // The workflow is the invocation's trace: without it, each LangChain span is a trace of its own.
      traceloop.withWorkflow({ name: 'support-agent' }, () => agent.invoke(input, { signal })),
    );
  },

  async flush() {
    await traceloop.forceFlush();
  },

  async shutdown() {
    await traceloop.forceFlush();
  },
};
