import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { SCENARIOS, type Scenario, startFakeModel } from './fake-model.ts';
import { type AgentLibrary, runScenarios, ScenarioExporter, targetsFromEnv } from './harness.ts';

/**
 * Runs one library's agent through every scenario, in its own process (each
 * library's tracing is global): `node --import tsx test/support/agents/run.ts
 * <library>`, with RUNLEDGER_TARGETS naming where each scenario's spans go.
 * Every scenario's spans leave through the real OTLP/HTTP JSON exporter.
 */
export const LIBRARIES: Record<string, () => Promise<AgentLibrary>> = {
  'ai-sdk-6': async () => (await import('./ai-sdk-6.ts')).aiSdk6,
  openinference: async () => (await import('./openinference.ts')).openinference,
  traceloop: async () => (await import('./traceloop.ts')).traceloopAgent,
  'traceloop-langgraph': async () => (await import('./traceloop-langgraph.ts')).traceloopLangGraph,
  'otel-genai': async () => (await import('./otel-genai.ts')).otelGenai,
};

const name = process.argv[2] ?? '';
const load = LIBRARIES[name];
if (!load) throw new Error(`unknown library ${name}: one of ${Object.keys(LIBRARIES).join(', ')}`);
const only = process.argv
  .slice(3)
  .filter((argument): argument is Scenario => (SCENARIOS as readonly string[]).includes(argument));
const targets = targetsFromEnv();
const exporters = Object.fromEntries(
  SCENARIOS.map((scenario) => [scenario, new OTLPTraceExporter(targets[scenario])]),
) as Record<Scenario, OTLPTraceExporter>;
const model = await startFakeModel();
try {
  await runScenarios(
    await load(),
    model,
    new ScenarioExporter(exporters),
    only.length > 0 ? only : SCENARIOS,
  );
} finally {
  await model.close();
}
// MCP child processes and instrumentations may keep handles open: the runner is done.
process.exit(0);
