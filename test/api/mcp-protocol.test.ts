// The MCP protocol cases a real deployment hits, against real server processes built on the SDK:
// a server that restarts (or expires its sessions) while idle, one that starts slowly, one that
// prints a banner before its first message, progress while a call runs, and runledger's own shutdown.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERMISSIONS } from '../../src/domain/permissions.ts';
import { openTestApi, STDIO_TOOL_SERVER, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { type HttpToolServer, startHttpToolServer } from '../support/mcp-tool-server.ts';
import { type KeyedService, post, startKeyedService } from '../support/service.ts';
import { SseReader, subscriptionRequest } from '../support/sse.ts';

interface Step {
  outcome: string;
  toolIsError: boolean;
  failureCode: string | null;
  cancelCode: string | null;
  durationMs: number;
  metadata: Record<string, unknown>;
  payload: { content: string; progressMessage?: string };
}

interface Recorded {
  __typename: string;
  code?: string;
  data?: { steps: Step[] };
}

const CALL = `mutation ($input: CallToolInput!) { callTool(input: $input) {
  __typename ... on Error { code }
  ... on RecordedStepsSuccess { data { steps { outcome toolIsError failureCode cancelCode durationMs metadata payload } } } } }`;
const START = `mutation ($c: String!) { startRun(input: { configuration: $c }) { ... on StartRunSuccess { data { uuid } } } }`;
const CANCEL = 'mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename } }';
const REGISTER = 'mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename } }';
const COUNTS = `query ($s: String!, $c: String!) { toolOutcomeStats(groupBy: [SERVER], filter: { servers: [$s], configurations: [$c] }) {
  groups { counts { ok failed cancelled total failureRate } } } }`;
const PROGRESS_EVENTS = `subscription ($uuid: String!) { runEvents(uuid: $uuid) {
  step { sequence } progress { callId toolName server progress total message } } }`;
const STEPS = `query ($u: String!) { run(uuid: $u) { status steps { edges { node {
  outcome toolIsError failureCode cancelCode metadata } } } } }`;

describe.each(backendNames)('MCP protocol cases (%s)', (backend) => {
  let api: TestApi;
  let http: HttpToolServer;

  const ask = <T>(query: string, variables: Record<string, unknown>) => api.query<T>(query, variables);
  const register = async (input: Record<string, unknown>) =>
    expect((await ask<{ registerMcpServer: { __typename: string } }>(REGISTER, { input })).data).toEqual({
      registerMcpServer: { __typename: 'RegisterMcpServerSuccess' },
    });
  const stdio = (identifier: string, ...options: string[]) =>
    register({
      identifier,
      transport: 'STDIO',
      command: STDIO_TOOL_SERVER[0],
      args: [...STDIO_TOOL_SERVER.slice(1), ...options],
    });
  const startRun = async (configuration: string) =>
    (await ask<{ startRun: { data: { uuid: string } } }>(START, { c: configuration })).data?.startRun.data
      .uuid ?? '';
  const call = async (runUuid: string, server: string, tool: string, args = {}, timeoutMs = 10_000) =>
    (
      await ask<{ callTool: Recorded }>(CALL, {
        input: { runUuid, server, toolName: tool, arguments: args, timeoutMs },
      })
    ).data?.callTool;
  const counts = async (server: string, configuration: string) =>
    (
      await ask<{ toolOutcomeStats: { groups: Array<{ counts: Record<string, number | null> }> } }>(COUNTS, {
        s: server,
        c: configuration,
      })
    ).data?.toolOutcomeStats.groups[0]?.counts;

  beforeAll(async () => {
    api = await openTestApi(backend);
    http = await startHttpToolServer();
    await register({ identifier: 'restarting', transport: 'STREAMABLE_HTTP', url: http.url });
    await stdio('slow-start', '--start-delay-ms', '3000');
    await stdio('banner', '--banner', 'Starting server...');
    await stdio('progress-stdio');
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await api?.dispose();
  });

  it('replaces a session the server no longer knows (404 after a restart while idle): the next call is OK', async () => {
    const configuration = `restart-${crypto.randomUUID()}`;
    const run = await startRun(configuration);
    expect((await call(run, 'restarting', 'echo', { text: 'before' }))?.data?.steps[0]?.outcome).toBe('OK');
    const initializes = http.initializes();
    await http.restart();
    const after = await call(run, 'restarting', 'echo', { text: 'after' });
    expect(after?.data?.steps[0]).toMatchObject({
      outcome: 'OK',
      failureCode: null,
      payload: { content: 'echo: after' },
    });
    // A new session was started on the restarted server, once.
    expect(http.initializes()).toBe(initializes + 1);
    expect((await call(run, 'restarting', 'echo', { text: 'again' }))?.data?.steps[0]?.outcome).toBe('OK');
    expect(http.initializes()).toBe(initializes + 1);
    expect(await counts('restarting', configuration)).toMatchObject({ ok: 3, failed: 0 });
  }, 60_000);

  it('stores a call cancelled while its session was still opening as CANCELLED, its wait as sessionStartMs', async () => {
    const configuration = `slow-start-${crypto.randomUUID()}`;
    const run = await startRun(configuration);
    const pending = call(run, 'slow-start', 'echo', { text: 'hi' }, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(
      (await ask<{ cancelRun: { __typename: string } }>(CANCEL, { u: run })).data?.cancelRun.__typename,
    ).toBe('CancelRunSuccess');
    const recorded = await pending;
    expect(recorded?.__typename).toBe('RecordedStepsSuccess');
    const [step] = recorded?.data?.steps ?? [];
    expect(step).toMatchObject({
      outcome: 'CANCELLED',
      toolIsError: true,
      failureCode: null,
      cancelCode: 'MCP_CALL_CANCELLED',
      durationMs: 0,
    });
    expect(step?.metadata.sessionStartMs).toBeGreaterThanOrEqual(900);
    const stored = await ask<{ run: { status: string; steps: { edges: Array<{ node: Step }> } } }>(STEPS, {
      u: run,
    });
    expect(stored.data?.run.status).toBe('CANCELLED');
    expect(stored.data?.run.steps.edges.map((edge) => edge.node.outcome)).toEqual(['CANCELLED']);
    expect(await counts('slow-start', configuration)).toMatchObject({
      cancelled: 1,
      failed: 0,
      failureRate: null,
    });
  }, 60_000);

  it.each(['restarting', 'progress-stdio'])(
    "asks %s for progress: each report reaches the run's stream while the call runs, the last one is kept on the step",
    async (server) => {
      const run = await startRun(`progress-${crypto.randomUUID()}`);
      const open = async (key: string) =>
        new SseReader(
          await api.server.fetch(
            subscriptionRequest(
              'http://runledger.test/graphql',
              key,
              { uuid: run },
              undefined,
              PROGRESS_EVENTS,
            ),
          ),
        );
      const stream = await open(await api.keyFor());
      // The run's owner without read_payloads: how far, but not the server's words.
      const plain = await open(await api.keyFor('alice', ['read_own_runs']));
      expect((await plain.next())?.event).toBe('next');
      // The first event of a run without steps is the run itself: the stream is open.
      expect((await stream.next())?.event).toBe('next');
      const pending = call(run, server, 'progress', { steps: 4, ms: 250 });
      const reports: Array<{
        callId: string;
        toolName: string;
        server: string;
        progress: number;
        total: number;
        message: string;
      }> = [];
      let step: unknown = null;
      while (step === null) {
        const message = await stream.next();
        if (message?.event !== 'next') throw new Error(`the stream ended: ${JSON.stringify(message)}`);
        const event = (
          message.data.data as { runEvents: { step: unknown; progress: (typeof reports)[number] | null } }
        ).runEvents;
        if (event.progress) reports.push(event.progress);
        step = event.step;
      }
      await stream.close();
      const plainReports = [];
      for (;;) {
        const message = await plain.next();
        if (message?.event !== 'next') break;
        const event = (
          message.data.data as { runEvents: { step: unknown; progress: { message: unknown } | null } }
        ).runEvents;
        if (event.progress) plainReports.push(event.progress);
        if (event.step) break;
      }
      await plain.close();
      expect(plainReports.length).toBeGreaterThanOrEqual(1);
      expect(plainReports.every((report) => report.message === null)).toBe(true);
      const recorded = await pending;
      // The server had a progressToken to report on: without one it says so.
      expect(recorded?.data?.steps[0]).toMatchObject({ outcome: 'OK', payload: { content: 'done' } });
      // How far is public; the server's words are private, in the payload.
      expect(recorded?.data?.steps[0]?.metadata.progress).toEqual({ progress: 4, total: 4 });
      expect(recorded?.data?.steps[0]?.payload).toMatchObject({ progressMessage: 'step 4 of 4' });
      // Live, before the step: reports of this one call, in order.
      expect(reports.length).toBeGreaterThanOrEqual(2);
      expect(new Set(reports.map((report) => report.callId)).size).toBe(1);
      expect(reports[0]).toMatchObject({ toolName: 'progress', server, total: 4 });
      expect(reports.map((report) => report.progress)).toEqual(
        [...reports.map((report) => report.progress)].sort(),
      );
      expect(reports.at(-1)?.message).toMatch(/^step \d of 4$/);
    },
    60_000,
  );

  it('fails a call to a server that prints a banner without a newline as MCP_MALFORMED_RESPONSE, long before the deadline', async () => {
    const run = await startRun(`banner-${crypto.randomUUID()}`);
    const deadline = 20_000;
    const recorded = await call(run, 'banner', 'echo', { text: 'hi' }, deadline);
    const [step] = recorded?.data?.steps ?? [];
    expect(step).toMatchObject({ outcome: 'FAILED', failureCode: 'MCP_MALFORMED_RESPONSE' });
    expect(step?.payload.content).toMatch(/not JSON-RPC/);
    // What the call waited is on record: starting the process, not the deadline.
    expect(Number(step?.metadata.sessionStartMs)).toBeLessThan(deadline / 2);
  }, 60_000);

  describe('elicitation: a server asks a person mid-call', () => {
    const carol = { actor: 'carol', permissions: ['approve_runs' as const, 'read_payloads' as const] };
    const INBOX = '{ openRequests { uuid source state prompt schema run { uuid status } } }';
    const PROVIDE = `mutation ($input: ProvideInputInput!) { provideInput(input: $input) {
      __typename ... on Error { code } ... on RequestRecordedSuccess { data { request { state } run { status } } } } }`;
    const REQUEST = 'query ($u: String!) { humanRequest(uuid: $u) { state decidedBy } }';
    interface Asked {
      uuid: string;
      source: string;
      prompt: string;
      schema: Record<string, unknown>;
      run: { uuid: string; status: string };
    }
    /** The request the server's question became, once it is in carol's inbox. */
    const asked = async (run: string): Promise<Asked> => {
      for (let tries = 0; tries < 200; tries += 1) {
        const inbox = await api.query<{ openRequests: Asked[] }>(INBOX, {}, carol);
        const found = inbox.data?.openRequests.find((request) => request.run.uuid === run);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error("the server's question never reached the inbox");
    };
    const provide = (run: string, request: string, input: Record<string, unknown>) =>
      api.query<{
        provideInput: { __typename: string; data?: { request: { state: string }; run: { status: string } } };
      }>(PROVIDE, { input: { runUuid: run, request, ...input } }, carol);

    beforeAll(async () => {
      await register({ identifier: 'asking-http', transport: 'STREAMABLE_HTTP', url: http.url });
      await stdio('asking-stdio');
    });

    it.each(['asking-http', 'asking-stdio'])(
      '%s: the run waits for input, the answer goes back as accept, the deadline stops meanwhile',
      async (server) => {
        const run = await startRun(`elicit-${crypto.randomUUID()}`);
        // The session first: starting a stdio server's process on a loaded machine may take longer than
        // the short deadline below, which is about the call, not the start.
        expect((await call(run, server, 'echo', { text: 'ready' }, 20_000))?.data?.steps[0]?.outcome).toBe(
          'OK',
        );
        // A deadline of 1.5 s, and an answer after 2 s: the wait for a person is not the call's time.
        const pending = call(run, server, 'ask', { message: 'Which branch?' }, 1_500);
        const request = await asked(run);
        expect(request).toMatchObject({
          source: 'MCP',
          prompt: 'Which branch?',
          run: { status: 'WAITING_FOR_INPUT' },
        });
        expect(request.schema).toMatchObject({ required: ['branch'] });
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        // Values that do not match the server's schema are refused, and the call still waits.
        expect(
          (await provide(run, request.uuid, { values: { force: true } })).data?.provideInput.__typename,
        ).toBe('InvalidInputError');
        const answered = await provide(run, request.uuid, { values: { branch: 'main', force: false } });
        expect(answered.data?.provideInput.data).toEqual({
          request: { state: 'ANSWERED' },
          run: { status: 'RUNNING' },
        });
        const [step] = (await pending)?.data?.steps ?? [];
        expect(step?.outcome).toBe('OK');
        expect(JSON.parse(step?.payload.content ?? '{}')).toEqual({
          action: 'accept',
          content: { branch: 'main', force: false },
        });
      },
      30_000,
    );

    it('a decline goes back as decline; a cancel of the run as cancel, the call then CANCELLED and the request with it', async () => {
      const configuration = `elicit-${crypto.randomUUID()}`;
      const run = await startRun(configuration);
      // A message over the prompt's limit is cut, and a pair of surrogates cut in half is no lone half.
      const long = `${'x'.repeat(3_999)}😀 and more`;
      const declined = call(run, 'asking-http', 'ask', { message: long });
      const question = await asked(run);
      expect(question.prompt).toBe(`${'x'.repeat(3_999)}\ufffd`);
      await provide(run, question.uuid, { decline: true });
      expect(JSON.parse((await declined)?.data?.steps[0]?.payload.content ?? '{}')).toEqual({
        action: 'decline',
      });

      const cancelled = call(run, 'asking-stdio', 'ask', { message: 'Again?' });
      const request = await asked(run);
      expect(
        (await ask<{ cancelRun: { __typename: string } }>(CANCEL, { u: run })).data?.cancelRun.__typename,
      ).toBe('CancelRunSuccess');
      const [step] = (await cancelled)?.data?.steps ?? [];
      expect(step).toMatchObject({ outcome: 'CANCELLED', cancelCode: 'MCP_CALL_CANCELLED' });
      expect(
        (await api.query<{ humanRequest: { state: string } }>(REQUEST, { u: request.uuid }, carol)).data
          ?.humanRequest.state,
      ).toBe('CANCELLED');
      // Neither the decline nor the cancel is a failure of the server.
      expect(await counts('asking-stdio', configuration)).toMatchObject({
        failed: 0,
        cancelled: 1,
        failureRate: null,
      });
      expect(await counts('asking-http', configuration)).toMatchObject({ ok: 1, failed: 0 });
    }, 30_000);
  });
});

describe.each(backendNames)('a call on the wire when runledger stops (%s)', (backend) => {
  let service: KeyedService<'agent'>;
  let http: HttpToolServer;

  beforeAll(async () => {
    http = await startHttpToolServer();
    service = await startKeyedService(
      backend,
      { agent: PERMISSIONS },
      { RUNLEDGER_MCP_ALLOWED_HOSTS: '127.0.0.1:*' },
    );
    const { body } = await post(service.running.url, service.keys.agent, REGISTER, {
      input: { identifier: 'tools', transport: 'STREAMABLE_HTTP', url: http.url },
    });
    expect(body.data).toEqual({ registerMcpServer: { __typename: 'RegisterMcpServerSuccess' } });
  }, 60_000);
  afterAll(async () => {
    await service?.dispose();
    await http?.close();
  });

  it('is cut off as CANCELLED MCP_SERVICE_STOPPING (no failure rate counts it), answered and stored', async () => {
    const { url } = service.running;
    const key = service.keys.agent;
    const configuration = 'stopping';
    const started = await post(url, key, START, { c: configuration });
    const run = (started.body.data as { startRun: { data: { uuid: string } } }).startRun.data.uuid;
    const ok = await post(url, key, CALL, {
      input: { runUuid: run, server: 'tools', toolName: 'echo', arguments: { text: 'first' } },
    });
    expect(JSON.stringify(ok.body)).toContain('"outcome":"OK"');
    const pending = post(url, key, CALL, {
      input: {
        runUuid: run,
        server: 'tools',
        toolName: 'slow',
        arguments: { ms: 60_000 },
        timeoutMs: 120_000,
      },
    });
    await expect.poll(() => http.started.length, { timeout: 20_000 }).toBeGreaterThan(0);
    const exited = new Promise((resolve) => service.running.child.once('exit', resolve));
    service.running.child.kill('SIGTERM');
    // The client is answered before the process goes: its call was cut off by the stop, not failed.
    const answer = (await pending).body.data as { callTool: Recorded };
    expect(answer.callTool.__typename).toBe('RecordedStepsSuccess');
    expect(answer.callTool.data?.steps[0]).toMatchObject({
      outcome: 'CANCELLED',
      toolIsError: true,
      failureCode: null,
      cancelCode: 'MCP_SERVICE_STOPPING',
      payload: { content: 'the call was cut off because runledger stopped' },
    });
    await exited;
    // The server was told (notifications/cancelled), and the step is stored.
    expect(http.cancellations).toContain('slow');
    const database = await service.openDatabase();
    try {
      const rows = await database.db.execute<{ outcome: string; code: string | null; status: string }>(
        `select s.tool_outcome as outcome, s.metadata->>'cancelCode' as code, r.status
           from run_steps s join runs r on r.id = s.run_id where r.uuid = '${run}' order by s.sequence`,
      );
      const list = (rows as unknown as { rows?: unknown[] }).rows ?? (rows as unknown as unknown[]);
      // The run stays open: the agent may go on through another instance.
      expect(list).toEqual([
        { outcome: 'ok', code: null, status: 'running' },
        { outcome: 'cancelled', code: 'MCP_SERVICE_STOPPING', status: 'running' },
      ]);
    } finally {
      await database.close();
    }
  }, 90_000);
});
