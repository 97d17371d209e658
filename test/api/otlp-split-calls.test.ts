import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

/**
 * An exporter that sends span by span (a simple span processor) delivers an
 * MCP request's span before the tool span above it, each in a request of its
 * own: the call is still one step.
 */

const START = 1_750_000_000_000_000_000n;
let counter = 0;

function ids() {
  counter += 1;
  const hex = counter.toString(16);
  return {
    trace: `${hex.padStart(8, '0')}${'ab'.repeat(12)}`,
    agent: `a${hex.padStart(15, '0')}`,
    tool: `b${hex.padStart(15, '0')}`,
    request: `c${hex.padStart(15, '0')}`,
  };
}

type Attribute = { key: string; value: { stringValue: string } };
const attr = (key: string, value: string): Attribute => ({ key, value: { stringValue: value } });

function spanJson(options: {
  trace: string;
  id: string;
  parent?: string;
  name: string;
  attributes: Attribute[];
  error?: { type: string; message: string };
  offsetMs: [number, number];
  configuration: string;
}) {
  return {
    traceId: options.trace,
    spanId: options.id,
    ...(options.parent ? { parentSpanId: options.parent } : {}),
    name: options.name,
    startTimeUnixNano: String(START + BigInt(options.offsetMs[0]) * 1_000_000n),
    endTimeUnixNano: String(START + BigInt(options.offsetMs[1]) * 1_000_000n),
    attributes: [...options.attributes, attr('runledger.configuration', options.configuration)],
    ...(options.error
      ? {
          status: { code: 2 },
          events: [
            {
              name: 'exception',
              timeUnixNano: String(START),
              attributes: [
                attr('exception.type', options.error.type),
                attr('exception.message', options.error.message),
              ],
            },
          ],
        }
      : {}),
  };
}

