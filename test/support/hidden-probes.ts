/**
 * Every request that names a run, as an actor asks it about a run it may not
 * see and about one that does not exist: the refusals must be the same answer,
 * the same statements and the same time (test/api/hidden-runs.test.ts,
 * test/api/hidden-timing.test.ts).
 */

/** What a probe names: a run's uuid, its global id and the global id of one of its steps. */
export interface ProbeTarget {
  uuid: string;
  runId: string;
  stepId: string;
}

export interface Probe {
  name: string;
  /** A GraphQL-over-SSE subscription (runEvents), else a plain POST. */
  stream?: true;
  query: string;
  variables: (target: ProbeTarget) => Record<string, unknown>;
}

/** The identifier of the registered MCP server callTool probes name: it is never reached. */
export const PROBE_SERVER = 'probe-server';

const mutation = (field: string, input: string) =>
  `mutation ($u: String!) { r: ${field}(input: ${input}) { __typename ... on Error { code message } } }`;

export const PROBES: readonly Probe[] = [
  {
    name: 'recordStep',
    query: mutation('recordStep', '{ runUuid: $u, kind: LLM, round: 1, durationMs: 1 }'),
    variables: ({ uuid }) => ({ u: uuid }),
  },
  {
    name: 'recordToolExecution',
    query: mutation(
      'recordToolExecution',
      '{ runUuid: $u, round: 1, durationMs: 1, toolName: "t", server: "s", result: "r", isError: false, idempotencyKey: "k" }',
    ),
    variables: ({ uuid }) => ({ u: uuid }),
  },
  {
    name: 'recordToolResult',
    query: mutation(
      'recordToolResult',
      '{ runUuid: $u, round: 1, durationMs: 1, toolName: "t", server: "s", result: { content: "r", outcome: CANCELLED } }',
    ),
    variables: ({ uuid }) => ({ u: uuid }),
  },
  {
    name: 'recordSteps',
    query: mutation(
      'recordSteps',
      '{ runUuid: $u, steps: [{ kind: LLM, round: 1, durationMs: 1 }, { kind: LLM, round: 2, durationMs: 1 }] }',
    ),
    variables: ({ uuid }) => ({ u: uuid }),
  },
  {
    name: 'finishRun',
    query: mutation('finishRun', '{ uuid: $u, status: COMPLETED, terminationReason: COMPLETED }'),
    variables: ({ uuid }) => ({ u: uuid }),
  },
  {
    name: 'cancelRun',
    query: mutation('cancelRun', '{ uuid: $u }'),
    variables: ({ uuid }) => ({ u: uuid }),
  },
  {
    name: 'callTool',
    query: mutation(
      'callTool',
      `{ runUuid: $u, server: "${PROBE_SERVER}", toolName: "echo", arguments: {} }`,
    ),
    variables: ({ uuid }) => ({ u: uuid }),
  },
  {
    name: 'run',
    query: 'query ($u: String!) { run(uuid: $u) { uuid status steps(first: 5) { edges { node { id } } } } }',
    variables: ({ uuid }) => ({ u: uuid }),
  },
  {
    name: 'node (run)',
    query: 'query ($id: ID!) { node(id: $id) { id ... on Run { uuid } } }',
    variables: ({ runId }) => ({ id: runId }),
  },
  {
    name: 'node (step)',
    query: 'query ($id: ID!) { node(id: $id) { id ... on RunStep { sequence } } }',
    variables: ({ stepId }) => ({ id: stepId }),
  },
  {
    name: 'nodes',
    query: 'query ($ids: [ID!]!) { nodes(ids: $ids) { id } }',
    variables: ({ runId, stepId }) => ({ ids: [runId, stepId] }),
  },
  {
    name: 'runEvents',
    stream: true,
    query: 'subscription ($u: String!) { runEvents(uuid: $u) { step { sequence } } }',
    variables: ({ uuid }) => ({ u: uuid }),
  },
];

/** The request of a probe, for a fetch handler (in-process) or an HTTP URL. */
export function probeRequest(url: string, key: string, probe: Probe, target: ProbeTarget): Request {
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: probe.stream ? 'text/event-stream' : 'application/json',
      authorization: `Bearer ${key}`,
    },
    body: JSON.stringify({ query: probe.query, variables: probe.variables(target) }),
  });
}

/** The answer with the target's identifiers replaced, so that two targets' answers compare. */
export function normalised(answer: string, target: ProbeTarget): string {
  return answer
    .replaceAll(target.uuid, '<uuid>')
    .replaceAll(target.runId, '<run id>')
    .replaceAll(target.stepId, '<step id>');
}

/** A run and a step that were never stored, with ids of the right shape. */
export function missingTarget(): ProbeTarget {
  const uuid = crypto.randomUUID();
  return {
    uuid,
    runId: Buffer.from(`Run:${uuid}`).toString('base64url'),
    stepId: Buffer.from('RunStep:987654321').toString('base64url'),
  };
}
