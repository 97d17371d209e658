import type { Server as HttpServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
} from '@opentelemetry/semantic-conventions/incubating';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRUNCATION_MARKER } from '../../src/domain/bounding.ts';
import { messages } from '../../src/otlp/decode.ts';
import { createHttpServer } from '../../src/transport.ts';
import { openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { agentTrace, type ExporterKind, exportSpans } from '../support/otel.ts';

const AGENT = 'otel-agent';
const PERMISSIONS = ['record', 'read_own_runs'] as const;

const RUN_QUERY = `query ($configuration: [String!]) {
  runs(first: 5, filter: { configurations: $configuration }) {
    edges { node {
      uuid status terminationReason configuration promptTokens completionTokens
      toolOutcomeCounts { ok failed cancelled total failureRate }
      steps(first: 50) { edges { node { sequence kind toolName server outcome toolIsError durationMs occurredAt } } }
    } }
  }
}`;

interface StepView {
  sequence: number;
  kind: string;
  toolName: string | null;
  server: string | null;
  outcome: string | null;
  toolIsError: boolean | null;
  durationMs: number;
  occurredAt: string;
}

interface RunView {
  uuid: string;
  status: string;
  terminationReason: string | null;
  configuration: string;
  promptTokens: number;
  completionTokens: number;
  toolOutcomeCounts: {
    ok: number;
    failed: number;
    cancelled: number;
    total: number;
    failureRate: number | null;
  };
  steps: { edges: Array<{ node: StepView }> };
}

describe.each(backendNames)('OTLP ingestion at /v1/traces (%s)', (backend) => {
  let api: TestApi;
  let http: HttpServer;
  let endpoint: string;
  beforeAll(async () => {
    api = await openTestApi(backend);
    http = createHttpServer(api.server);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const address = http.address();
    if (!address || typeof address === 'string') throw new Error('no port');
    endpoint = `http://127.0.0.1:${address.port}/v1/traces`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => http.close(() => resolve()));
    await api?.dispose();
  });
  rollbackEach(() => api);

  const key = () => api.keyFor(AGENT, PERMISSIONS);
  const auth = async () => ({ Authorization: `Bearer ${await key()}` });

  async function runsOf(configuration: string): Promise<RunView[]> {
    const result = await api.query<{ runs: { edges: Array<{ node: RunView }> } }>(
      RUN_QUERY,
      { configuration: [configuration] },
      { actor: AGENT, permissions: PERMISSIONS },
    );
    expect(result.errors).toBeUndefined();
    return (result.data?.runs.edges ?? []).map((edge) => edge.node);
  }

  async function onlyRun(configuration: string): Promise<RunView> {
    const found = await runsOf(configuration);
    expect(found).toHaveLength(1);
    const [run] = found;
    if (!run) throw new Error('no run');
    return run;
  }

  const steps = (run: RunView) => run.steps.edges.map((edge) => edge.node);

  /** Rows in every table ingestion writes to. */
  async function rowCounts() {
    const count = async (table: string) => {
      const rows = await api.db.execute<{ n: number }>(sql.raw(`SELECT count(*)::int AS n FROM ${table}`));
      return (
        (rows as unknown as { rows?: Array<{ n: number }> }).rows?.[0]?.n ??
        (rows as unknown as Array<{ n: number }>)[0]?.n
      );
    };
    return { runs: await count('runs'), steps: await count('run_steps'), spans: await count('otlp_spans') };
  }

  /** Posts a body as an exporter would, and hands back the raw answer. */
  async function send(body: Uint8Array | string, headers: Record<string, string>): Promise<Response> {
    return fetch(endpoint, {
      method: 'POST',
      headers,
      body: typeof body === 'string' ? body : new Uint8Array(body),
    });
  }

  it.each(['protobuf', 'json'] as ExporterKind[])(
    'an agent trace sent by the %s exporter reads back with ok, failed and cancelled calls, and a retry stores nothing twice',
    async (kind) => {
      const configuration = `support-${kind}`;
      const agent = await agentTrace(configuration);
      const result = await exportSpans(kind, agent.spans, { url: endpoint, headers: await auth() });
      expect(result.code).toBe(0);

      const run = await onlyRun(configuration);
      expect(run).toMatchObject({
        status: 'COMPLETED',
        terminationReason: 'COMPLETED',
        configuration,
        promptTokens: 1200,
        completionTokens: 80,
        toolOutcomeCounts: { ok: 1, failed: 2, cancelled: 1, total: 4, failureRate: 2 / 3 },
      });
      expect(
        steps(run).map((s) => [s.sequence, s.kind, s.toolName, s.server, s.outcome, s.toolIsError]),
      ).toEqual([
        [1, 'LLM', null, null, null, null],
        [2, 'TOOL', 'search_docs', 'docs.example.com', 'OK', false],
        [3, 'TOOL', 'create_ticket', 'tickets.example.com', 'FAILED', true],
        [4, 'TOOL', 'read_file', 'files.example.com', 'FAILED', true],
        [5, 'TOOL', 'long_report', 'reports.example.com', 'CANCELLED', true],
      ]);
      // The cancelled call ran about 5 ms before its abort; its duration is the span's.
      const cancelled = steps(run)[4];
      expect(cancelled?.durationMs).toBeGreaterThanOrEqual(4);

      // The server's failure rate leaves the cancel out: 2 failed of 3 that ran to an answer.
      const stats = await api.query<{
        toolOutcomeStats: { groups: Array<{ counts: RunView['toolOutcomeCounts'] }> };
      }>(
        `query ($c: [String!]) { toolOutcomeStats(groupBy: [CONFIGURATION], filter: { configurations: $c }) {
           groups { counts { ok failed cancelled total failureRate } } } }`,
        { c: [configuration] },
        { actor: AGENT, permissions: PERMISSIONS },
      );
      expect(stats.errors).toBeUndefined();
      expect(stats.data?.toolOutcomeStats.groups).toEqual([
        { counts: { ok: 1, failed: 2, cancelled: 1, total: 4, failureRate: 2 / 3 } },
      ]);

      // An exporter's retry of the same batch: accepted, nothing stored again.
      const before = await rowCounts();
      expect((await exportSpans(kind, agent.spans, { url: endpoint, headers: await auth() })).code).toBe(0);
      expect(await rowCounts()).toEqual(before);
      expect(steps(await onlyRun(configuration))).toEqual(steps(run));
    },
  );

  it('spans of one trace in several requests, out of order and after GraphQL steps, end up in one run', async () => {
    const configuration = 'support-split';
    const agent = await agentTrace(configuration);
    const byName = (name: string) => {
      const span = agent.spans.find((s) => s.name === name);
      if (!span) throw new Error(`no span ${name}`);
      return span;
    };
    const root = byName(`invoke_agent ${configuration}`);
    const chat = byName('chat gpt-test');
    const [ok, toolError, thrown, cancelled] = [
      'search_docs',
      'create_ticket',
      'read_file',
      'long_report',
    ].map((name) => byName(`execute_tool ${name}`));
    if (!ok || !toolError || !thrown || !cancelled) throw new Error('missing tool span');
    const headers = await auth();

    // The last two calls arrive first: they are steps 1 and 2. The first request decides the
    // run's configuration: without the agent's span, the service's name.
    expect((await exportSpans('protobuf', [thrown, cancelled], { url: endpoint, headers })).code).toBe(0);
    let run = await onlyRun(`${configuration}-service`);
    expect(steps(run).map((s) => s.toolName)).toEqual(['read_file', 'long_report']);
    expect(run.status).toBe('RUNNING');

    // A step recorded through GraphQL into the same run, between two deliveries.
    const recorded = await api.query(
      `mutation ($run: String!) { recordStep(input: { runUuid: $run, kind: CONTEXT, round: 0, durationMs: 1 }) {
         __typename } }`,
      { run: run.uuid },
      { actor: AGENT, permissions: PERMISSIONS },
    );
    expect(recorded.errors).toBeUndefined();

    // The root arrives (the run ends), then the earlier spans, late: appended in start order after what is stored.
    expect((await exportSpans('json', [root], { url: endpoint, headers })).code).toBe(0);
    expect((await exportSpans('json', [toolError, chat, ok], { url: endpoint, headers })).code).toBe(0);
    run = await onlyRun(`${configuration}-service`);
    expect(run.status).toBe('COMPLETED');
    expect(steps(run).map((s) => [s.sequence, s.kind, s.toolName, s.outcome])).toEqual([
      [1, 'TOOL', 'read_file', 'FAILED'],
      [2, 'TOOL', 'long_report', 'CANCELLED'],
      [3, 'CONTEXT', null, null],
      [4, 'LLM', null, null],
      [5, 'TOOL', 'search_docs', 'OK'],
      [6, 'TOOL', 'create_ticket', 'FAILED'],
    ]);
    // A late step keeps its own time: it ended when its span ended.
    const late = steps(run)[4];
    expect(late?.occurredAt).toBe(
      new Date(ok.endTime[0] * 1000 + Math.floor(ok.endTime[1] / 1e6)).toISOString(),
    );

    // Everything again, in one request: nothing new.
    const before = await rowCounts();
    expect((await exportSpans('protobuf', agent.spans, { url: endpoint, headers })).code).toBe(0);
    expect(await rowCounts()).toEqual(before);
  });

  it('spans of two traces that name one gen_ai.conversation.id share a run', async () => {
    const configuration = 'support-conversation';
    const conversation = { [ATTR_GEN_AI_CONVERSATION_ID]: 'conv-42' };
    const turn = async () =>
      agentTrace(configuration, async (tracer, parent) => {
        tracer.startSpan('turn', { attributes: conversation }, parent).end();
      });
    const first = await turn();
    const second = await turn();
    expect(first.traceId).not.toBe(second.traceId);
    const headers = await auth();
    // The first turn's root arrives on its own, after the rest: its trace is known to be the conversation's.
    const isRoot = (s: ReadableSpan) => s.parentSpanContext === undefined;
    const rest = first.spans.filter((s) => !isRoot(s));
    expect(rest).toHaveLength(first.spans.length - 1);
    expect((await exportSpans('protobuf', rest, { url: endpoint, headers })).code).toBe(0);
    expect((await exportSpans('json', first.spans.filter(isRoot), { url: endpoint, headers })).code).toBe(0);
    expect((await exportSpans('protobuf', second.spans, { url: endpoint, headers })).code).toBe(0);
    // Named by the first request: the service, since the agent's span came later.
    const run = await onlyRun(`${configuration}-service`);
    expect(run.toolOutcomeCounts).toMatchObject({ ok: 2, failed: 4, cancelled: 2 });
    expect(steps(run).map((s) => s.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // A conversation has no last span: its run stays open.
    expect(run.status).toBe('RUNNING');
  });

  it('another sender of the same trace and conversation gets runs of its own: no span names a run it may not see', async () => {
    const configuration = 'support-two-senders';
    const agent = await agentTrace(configuration, async (tracer, parent) => {
      tracer
        .startSpan('turn', { attributes: { [ATTR_GEN_AI_CONVERSATION_ID]: 'conv-shared' } }, parent)
        .end();
    });
    expect((await exportSpans('protobuf', agent.spans, { url: endpoint, headers: await auth() })).code).toBe(
      0,
    );
    const first = await onlyRun(configuration);
    const other = await api.keyFor('other-agent', PERMISSIONS);
    const again = await exportSpans('json', agent.spans, {
      url: endpoint,
      headers: { Authorization: `Bearer ${other}` },
    });
    // Accepted whole, as a trace new to that sender is: nothing rejected, nothing said about the first run.
    expect(again).toMatchObject({ code: 0 });
    expect(await onlyRun(configuration)).toEqual(first);
    const theirs = await api.query<{ runs: { edges: Array<{ node: RunView }> } }>(
      RUN_QUERY,
      { configuration: [configuration] },
      { actor: 'other-agent', permissions: ['read_own_runs'] },
    );
    const [run] = theirs.data?.runs.edges.map((edge) => edge.node) ?? [];
    expect(run?.uuid).toBeDefined();
    expect(run?.uuid).not.toBe(first.uuid);
    expect(steps(run as RunView).map((s) => s.sequence)).toEqual(steps(first).map((s) => s.sequence));
  });

  it('runledger.tool.outcome and an MCP notifications/cancelled decide before the status does', async () => {
    const configuration = 'support-evidence';
    const agent = await agentTrace(configuration, async (tracer, parent) => {
      // The agent says what the span cannot: a failed-looking span that was its own cancel.
      tracer
        .startSpan(
          'execute_tool stated',
          {
            attributes: {
              [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
              [ATTR_GEN_AI_TOOL_NAME]: 'stated',
              [ATTR_ERROR_TYPE]: 'tool_error',
              'runledger.tool.outcome': 'cancelled',
            },
          },
          parent,
        )
        .end();
      // An MCP call cut off by notifications/cancelled for its request id, status left UNSET.
      const call = tracer.startSpan(
        'execute_tool notified',
        {
          attributes: {
            [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
            [ATTR_GEN_AI_TOOL_NAME]: 'notified',
            [ATTR_JSONRPC_REQUEST_ID]: '7',
            'mcp.session.id': 's-1',
          },
        },
        parent,
      );
      tracer
        .startSpan(
          'notifications/cancelled',
          {
            attributes: {
              [ATTR_MCP_METHOD_NAME]: 'notifications/cancelled',
              [ATTR_JSONRPC_REQUEST_ID]: '7',
              'mcp.session.id': 's-1',
            },
          },
          parent,
        )
        .end();
      call.end();
    });
    expect((await exportSpans('protobuf', agent.spans, { url: endpoint, headers: await auth() })).code).toBe(
      0,
    );
    const run = await onlyRun(configuration);
    const byTool = new Map(steps(run).map((s) => [s.toolName, s.outcome]));
    expect(byTool.get('stated')).toBe('CANCELLED');
    expect(byTool.get('notified')).toBe('CANCELLED');
    expect(run.toolOutcomeCounts).toMatchObject({ ok: 1, failed: 2, cancelled: 3, failureRate: 2 / 3 });
  });

  it('an MCP notifications/cancelled event on the span cancels it; a result is bounded, arguments over the limit refused', async () => {
    const configuration = 'support-bounds';
    const agent = await agentTrace(configuration, async (tracer, parent) => {
      const tool = (name: string, attributes: Record<string, string>) =>
        tracer.startSpan(
          `execute_tool ${name}`,
          {
            attributes: {
              [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
              [ATTR_GEN_AI_TOOL_NAME]: name,
              ...attributes,
            },
          },
          parent,
        );
      const evented = tool('evented', {});
      evented.addEvent('notifications/cancelled', { 'mcp.method.name': 'notifications/cancelled' });
      evented.setStatus({ code: 2 });
      evented.end();
      tool('verbose', { 'gen_ai.tool.call.result': 'x'.repeat(60_000) }).end();
      tool('huge_arguments', {
        'gen_ai.tool.call.arguments': JSON.stringify({ blob: 'y'.repeat(100_001) }),
      }).end();
    });
    const body = ProtobufTraceSerializer.serializeRequest(agent.spans as ReadableSpan[]) ?? new Uint8Array();
    const response = await send(body, { ...(await auth()), 'content-type': 'application/x-protobuf' });
    expect(response.status).toBe(200);
    const answer = ProtobufTraceSerializer.deserializeResponse(new Uint8Array(await response.arrayBuffer()));
    expect(Number(answer.partialSuccess?.rejectedSpans)).toBe(1);
    expect(answer.partialSuccess?.errorMessage).toContain('VALUE_TOO_LARGE');
    const run = await onlyRun(configuration);
    const byTool = new Map(steps(run).map((s) => [s.toolName, s]));
    expect(byTool.get('evented')?.outcome).toBe('CANCELLED');
    expect(byTool.has('huge_arguments')).toBe(false);
    const verbose = await api.query<{
      run: { steps: { edges: Array<{ node: { toolName: string; metadata: { contentBytes: number } } }> } };
    }>(
      `query ($uuid: String!) { run(uuid: $uuid) { steps(first: 50) { edges { node { toolName metadata } } } } }`,
      { uuid: run.uuid },
      { actor: AGENT, permissions: PERMISSIONS },
    );
    const stored = verbose.data?.run.steps.edges.find((e) => e.node.toolName === 'verbose');
    // Cut at 50,000 bytes, plus the marker that says so.
    expect(stored?.node.metadata.contentBytes).toBe(50_000 + Buffer.byteLength(TRUNCATION_MARKER));
  });

  it.each(['protobuf', 'json'] as ExporterKind[])(
    'a %s request with a span it cannot use answers partial success, in its own encoding, and stores the rest',
    async (kind) => {
      const configuration = `support-partial-${kind}`;
      const agent = await agentTrace(configuration, async (tracer, parent) => {
        tracer
          .startSpan(
            'execute_tool odd',
            {
              attributes: {
                [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
                [ATTR_GEN_AI_TOOL_NAME]: 'odd',
                'runledger.tool.outcome': 'maybe',
              },
            },
            parent,
          )
          .end();
      });
      const serializer = kind === 'protobuf' ? ProtobufTraceSerializer : JsonTraceSerializer;
      const body = serializer.serializeRequest(agent.spans as ReadableSpan[]);
      if (!body) throw new Error('nothing serialised');
      const contentType = kind === 'protobuf' ? 'application/x-protobuf' : 'application/json';
      const response = await send(body, { ...(await auth()), 'content-type': contentType });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe(contentType);
      // Read with the SDK's own response decoder.
      const answer = serializer.deserializeResponse(new Uint8Array(await response.arrayBuffer()));
      expect(Number(answer.partialSuccess?.rejectedSpans)).toBe(1);
      expect(answer.partialSuccess?.errorMessage).toContain('VALUE_INVALID (runledger.tool.outcome)');
      expect(steps(await onlyRun(configuration))).toHaveLength(5);
    },
  );

  describe('refusals write nothing', () => {
    async function refused(
      response: Response,
      status: number,
      reason: string,
      encoding: 'protobuf' | 'json' = 'json',
    ): Promise<void> {
      expect(response.status).toBe(status);
      const bytes = new Uint8Array(await response.arrayBuffer());
      if (encoding === 'json') {
        expect(response.headers.get('content-type')).toBe('application/json');
        const body = JSON.parse(new TextDecoder().decode(bytes)) as {
          code: number;
          details: Array<{ reason: string }>;
        };
        expect(body.details[0]?.reason).toBe(reason);
      } else {
        expect(response.headers.get('content-type')).toBe('application/x-protobuf');
        const { status: Status, errorInfo } = messages();
        const decoded = Status.toObject(Status.decode(bytes)) as { details: Array<{ value: Uint8Array }> };
        const info = errorInfo.toObject(errorInfo.decode(decoded.details[0]?.value ?? new Uint8Array())) as {
          reason: string;
        };
        expect(info.reason).toBe(reason);
      }
    }

    it('a body that is not an export request: 400 with a google.rpc.Status, in either encoding', async () => {
      const before = await rowCounts();
      const headers = await auth();
      await refused(
        await send(new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), {
          ...headers,
          'content-type': 'application/x-protobuf',
        }),
        400,
        'OTLP_MALFORMED',
        'protobuf',
      );
      await refused(
        await send('{"resourceSpans": ', { ...headers, 'content-type': 'application/json' }),
        400,
        'OTLP_MALFORMED',
      );
      await refused(
        await send('{"resourceSpans": [{"scopeSpans": [{"spans": "not a list"}]}]}', {
          ...headers,
          'content-type': 'application/json',
        }),
        400,
        'OTLP_MALFORMED',
      );
      await refused(
        await send(gzipSync('{}').subarray(0, 8), {
          ...headers,
          'content-type': 'application/json',
          'content-encoding': 'gzip',
        }),
        400,
        'OTLP_MALFORMED',
      );
      expect(await rowCounts()).toEqual(before);
      // The SDK's exporter sees the refusal as a failed export, not retried.
      const agent = await agentTrace('support-unsent');
      const result = await exportSpans('protobuf', agent.spans, {
        url: endpoint,
        headers: { Authorization: 'Bearer rl_nope' },
      });
      expect(result.code).toBe(1);
      expect(await rowCounts()).toEqual(before);
    });

    it('no key, an unknown key, a key without record, another content type or encoding', async () => {
      const agent = await agentTrace('support-refused');
      const body =
        ProtobufTraceSerializer.serializeRequest(agent.spans as ReadableSpan[]) ?? new Uint8Array();
      const protobuf = { 'content-type': 'application/x-protobuf' };
      const before = await rowCounts();
      await refused(await send(body, protobuf), 401, 'UNAUTHENTICATED', 'protobuf');
      await refused(
        await send(body, { ...protobuf, Authorization: 'Bearer rl_unknown' }),
        401,
        'UNAUTHENTICATED',
        'protobuf',
      );
      const reader = await api.keyFor('otel-reader', ['read_own_runs']);
      await refused(
        await send(body, { ...protobuf, Authorization: `Bearer ${reader}` }),
        403,
        'FORBIDDEN',
        'protobuf',
      );
      const headers = await auth();
      await refused(
        await send(body, { ...headers, 'content-type': 'text/plain' }),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      );
      await refused(
        await send(body, { ...headers, ...protobuf, 'content-encoding': 'br' }),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
        'protobuf',
      );
      expect(await rowCounts()).toEqual(before);
      // The key as OTEL_EXPORTER_OTLP_HEADERS spells it, not decoded by the sender: accepted.
      const encoded = { Authorization: `Bearer%20${await key()}` };
      expect((await send(body, { ...protobuf, ...encoded })).status).toBe(200);
      expect((await runsOf('support-refused')).length).toBe(1);
    });

    it('a gzip bomb is refused once it inflates past the limit; so is a body over 16 MB', async () => {
      const before = await rowCounts();
      const headers = { ...(await auth()), 'content-type': 'application/x-protobuf' };
      // 64 MB of zeros, about 64 KB gzipped.
      const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });
      expect(bomb.length).toBeLessThan(200_000);
      await refused(
        await send(bomb, { ...headers, 'content-encoding': 'gzip' }),
        413,
        'REQUEST_TOO_LARGE',
        'protobuf',
      );
      await refused(
        await send(Buffer.alloc(17 * 1024 * 1024), headers),
        413,
        'REQUEST_TOO_LARGE',
        'protobuf',
      );
      expect(await rowCounts()).toEqual(before);
    });
  });
});
