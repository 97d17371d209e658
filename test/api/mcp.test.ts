import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { McpTransportError } from '../../src/mcp/transport-error.ts';
import { openTestApi, STDIO_TOOL_SERVER, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { type HttpToolServer, startHttpToolServer } from '../support/mcp-tool-server.ts';

interface Recorded {
  __typename: string;
  code?: string;
  data?: { steps: Array<{ outcome: string; toolIsError: boolean; server: string; toolName: string }> };
}

const CALL = `mutation ($input: CallToolInput!) { callTool(input: $input) {
  __typename ... on Error { code }
  ... on RecordedStepsSuccess { data { steps { outcome toolIsError server toolName } } } } }`;

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
    ]) {
      expect([fault.code, fault.isCancellation()]).toEqual([fault.code, false]);
    }
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
  const cancelLog = join(mkdtempSync(join(tmpdir(), 'runledger-mcp-')), 'cancelled.log');

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
      args: [...STDIO_TOOL_SERVER.slice(1), '--cancel-log', cancelLog],
    });
    await register({ identifier: 'down', transport: 'STREAMABLE_HTTP', url: 'http://127.0.0.1:9/mcp' });
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await api?.dispose();
  });

  it.each(['http-tools', 'stdio-tools'])(
    'records ok, isError, a throw and a missed deadline on %s',
    async (server) => {
      const run = await startRun();
      expect((await call(run, server, 'echo', { text: 'hi' }))?.data?.steps).toEqual([
        { outcome: 'OK', toolIsError: false, server, toolName: 'echo' },
      ]);
      expect((await call(run, server, 'fail'))?.data?.steps[0]).toMatchObject({
        outcome: 'FAILED',
        toolIsError: true,
      });
      expect((await call(run, server, 'throws'))?.data?.steps[0]).toMatchObject({
        outcome: 'FAILED',
        toolIsError: true,
      });
      // Past its deadline a call failed: it was not cancelled by anyone.
      expect((await call(run, server, 'slow', { ms: 5_000 }, 300))?.data?.steps[0]).toMatchObject({
        outcome: 'FAILED',
        toolIsError: true,
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
    'cuts a slow call on %s off when the run is cancelled: CANCELLED, within a second',
    async (server) => {
      const run = await startRun();
      const before = await serverCounts(server, run);
      const pending = call(run, server, 'slow', { ms: 30_000 }, 60_000);
      await new Promise((resolve) => setTimeout(resolve, server === 'stdio-tools' ? 2_500 : 500));
      const cancelledAt = Date.now();
      const cancel = await mutate<{ cancelRun: { __typename: string; data: { status: string } } }>(
        'mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename ... on CancelRunSuccess { data { status } } } }',
        { u: run },
      );
      expect(cancel.data?.cancelRun.data.status).toBe('CANCELLED');
      const recorded = await pending;
      expect(Date.now() - cancelledAt).toBeLessThan(1_000);
      expect(recorded?.data?.steps).toEqual([
        { outcome: 'CANCELLED', toolIsError: true, server, toolName: 'slow' },
      ]);
      // The server was told: MCP's cancellation reached it.
      await expect
        .poll(() =>
          server === 'http-tools'
            ? http.cancellations
            : existsSync(cancelLog)
              ? readFileSync(cancelLog, 'utf8').split('\n')
              : [],
        )
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
      expect((await call(run, server, 'binary'))?.data?.steps).toEqual([
        { outcome: 'OK', toolIsError: false, server, toolName: 'binary' },
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

  it('records a call to a server that is down as FAILED', async () => {
    const run = await startRun();
    expect((await call(run, 'down', 'echo', { text: 'x' }))?.data?.steps[0]).toMatchObject({
      outcome: 'FAILED',
      toolIsError: true,
    });
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
