// The agent libraries people trace with, end to end: each library's real tracing sends a run of
// every scenario (ok, an isError answer, a thrown tool, a call cancelled mid-way, a run cancelled
// mid-answer) to runledger's /v1/traces, and GraphQL must read back one run per invocation, a
// tool step per call with the right outcome, and the model steps with their tokens. Libraries
// that need Node 22 are replayed from the fixtures they sent (test/fixtures/otel). What each
// library achieves is kept in test/fixtures/otel/conformance.json, the source of the table in
// docs/opentelemetry.md: a change of result fails here until that file is written again
// (OTEL_CONFORMANCE=write) and the table made from it (npm run otel:table).
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONFORMANCE_FILE,
  type Conformance,
  cellsOf,
  type Observation,
} from '../support/agents/conformance.ts';
import { SCENARIOS, type Scenario } from '../support/agents/fake-model.ts';
import type { Target } from '../support/agents/harness.ts';
import { LIBRARIES, type LibraryInfo, ROOT, runLibrary } from '../support/agents/libraries.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { type Listening, listen } from '../support/http.ts';

const RUNS = `query ($owner: String!) {
  runs(first: 5, filter: { owners: [$owner] }) {
    edges { node {
      status promptTokens completionTokens
      steps(first: 20) { edges { node { kind toolName outcome failureCode } } }
    } }
  }
}`;

interface RunsAnswer {
  runs: {
    edges: Array<{
      node: {
        status: string;
        promptTokens: number;
        completionTokens: number;
        steps: {
          edges: Array<{
            node: {
              kind: string;
              toolName: string | null;
              outcome: string | null;
              failureCode: string | null;
            };
          }>;
        };
      };
    }>;
  };
}

const actorOf = (library: LibraryInfo, scenario: Scenario) => `otel-${library.id}-${scenario}`;

let api: TestApi;
let http: Listening;
const observed: Record<string, Partial<Record<Scenario, Observation>>> = {};

beforeAll(async () => {
  api = await openTestApi('pglite');
  http = await listen(api.server);
});

afterAll(async () => {
  await http?.close();
  await api?.dispose();
  // What was stored, scenario by scenario, for a reader of a failing run (of some libraries or all).
  if (process.env.OTEL_OBSERVED)
    writeFileSync(process.env.OTEL_OBSERVED, `${JSON.stringify(observed, null, 2)}\n`);
  const conformance: Conformance = {};
  for (const library of LIBRARIES) {
    const scenarios = observed[library.id];
    if (!scenarios || SCENARIOS.some((scenario) => !scenarios[scenario])) return;
    conformance[library.id] = {
      title: library.title,
      mode: library.node === 22 ? 'replayed' : 'live',
      cells: cellsOf(scenarios as Record<Scenario, Observation>),
    };
  }
  if (process.env.OTEL_CONFORMANCE === 'write') {
    writeFileSync(CONFORMANCE_FILE, `${JSON.stringify(conformance, null, 2)}\n`);
  }
});

/** What runledger stored for one scenario's actor. */
async function observe(library: LibraryInfo, scenario: Scenario): Promise<Observation> {
  const answer = await api.query<RunsAnswer>(
    RUNS,
    { owner: actorOf(library, scenario) },
    { actor: 'otel-reader', permissions: ['read_all_runs'] },
  );
  expect(answer.errors).toBeUndefined();
  const runs = (answer.data?.runs.edges ?? []).map((edge) => edge.node);
  const steps = runs.flatMap((run) => run.steps.edges.map((edge) => edge.node));
  return {
    runs: runs.length,
    statuses: runs.map((run) => run.status),
    tools: steps
      .filter((step) => step.kind === 'TOOL')
      .map((step) => ({ name: step.toolName, outcome: step.outcome, failureCode: step.failureCode })),
    modelSteps: steps.filter((step) => step.kind === 'LLM').length,
    promptTokens: runs.reduce((sum, run) => sum + run.promptTokens, 0),
    completionTokens: runs.reduce((sum, run) => sum + run.completionTokens, 0),
  };
}

/** Sends a library's spans: live through its own tracing, or its captured fixtures as they were sent. */
async function deliver(library: LibraryInfo): Promise<void> {
  const targets = {} as Record<Scenario, Target>;
  for (const scenario of SCENARIOS) {
    const key = await api.keyFor(actorOf(library, scenario), ['record']);
    targets[scenario] = { url: `${http.base}/v1/traces`, headers: { authorization: `Bearer ${key}` } };
  }
  if (library.node === 20) {
    const reports = await runLibrary(library, targets);
    expect(reports.map((report) => report.scenario)).toEqual(SCENARIOS);
    return;
  }
  for (const scenario of SCENARIOS) {
    const body = readFileSync(`${ROOT}test/fixtures/otel/${library.id}/${scenario}.json`, 'utf8');
    const response = await fetch(targets[scenario].url, {
      method: 'POST',
      headers: { ...targets[scenario].headers, 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(200);
  }
}

describe.each(LIBRARIES.map((library) => [library.title, library] as const))('%s', (_title, library) => {
  beforeAll(async () => {
    await deliver(library);
    observed[library.id] = {};
    for (const scenario of SCENARIOS) {
      const seen = await observe(library, scenario);
      (observed[library.id] as Partial<Record<Scenario, Observation>>)[scenario] = seen;
    }
  }, 120_000);

  // The promise, for every library whatever else it sends: one run per invocation, and a cancel is never
  // a failure (a cancelled call never FAILED, an aborted run never FAILED, a failure never CANCELLED).
  // How close each library comes to the rest (one step per call, the run's end, tokens) is the
  // conformance table's, checked below against what the table says.
  it.each(SCENARIOS)('%s: one run, and no cancel read as a failure nor a failure as a cancel', (scenario) => {
    const seen = observed[library.id]?.[scenario];
    expect(seen, 'delivered').toBeDefined();
    if (!seen) return;
    expect(seen.runs, 'runs for one invocation').toBe(1);
    const outcomes = seen.tools.map((step) => step.outcome);
    if (scenario === 'cancel-call') expect(outcomes, 'the call cut off').toContain('CANCELLED');
    if (scenario === 'cancel-call' || scenario === 'cancel-run') {
      expect(outcomes, 'a cancel is no failure').not.toContain('FAILED');
      expect(seen.statuses, 'an aborted invocation is no failure').not.toContain('FAILED');
    } else {
      expect(outcomes, 'nothing was cancelled').not.toContain('CANCELLED');
    }
    if (scenario === 'ok') expect(outcomes, 'the call answered').not.toContain('FAILED');
  });
});

describe('the conformance table', () => {
  it('is what the libraries achieve now (OTEL_CONFORMANCE=write rewrites it)', () => {
    const committed = JSON.parse(readFileSync(CONFORMANCE_FILE, 'utf8')) as Conformance;
    const now: Record<string, unknown> = {};
    for (const library of LIBRARIES) {
      const scenarios = observed[library.id];
      if (scenarios && SCENARIOS.every((scenario) => scenarios[scenario])) {
        now[library.id] = cellsOf(scenarios as Record<Scenario, Observation>);
      }
    }
    const passes = (cells: Record<string, { pass: boolean }> | undefined) =>
      cells
        ? Object.fromEntries(Object.entries(cells).map(([column, value]) => [column, value.pass]))
        : undefined;
    expect(
      Object.fromEntries(
        Object.entries(now).map(([id, cells]) => [id, passes(cells as Record<string, { pass: boolean }>)]),
      ),
    ).toEqual(Object.fromEntries(Object.keys(now).map((id) => [id, passes(committed[id]?.cells)])));
  });
});