describe.each(backendNames)('a tool call whose spans arrive in separate requests (%s)', (backend) => {
  let api: TestApi;
  let key = '';

  beforeAll(async () => {
    api = await openTestApi(backend);
    key = await api.keyFor('span-by-span', ['record', 'read_own_runs']);
  }, 60_000);
  afterAll(async () => {
    await api?.dispose();
  });

  const send = async (span: ReturnType<typeof spanJson>, scope?: string) => {
    const response = await api.server.fetch('http://runledger.test/v1/traces', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({
        resourceSpans: [{ scopeSpans: [{ ...(scope ? { scope: { name: scope } } : {}), spans: [span] }] }],
      }),
    });
    expect(response.status).toBe(200);
  };

  const stepsOf = async (configuration: string) => {
    const result = await api.query<{
      runs: {
        edges: Array<{ node: { steps: { edges: Array<{ node: { toolName: string; outcome: string } }> } } }>;
      };
    }>(
      `query ($c: [String!]) { runs(first: 2, filter: { configurations: $c }) {
        edges { node { steps(first: 10) { edges { node { toolName outcome } } } } } } }`,
      { c: [configuration] },
      { actor: 'span-by-span', permissions: ['record', 'read_own_runs'] },
    );
    return result.data?.runs.edges.flatMap((edge) => edge.node.steps.edges.map((step) => step.node)) ?? [];
  };

  const call = (configuration: string, order: 'request first' | 'tool first') => {
    const id = ids();
    const agent = spanJson({
      trace: id.trace,
      id: id.agent,
      name: `invoke_agent ${configuration}`,
      attributes: [attr('gen_ai.operation.name', 'invoke_agent'), attr('gen_ai.agent.name', configuration)],
      offsetMs: [0, 100],
      configuration,
    });
    const aborted = { type: '-32001', message: 'MCP error -32001: AbortError: This operation was aborted' };
    const tool = spanJson({
      trace: id.trace,
      id: id.tool,
      parent: id.agent,
      name: 'execute_tool slow',
      attributes: [attr('gen_ai.operation.name', 'execute_tool'), attr('gen_ai.tool.name', 'slow')],
      error: aborted,
      offsetMs: [10, 60],
      configuration,
    });
    const request = spanJson({
      trace: id.trace,
      id: id.request,
      parent: id.tool,
      name: 'tools/call slow',
      attributes: [
        attr('mcp.method.name', 'tools/call'),
        attr('gen_ai.operation.name', 'execute_tool'),
        attr('gen_ai.tool.name', 'slow'),
      ],
      error: aborted,
      offsetMs: [11, 59],
      configuration,
    });
    return order === 'request first' ? [request, tool, agent] : [tool, request, agent];
  };

  it.each(['request first', 'tool first'] as const)('is one CANCELLED step, the %s', async (order) => {
    const configuration = `split-${order.replace(' ', '-')}`;
    for (const span of call(configuration, order)) await send(span);
    expect(await stepsOf(configuration)).toEqual([{ toolName: 'slow', outcome: 'CANCELLED' }]);
  });

  /**
   * OpenLLMetry: its MCP instrumentation records the request under its client
   * session span (its own scope), beside the SDK's tool span of the call; the
   * two share only the tool's name and the time the request lies within.
   */
  const openLlmetryCalls = (configuration: string, calls: number, order: 'request first' | 'tool first') => {
    const id = ids();
    const session = `d${id.agent.slice(1)}`;
    const sent: Array<{ span: ReturnType<typeof spanJson>; scope: string }> = [];
    const sdk = '@traceloop/node-server-sdk';
    const mcp = '@traceloop/instrumentation-mcp';
    const tl = (kind: string, name: string) => [
      attr('traceloop.span.kind', kind),
      attr('traceloop.entity.name', name),
    ];
    for (let n = 0; n < calls; n += 1) {
      const at = 10 + n * 20;
      const tool = {
        span: spanJson({
          trace: id.trace,
          id: `b${id.tool.slice(1, 15)}${n}`,
          parent: id.agent,
          name: 'echo.tool',
          attributes: tl('tool', 'echo'),
          offsetMs: [at, at + 10],
          configuration,
        }),
        scope: sdk,
      };
      const request = {
        span: spanJson({
          trace: id.trace,
          id: `c${id.request.slice(1, 15)}${n}`,
          parent: session,
          name: 'echo.tool',
          attributes: [
            ...tl('tool', 'echo'),
            attr('traceloop.entity.output', n === 0 ? '{"result":"Echo: hi"}' : '{"isError":true}'),
          ],
          offsetMs: [at + 1, at + 9],
          configuration,
        }),
        scope: mcp,
      };
      sent.push(...(order === 'request first' ? [request, tool] : [tool, request]));
    }
    sent.push({
      span: spanJson({
        trace: id.trace,
        id: session,
        parent: id.agent,
        name: 'mcp.client.session',
        attributes: tl('session', 'mcp.client.session'),
        offsetMs: [1, 99],
        configuration,
      }),
      scope: mcp,
    });
    sent.push({
      span: spanJson({
        trace: id.trace,
        id: id.agent,
        name: 'support-agent.workflow',
        attributes: tl('workflow', 'support-agent'),
        offsetMs: [0, 100],
        configuration,
      }),
      scope: sdk,
    });
    return sent;
  };

  it.each(['request first', 'tool first'] as const)(
    "is one step per call when OpenLLMetry's MCP request hangs under its session, the %s",
    async (order) => {
      const configuration = `openllmetry-${order.replace(' ', '-')}`;
      for (const { span, scope } of openLlmetryCalls(configuration, 2, order)) await send(span, scope);
      // Whichever span of a call came first is its step: the MCP request knows the isError answer, the SDK's span does not.
      expect(await stepsOf(configuration)).toEqual(
        order === 'request first'
          ? [
              { toolName: 'echo', outcome: 'OK' },
              { toolName: 'echo', outcome: 'FAILED' },
            ]
          : [
              { toolName: 'echo', outcome: 'OK' },
              { toolName: 'echo', outcome: 'OK' },
            ],
      );
    },
  );
});
