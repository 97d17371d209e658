import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { McpTransportError } from '../../src/mcp/transport-error.ts';
import { asTransportError } from '../../src/mcp/transport-error-mapping.ts';
import { openTestApi, STDIO_TOOL_SERVER, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { type HttpToolServer, startHttpToolServer } from '../support/mcp-tool-server.ts';

interface Recorded {
  __typename: string;
  code?: string;
  data?: {
    steps: Array<{
      outcome: string;
      toolIsError: boolean;
      server: string;
      toolName: string;
      failureCode: string | null;
      payload: { content: string };
    }>;
  };
}

const CALL = `mutation ($input: CallToolInput!) { callTool(input: $input) {
  __typename ... on Error { code }
  ... on RecordedStepsSuccess { data { steps { outcome toolIsError server toolName failureCode payload } } } } }`;

/** The steps as the tests compare them: what every reader sees, without the private payload. */
const publicFacts = (recorded: Recorded | undefined) =>
  recorded?.data?.steps.map(({ payload: _payload, ...facts }) => facts);

describe('the MCP transport error', () => {
  it('is a cancellation only when made by forCancelledCall', () => {
    expect(McpTransportError.forCancelledCall().isCancellation()).toBe(true);
    for (const fault of [
      McpTransportError.refusedHost('ftp://x'),
      McpTransportError.transportFailure('reset'),
      McpTransportError.httpStatus(502, 'bad gateway'),
      McpTransportError.malformedResponse('not json'),
      McpTransportError.rpcError(-32603, 'internal'),
      McpTransportError.unsupportedContentType('text/html'),
      McpTransportError.missingCredential('github'),
      McpTransportError.exhaustedDeadline(100),
      McpTransportError.serverGone('process exited'),
      McpTransportError.serverUnresponsive(1_300),
      McpTransportError.refusedCredential(401),
    ]) {
      expect([fault.code, fault.isCancellation()]).toEqual([fault.code, false]);
    }
  });

  it('reads as the fault it is, whatever wording the SDK wrapped it in', () => {
    const mapped = (error: unknown) => {
      const fault = asTransportError(error, null, 'tools/call');
      return [fault.code, fault.message];
    };
    expect(mapped(new StreamableHTTPError(-1, 'Unexpected content type: text/html'))).toEqual([
      'MCP_UNSUPPORTED_CONTENT_TYPE',
      'the server answered with the unsupported content type text/html',
    ]);
    expect(mapped(new StreamableHTTPError(401, 'Error POSTing to endpoint: no'))).toEqual([
      'MCP_MISSING_CREDENTIAL',
      'the server refused the credential (HTTP 401)',
    ]);
    expect(mapped(new StreamableHTTPError(502, 'Error POSTing to endpoint: bad gateway'))).toEqual([
      'MCP_HTTP_STATUS',
      'HTTP 502: bad gateway',
    ]);
    expect(mapped(new McpError(-32603, 'MCP error -32603: internal'))).toEqual([
      'MCP_RPC_ERROR',
      'JSON-RPC error -32603: internal',
    ]);
    expect(mapped(new McpError(ErrorCode.ConnectionClosed, 'Connection closed'))).toEqual([
      'MCP_TRANSPORT_FAILURE',
      'the server closed the connection',
    ]);
  });

  it('clips remote text to 200 characters and removes control characters', () => {
    const fault = McpTransportError.httpStatus(500, `bad\u0000\u001b[31m${'x'.repeat(500)}`);
    const remote = fault.message.slice('HTTP 500: '.length);
    expect(remote.length).toBe(200);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: checking that none are left
    expect(remote).not.toMatch(/[\u0000-\u001f]/);
  });
});

describe.each(backendNames)('calling MCP tools inside a run (%s)', (backend) => {
  let api: TestApi;
  let http: HttpToolServer;
  const logs = mkdtempSync(join(tmpdir(), 'runledger-mcp-'));
  const cancelLog = join(logs, 'cancelled.log');
  const startLog = join(logs, 'started.log');
  const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n') : []);

  const mutate = <T>(query: string, variables: Record<string, unknown>) => api.query<T>(query, variables);
  const register = (input: Record<string, unknown>) =>
    mutate('mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename } }', {
      input,
    });
  /** Each run gets a configuration of its own, so that its counts are its own whatever ran before. */
  const configurationOf = new Map<string, string>();
  const startRun = async () => {
    const configuration = `mcp-${crypto.randomUUID()}`;
    const uuid =
      (
        await mutate<{ startRun: { data: { uuid: string } } }>(
          'mutation ($c: String!) { startRun(input: { configuration: $c }) { ... on StartRunSuccess { data { uuid } } } }',
          { c: configuration },
        )
      ).data?.startRun.data.uuid ?? '';
    configurationOf.set(uuid, configuration);
    return uuid;
  };
  const call = async (
    runUuid: string,
    server: string,
    tool: string,
    args: Record<string, unknown> = {},
    timeoutMs = 10_000,
  ) =>
    (
      await mutate<{ callTool: Recorded }>(CALL, {
        input: { runUuid, server, toolName: tool, arguments: args, timeoutMs },
      })
    ).data?.callTool;
  /** The outcome counts of one server within one run's configuration. */
  const serverCounts = async (server: string, run: string) =>
    (
      await mutate<{ toolOutcomeStats: { groups: Array<{ counts: Record<string, number | null> }> } }>(
        'query ($s: String!, $c: String!) { toolOutcomeStats(groupBy: [SERVER], filter: { servers: [$s], configurations: [$c] }) { groups { counts { ok failed cancelled total failureRate } } } }',
        { s: server, c: configurationOf.get(run) },
      )
    ).data?.toolOutcomeStats.groups[0]?.counts;

  beforeAll(async () => {
    api = await openTestApi(backend);
    http = await startHttpToolServer();
    await register({ identifier: 'http-tools', transport: 'STREAMABLE_HTTP', url: http.url });
    await register({
      identifier: 'stdio-tools',
      transport: 'STDIO',
      command: STDIO_TOOL_SERVER[0],
      args: [...STDIO_TOOL_SERVER.slice(1), '--cancel-log', cancelLog, '--start-log', startLog],
    });
    await register({ identifier: 'down', transport: 'STREAMABLE_HTTP', url: 'http://127.0.0.1:9/mcp' });
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await api?.dispose();
  });

  it.each(['http-tools', 'stdio-tools'])(
    'records ok, isError, a throw and a missed deadline on %s, each failure with its code',
    async (server) => {
      const run = await startRun();
      expect(publicFacts(await call(run, server, 'echo', { text: 'hi' }))).toEqual([
        { outcome: 'OK', toolIsError: false, server, toolName: 'echo', failureCode: null },
      ]);
      const failed = await call(run, server, 'fail');
      expect(failed?.data?.steps[0]).toMatchObject({
        outcome: 'FAILED',
        toolIsError: true,
        failureCode: 'TOOL_ERROR',
        payload: { content: 'the tool reports a failure' },
      });
      expect((await call(run, server, 'throws'))?.data?.steps[0]).toMatchObject({
        outcome: 'FAILED',
        toolIsError: true,
        failureCode: 'TOOL_ERROR',
      });
      // Past its deadline a call failed: it was not cancelled by anyone.
      expect((await call(run, server, 'slow', { ms: 5_000 }, 300))?.data?.steps[0]).toMatchObject({
        outcome: 'FAILED',
        toolIsError: true,
        failureCode: 'MCP_DEADLINE_EXHAUSTED',
        payload: { content: 'no answer within 300 ms' },
      });
      expect(await serverCounts(server, run)).toEqual({
        ok: 1,
        failed: 3,
        cancelled: 0,
        total: 4,
        failureRate: 0.75,
      });
    },
    60_000,
  );

  it.each(['http-tools', 'stdio-tools'])(
    'cuts a slow call on %s off when the run is cancelled: CANCELLED, long before the tool would answer',
    async (server) => {
      const run = await startRun();
      const before = await serverCounts(server, run);
      const started = () => (server === 'http-tools' ? http.started : lines(startLog)).length;
      const startedBefore = started();
      const sent = Date.now();
      const pending = call(run, server, 'slow', { ms: 30_000 }, 60_000);
      // Cancelled once the server is working on the call, whatever starting it took.
      await expect.poll(started, { timeout: 20_000 }).toBeGreaterThan(startedBefore);
      const cancel = await mutate<{ cancelRun: { __typename: string; data: { status: string } } }>(
        'mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename ... on CancelRunSuccess { data { status } } } }',
        { u: run },
      );
      expect(cancel.data?.cancelRun.data.status).toBe('CANCELLED');
      const recorded = await pending;
      expect(publicFacts(recorded)).toEqual([
        { outcome: 'CANCELLED', toolIsError: true, server, toolName: 'slow', failureCode: null },
      ]);
      // Cut off, not answered: the tool's own answer would have come after 30 s.
      expect(recorded?.data?.steps[0]?.payload.content).toBe('the call was cancelled');
      expect(Date.now() - sent).toBeLessThan(30_000);
      // The server was told: MCP's cancellation reached it.
      await expect
        .poll(() => (server === 'http-tools' ? http.cancellations : lines(cancelLog)))
        .toContain('slow');
      const after = await serverCounts(server, run);
      expect(after?.cancelled).toBe((before?.cancelled ?? 0) + 1);
      // A cancel never moves the failure rate.
      expect(after?.failureRate).toBe(before?.failureRate ?? null);
      // And the run, now terminal, takes no new call.
      expect(await call(run, server, 'echo', { text: 'late' })).toMatchObject({
        __typename: 'RunTerminalError',
        code: 'RUN_TERMINAL',
      });
    },
    60_000,
  );

  it.each(['http-tools', 'stdio-tools'])(
    'records the answer of a tool reading a binary file on %s, repaired, with its outcome',
    async (server) => {
      const run = await startRun();
      expect(publicFacts(await call(run, server, 'binary'))).toEqual([
        { outcome: 'OK', toolIsError: false, server, toolName: 'binary', failureCode: null },
      ]);
      const [row] = await api.database.handle.db.select().from(runs).where(eq(runs.uuid, run));
      const [step] = await api.database.handle.db
        .select()
        .from(runSteps)
        .where(eq(runSteps.runId, row?.id ?? 0));
      expect(step?.payload.content).toBe('\uFFFDPNG\r\n\uFFFD\uFFFD');
      expect(step?.metadata.repairedCharacters).toBe(3);
    },
    60_000,
  );

  it('keeps one process per stdio server; a changed server gets a new one and the old one stops', async () => {
    const identifier = `pids-${crypto.randomUUID().slice(0, 8)}`;
    const args = [...STDIO_TOOL_SERVER.slice(1)];
    await register({ identifier, transport: 'STDIO', command: STDIO_TOOL_SERVER[0], args });
    const run = await startRun();
    const pid = async () => Number((await call(run, identifier, 'pid'))?.data?.steps[0]?.payload.content);
    const alive = (id: number) => {
      try {
        process.kill(id, 0);
        return true;
      } catch {
        return false;
      }
    };
    const first = await pid();
    expect(first).toBeGreaterThan(0);
    expect(await pid()).toBe(first);
    const updated = await mutate<{ updateMcpServer: { __typename: string } }>(
      'mutation ($input: McpServerInput!) { updateMcpServer(input: $input) { __typename } }',
      {
        input: {
          identifier,
          transport: 'STDIO',
          command: STDIO_TOOL_SERVER[0],
          args: [...args, '--changed'],
        },
      },
    );
    expect(updated.data?.updateMcpServer.__typename).toBe('UpdateMcpServerSuccess');
    await expect.poll(() => alive(first), { timeout: 10_000 }).toBe(false);
    const second = await pid();
    expect(second).not.toBe(first);
    expect(alive(second)).toBe(true);
  }, 60_000);

  it('takes a failure code from a recording client: with FAILED only, and well-formed', async () => {
    const run = await startRun();
    const record = (outcome: string, failureCode: unknown) =>
      mutate<{
        recordToolResult: {
          __typename: string;
          code?: string;
          field?: string;
          data?: { steps: Array<{ failureCode: string | null }> };
        };
      }>(
        `mutation ($input: RecordToolResultInput!) { recordToolResult(input: $input) {
          __typename ... on Error { code } ... on InvalidInputError { field }
          ... on RecordedStepsSuccess { data { steps { failureCode } } } } }`,
        {
          input: {
            runUuid: run,
            toolName: 'search',
            round: 0,
            durationMs: 5,
            result: { content: 'upstream said 502', outcome, failureCode },
          },
        },
      );
    expect((await record('FAILED', 'UPSTREAM_502')).data?.recordToolResult.data?.steps).toEqual([
      { failureCode: 'UPSTREAM_502' },
    ]);
    expect((await record('FAILED', null)).data?.recordToolResult.data?.steps).toEqual([
      { failureCode: null },
    ]);
    for (const [outcome, code, refusal] of [
      ['OK', 'UPSTREAM_502', 'FAILURE_CODE_WITHOUT_FAILURE'],
      ['CANCELLED', 'UPSTREAM_502', 'FAILURE_CODE_WITHOUT_FAILURE'],
      ['FAILED', 'upstream', 'FAILURE_CODE_INVALID'],
      ['FAILED', `X${'Y'.repeat(64)}`, 'FAILURE_CODE_INVALID'],
      ['FAILED', '', 'FAILURE_CODE_INVALID'],
    ] as const) {
      expect((await record(outcome, code)).data?.recordToolResult).toEqual({
        __typename: 'InvalidInputError',
        code: refusal,
        field: 'result.failureCode',
      });
    }
    const steps = await mutate<{ run: { steps: { edges: unknown[] } } }>(
      'query ($u: String!) { run(uuid: $u) { steps { edges { cursor } } } }',
      { u: run },
    );
    expect(steps.data?.run.steps.edges).toHaveLength(2);
  });

  it('records a server that answers HTML as MCP_UNSUPPORTED_CONTENT_TYPE, worded as that fault', async () => {
    const html = createHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>');
    });
    await new Promise<void>((resolve) => html.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = html.address() as AddressInfo;
      const identifier = `html-${crypto.randomUUID().slice(0, 8)}`;
      await register({ identifier, transport: 'STREAMABLE_HTTP', url: `http://127.0.0.1:${port}/mcp` });
      const [step] = (await call(await startRun(), identifier, 'echo', { text: 'x' }))?.data?.steps ?? [];
      expect(step).toMatchObject({
        outcome: 'FAILED',
        failureCode: 'MCP_UNSUPPORTED_CONTENT_TYPE',
        payload: { content: 'the server answered with the unsupported content type text/html' },
      });
    } finally {
      html.closeAllConnections();
      await new Promise((resolve) => html.close(resolve));
    }
  });

  it('records a call to a server that is down as FAILED', async () => {
    const run = await startRun();
    const [step] = (await call(run, 'down', 'echo', { text: 'x' }))?.data?.steps ?? [];
    expect(step).toMatchObject({
      outcome: 'FAILED',
      toolIsError: true,
      failureCode: 'MCP_TRANSPORT_FAILURE',
    });
    expect(step?.payload.content).toMatch(/^transport failure: connect ECONNREFUSED/);
    expect(await serverCounts('down', run)).toMatchObject({ failed: 1, cancelled: 0 });
  });

  it('refuses an unknown server and a non-object argument, writing nothing', async () => {
    const run = await startRun();
    expect(await call(run, 'nowhere', 'echo')).toMatchObject({
      __typename: 'InvalidInputError',
      code: 'SERVER_NOT_FOUND',
    });
    const bad = await mutate<{ callTool: Recorded }>(CALL, {
      input: { runUuid: run, server: 'http-tools', toolName: 'echo', arguments: [1, 2] },
    });
    expect(bad.data?.callTool).toMatchObject({ __typename: 'InvalidInputError', code: 'VALUE_INVALID' });
    const steps = await mutate<{ run: { steps: { edges: unknown[] } } }>(
      'query ($u: String!) { run(uuid: $u) { steps { edges { cursor } } } }',
      { u: run },
    );
    expect(steps.data?.run.steps.edges).toEqual([]);
  });

  it('lists servers with their counts and last contact, and lets only manage_servers register them', async () => {
    // A call of its own, so that the server has a contact and a count whatever ran before.
    expect((await call(await startRun(), 'http-tools', 'echo', { text: 'hi' }))?.data?.steps).toHaveLength(1);
    const list = await mutate<{
      mcpServers: Array<{
        identifier: string;
        lastContactAt: string | null;
        toolOutcomeCounts: { total: number };
      }>;
    }>('{ mcpServers { identifier lastContactAt toolOutcomeCounts { total } } }', {});
    const http = list.data?.mcpServers.find((s) => s.identifier === 'http-tools');
    expect(http?.lastContactAt).not.toBeNull();
    expect(http?.toolOutcomeCounts.total).toBeGreaterThan(0);
    const refused = await api.query(
      'mutation { registerMcpServer(input: { identifier: "x", transport: STDIO, command: "sh" }) { __typename ... on ForbiddenError { code permission } } }',
      {},
      { actor: 'eve', permissions: ['record', 'read_own_runs'] },
    );
    expect(refused.data?.registerMcpServer).toEqual({
      __typename: 'ForbiddenError',
      code: 'FORBIDDEN',
      permission: 'MANAGE_SERVERS',
    });
  });
});
