import { fileURLToPath } from 'node:url';
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { FakeModel, Scenario } from './fake-model.ts';

// Erasable TypeScript only (type imports vanish): the Node 22 capture runner imports this file too.

/** `@modelcontextprotocol/server-everything` over stdio, as every agent here starts it. */
export const EVERYTHING_STDIO = {
  command: process.execPath,
  args: [
    fileURLToPath(
      new URL('../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
    ),
    'stdio',
  ],
};

/** What the agent is asked: the fake model reads the scenario from it. */
export const promptFor = (scenario: Scenario): string => `scenario:${scenario} Please use your tool.`;

export const LOOKUP_ORDER = {
  name: 'lookup_order',
  description: 'Looks an order up by its id.',
};

/** The agent's own tool of the `thrown` scenario: its function throws, as a broken tool does. */
export async function lookupOrder(_orderId: string): Promise<string> {
  throw new Error('order service unavailable');
}

/**
 * The AbortController of one invocation, aborted at the scenario's moment:
 * cancel-call while trigger-long-running-operation runs (0.6 s into its 5 s),
 * cancel-run while the model writes its last answer (the tool call is done).
 */
export function abortPlan(model: FakeModel, scenario: Scenario): AbortController {
  const controller = new AbortController();
  model.onAnswered = (call) => {
    if (call.scenario !== scenario) return;
    if (scenario === 'cancel-call' && call.turn === 0) setTimeout(() => controller.abort(), 600);
    if (scenario === 'cancel-run' && call.turn === 1) setTimeout(() => controller.abort(), 200);
  };
  return controller;
}

/** Where one scenario's spans go: runledger's /v1/traces with a key, or the capture collector. */
export interface Target {
  url: string;
  headers: Record<string, string>;
}

/** The targets, one per scenario, as the runner reads them from RUNLEDGER_TARGETS (JSON). */
export function targetsFromEnv(): Record<Scenario, Target> {
  const text = process.env.RUNLEDGER_TARGETS;
  if (!text) throw new Error('RUNLEDGER_TARGETS is not set');
  return JSON.parse(text) as Record<Scenario, Target>;
}

/**
 * One span exporter in the library's setup that sends each scenario's spans
 * with that scenario's exporter: one process runs every scenario (a library's
 * instrumentation is global), each scenario's spans go to its own key. The
 * runner flushes between scenarios, so no batch holds two.
 */
export class ScenarioExporter implements SpanExporter {
  current: Scenario = 'ok';
  private readonly exporters: Record<Scenario, SpanExporter>;
  constructor(exporters: Record<Scenario, SpanExporter>) {
    this.exporters = exporters;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.exporters[this.current].export(spans, done);
  }

  async forceFlush(): Promise<void> {
    await Promise.all(Object.values(this.exporters).map((exporter) => exporter.forceFlush?.()));
  }

  async shutdown(): Promise<void> {
    await Promise.all(Object.values(this.exporters).map((exporter) => exporter.shutdown()));
  }
}

/** What an agent library does in a runner: its OTel setup, one invocation, its flush. */
export interface AgentLibrary {
  /** Sets the library's tracing up to export through `exporter` (once per process). */
  setup(exporter: SpanExporter): Promise<void>;
  /** One agent invocation: one trace, one run. Its answer, or it throws as the library does. */
  invoke(scenario: Scenario, model: FakeModel, signal: AbortSignal): Promise<string>;
  /** Exports every ended span. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** What a runner saw of one invocation, printed for the test. */
export interface InvocationReport {
  scenario: Scenario;
  answer?: string;
  error?: string;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs every scenario in order, each to its own target; prints one JSON report per line. */
export async function runScenarios(
  library: AgentLibrary,
  model: FakeModel,
  exporter: ScenarioExporter,
  scenarios: readonly Scenario[],
): Promise<InvocationReport[]> {
  await library.setup(exporter);
  const reports: InvocationReport[] = [];
  for (const scenario of scenarios) {
    exporter.current = scenario;
    const controller = abortPlan(model, scenario);
    const report: InvocationReport = { scenario };
    try {
      report.answer = await library.invoke(scenario, model, controller.signal);
    } catch (error) {
      report.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    }
    // Spans a library ends after the call returns (an MCP session closing) belong to this scenario too.
    await pause(250);
    await library.flush();
    reports.push(report);
    process.stdout.write(`${JSON.stringify(report)}\n`);
  }
  await library.shutdown();
  return reports;
}
