import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestApi, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import {
  type EverythingHttpServer,
  everythingStdio,
  type HttpTap,
  readTapLog,
  STDIO_TAP,
  startEverythingHttp,
  startHttpTap,
} from '../support/mcp-everything.ts';
import { post, startService } from '../support/service.ts';

/**
 * The published reference server, @modelcontextprotocol/server-everything,
 * over both transports, through the public API. What the server saw is read
 * off the wire: stdio through a tap that notes every message on the pipe,
 * Streamable HTTP through a proxy that notes every request and its status.
 */

interface Step {
  outcome: string | null;
  failureCode: string | null;
  durationMs: number;
  metadata: Record<string, unknown>;
  payload: { content: string };
}
interface Called {
  __typename: string;
  code?: string;
  data?: { steps: Step[] };
}

const CALL = `mutation ($input: CallToolInput!) { callTool(input: $input) {
  __typename ... on Error { code }
  ... on RecordedStepsSuccess { data { steps { outcome failureCode durationMs metadata payload } } } } }`;

const LONG = 'trigger-long-running-operation';
const SETTINGS = { ...TEST_MCP_SETTINGS, stdioCommands: [...TEST_MCP_SETTINGS.stdioCommands, STDIO_TAP] };

/** What a transport's wire shows: the calls the server received, the cancellations, the sessions. */
interface Wire {
  /** The JSON-RPC id of each tools/call of `tool` the server received, in order. */
  callsOf(tool: string): Array<number | string>;
  /** The request ids named by the notifications/cancelled the server received (and, over HTTP, accepted). */
  cancelled(): Array<number | string>;
  /** When the cancellation of `id` reached the server; null when it did not. */
  cancelledAt(id: number | string): number | null;
  /** How many sessions were initialised on it. */
  initializations(): number;
}

function stdioWire(log: string): Wire {
  const events = () => readTapLog(log).filter((event) => event.event === 'to-server');
  const cancels = () => events().filter((event) => event.method === 'notifications/cancelled');
  return {
    callsOf: (tool) =>
      events()
        .filter((event) => event.method === 'tools/call' && event.tool === tool)
        .map((event) => event.id ?? -1),
    cancelled: () => cancels().map((event) => event.requestId ?? -1),
    cancelledAt: (id) => cancels().find((event) => event.requestId === id)?.at ?? null,
    initializations: () => events().filter((event) => event.method === 'initialize').length,
  };
}

function httpWire(tap: HttpTap): Wire {
  const posts = () => tap.requests.filter((request) => request.method === 'POST');
  // Accepted: the server answered the notification's POST with 202.
  const cancels = () =>
    posts().filter((request) => request.rpcMethod === 'notifications/cancelled' && request.status === 202);
  return {
    callsOf: (tool) =>
      posts()
        .filter((request) => request.rpcMethod === 'tools/call' && request.tool === tool)
        .map((request) => request.rpcId ?? -1),
    cancelled: () => cancels().map((request) => request.requestId ?? -1),
    cancelledAt: (id) => cancels().find((request) => request.requestId === id)?.at ?? null,
    initializations: () => posts().filter((request) => request.rpcMethod === 'initialize').length,
  };
}

/** A server of the suite: registered under `identifier`, seen through `wire`; `kill` signals its process. */
interface Served {
  identifier: string;
  wire: Wire;
  kill(signal?: NodeJS.Signals): void;
  /** Evidence that its session was ended from our side: a DELETE the server accepted, or its process gone. */
  sessionEnded(): boolean;
}

describe.each(backendNames)('calling @modelcontextprotocol/server-everything (%s)', (backend) => {
  let api: TestApi;
  const dir = mkdtempSync(join(tmpdir(), 'runledger-everything-'));
  const httpServers: EverythingHttpServer[] = [];
  const taps: HttpTap[] = [];
  let registrations = 0;

  const register = async (input: Record<string, unknown>) => {
    const result = await api.query<{ registerMcpServer: { __typename: string } }>(
      'mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename } }',
      { input },
    );
    expect(result.data?.registerMcpServer.__typename).toBe('RegisterMcpServerSuccess');
  };

  /** A fresh server-everything of the transport, registered under a name of its own. */
  const serve = async (transport: 'stdio' | 'http'): Promise<Served> => {
    registrations += 1;
    const identifier = `everything-${transport}-${registrations}`;
    if (transport === 'stdio') {
      const log = join(dir, `${identifier}.log`);
      await register({ identifier, transport: 'STDIO', ...everythingStdio(log) });
      const pids = () =>
        readTapLog(log)
          .filter((event) => event.event === 'start')
          .map((event) => event.pid ?? 0);
      const exited = (pid: number) =>
        readTapLog(log).some((event) => event.event === 'exit' && event.pid === pid);
      return {
        identifier,
        wire: stdioWire(log),
        kill: (signal = 'SIGKILL') => {
          const pid = pids().at(-1);
          if (pid) process.kill(pid, signal);
        },
        sessionEnded: () => pids().length > 0 && pids().every(exited),
      };
    }
    const server = await startEverythingHttp();
    const tap = await startHttpTap(server.url);
    httpServers.push(server);
    taps.push(tap);
    await register({ identifier, transport: 'STREAMABLE_HTTP', url: tap.url });
    const sessions = () =>
      tap.requests.filter((request) => request.rpcMethod === 'initialize' && request.status === 200).length;
    return {
      identifier,
      wire: httpWire(tap),
      kill: (signal) => server.kill(signal),
      sessionEnded: () =>
        sessions() > 0 &&
        tap.requests.some((request) => request.method === 'DELETE' && request.status === 200) &&
        server.output().includes('Received session termination request'),
    };
  };

  const startRun = async () =>
    (
      await api.query<{ startRun: { data: { uuid: string } } }>(
        'mutation { startRun(input: { configuration: "everything" }) { ... on StartRunSuccess { data { uuid } } } }',
      )
    ).data?.startRun.data.uuid ?? '';
  const call = async (
    runUuid: string,
    server: string,
    tool: string,
    args: Record<string, unknown>,
    timeoutMs = 30_000,
  ) =>
    (
      await api.query<{ callTool: Called }>(CALL, {
        input: { runUuid, server, toolName: tool, arguments: args, timeoutMs, round: 0 },
      })
    ).data?.callTool;
  const cancelRun = (uuid: string) =>
    api.query('mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename } }', { u: uuid });
  const timeline = async (uuid: string) =>
    (
      await api.query<{ run: { timeline: Array<{ detail: string }> } }>(
        'query ($u: String!) { run(uuid: $u) { timeline { detail } } }',
        { u: uuid },
      )
    ).data?.run.timeline.map((entry) => entry.detail) ?? [];
  /** Waits until the server has received one more tools/call of `tool` than `before`; its JSON-RPC id. */
  const received = async (wire: Wire, tool: string, before: number) => {
    await expect.poll(() => wire.callsOf(tool).length, { timeout: 20_000 }).toBeGreaterThan(before);
    return wire.callsOf(tool)[before] ?? -1;
  };

  beforeAll(async () => {
    api = await openTestApi(backend, { mcp: SETTINGS });
  }, 60_000);
  afterAll(async () => {
    await api?.dispose();
    for (const tap of taps) await tap.close();
    for (const server of httpServers) server.kill();
  });

  describe.each(['stdio', 'http'] as const)('over %s', (transport) => {
    let shared: Served;
    beforeAll(async () => {
      shared = await serve(transport);
    }, 60_000);

    it('a fast call: OK; the session opened by the first call is stated apart, and reused', async () => {
      const run = await startRun();
      const first = await call(run, shared.identifier, 'echo', { message: 'hi' });
      const second = await call(run, shared.identifier, 'get-sum', { a: 2, b: 3 });
      expect(first?.data?.steps[0]).toMatchObject({ outcome: 'OK', failureCode: null });
      expect(first?.data?.steps[0]?.payload.content).toBe('Echo: hi');
      expect(second?.data?.steps[0]).toMatchObject({ outcome: 'OK', failureCode: null });
      expect(second?.data?.steps[0]?.payload.content).toMatch(/\b5\b/);
      // Start-up is a fact of its own on the step that opened the session, never in the next one.
      expect(first?.data?.steps[0]?.metadata.sessionStartMs).toEqual(expect.any(Number));
      expect(second?.data?.steps[0]?.metadata).not.toHaveProperty('sessionStartMs');
      expect(shared.wire.initializations()).toBe(1);
      expect((await timeline(run))[0]).toMatch(/^everything-\w+-\d+\/echo · session start \d+ ms · /);
    });

    it('invalid arguments: FAILED with TOOL_ERROR; the server words it in the payload only', async () => {
      const run = await startRun();
      const [step] = (await call(run, shared.identifier, 'get-sum', { a: 'two' }))?.data?.steps ?? [];
      expect(step).toMatchObject({ outcome: 'FAILED', failureCode: 'TOOL_ERROR' });
      expect(step?.payload.content).toMatch(/Input validation error/);
      expect(JSON.stringify(step?.metadata)).not.toMatch(/validation/i);
      expect((await timeline(run))[0]).toContain('failed: TOOL_ERROR');
    });

    it('a long operation cut off by cancelRun: CANCELLED, and the server received the cancellation', async () => {
      const run = await startRun();
      const before = shared.wire.callsOf(LONG).length;
      const pending = call(run, shared.identifier, LONG, { duration: 20, steps: 20 }, 60_000);
      const id = await received(shared.wire, LONG, before);
      await cancelRun(run);
      const [step] = (await pending)?.data?.steps ?? [];
      expect(step).toMatchObject({ outcome: 'CANCELLED', failureCode: null });
      await expect.poll(() => shared.wire.cancelled(), { timeout: 10_000 }).toContain(id);
    });

    it('a deadline: FAILED with MCP_DEADLINE_EXHAUSTED, the server told long before its operation ends', async () => {
      const run = await startRun();
      const before = shared.wire.callsOf(LONG).length;
      const sent = Date.now();
      const [step] =
        (await call(run, shared.identifier, LONG, { duration: 30, steps: 30 }, 1_500))?.data?.steps ?? [];
      const answered = Date.now();
      expect(step).toMatchObject({ outcome: 'FAILED', failureCode: 'MCP_DEADLINE_EXHAUSTED' });
      expect(step?.payload.content).toBe('no answer within 1500 ms');
      const id = await received(shared.wire, LONG, before);
      await expect.poll(() => shared.wire.cancelledAt(id), { timeout: 10_000 }).not.toBeNull();
      // Told at the deadline, not before it; and while the operation (30 s) still had most of its way to go.
      const told = shared.wire.cancelledAt(id) ?? 0;
      expect(told).toBeGreaterThanOrEqual(sent + 1_500);
      expect(told).toBeLessThan(sent + 15_000);
      expect(answered).toBeLessThan(sent + 15_000);
      expect((await timeline(run))[0]).toContain('failed: MCP_DEADLINE_EXHAUSTED');
    });

    it('a server killed mid-call: FAILED as a transport fault long before the deadline; the next call gets a new session', async () => {
      const victim = await serve(transport);
      const run = await startRun();
      expect((await call(run, victim.identifier, 'echo', { message: 'up' }))?.data?.steps[0]?.outcome).toBe(
        'OK',
      );
      const sent = Date.now();
      const pending = call(run, victim.identifier, LONG, { duration: 40, steps: 40 }, 60_000);
      await received(victim.wire, LONG, 0);
      victim.kill();
      const [step] = (await pending)?.data?.steps ?? [];
      expect(step).toMatchObject({ outcome: 'FAILED', failureCode: 'MCP_TRANSPORT_FAILURE' });
      expect(step?.payload.content).toMatch(
        /^the server (process exited|closed the (stream|connection) before it answered)$/,
      );
      // Neither the deadline (60 s) nor the operation (40 s) was waited for.
      expect(Date.now() - sent).toBeLessThan(20_000);
      if (transport === 'stdio') {
        // The process is started again for the next call.
        const again = await call(run, victim.identifier, 'echo', { message: 'again' });
        expect(again?.data?.steps[0]).toMatchObject({ outcome: 'OK' });
        expect(again?.data?.steps[0]?.metadata.sessionStartMs).toEqual(expect.any(Number));
        expect(victim.wire.initializations()).toBe(2);
      }
    }, 60_000);

    it('a server that stops answering mid-call: FAILED with MCP_SERVER_UNRESPONSIVE, long before the deadline', async () => {
      const victim = await serve(transport);
      const run = await startRun();
      expect((await call(run, victim.identifier, 'echo', { message: 'up' }))?.data?.steps[0]?.outcome).toBe(
        'OK',
      );
      const sent = Date.now();
      const pending = call(run, victim.identifier, LONG, { duration: 40, steps: 40 }, 60_000);
      await received(victim.wire, LONG, 0);
      victim.kill('SIGSTOP');
      try {
        const [step] = (await pending)?.data?.steps ?? [];
        expect(step).toMatchObject({ outcome: 'FAILED', failureCode: 'MCP_SERVER_UNRESPONSIVE' });
        expect(step?.payload.content).toMatch(/^the server stopped answering: /);
        expect(Date.now() - sent).toBeLessThan(20_000);
      } finally {
        victim.kill('SIGKILL');
      }
    }, 60_000);

    it('50 calls at once: one session, all recorded; removing the server ends the session', async () => {
      const busy = await serve(transport);
      const run = await startRun();
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, index) =>
          call(run, busy.identifier, 'get-sum', { a: index, b: 1000 }),
        ),
      );
      const steps = answers.flatMap((answer) => answer?.data?.steps ?? []);
      expect(steps.map((step) => step.outcome)).toEqual(Array(50).fill('OK'));
      expect(steps.map((step) => step.payload.content).sort()).toEqual(
        Array.from({ length: 50 }, (_, index) => `The sum of ${index} and 1000 is ${index + 1000}.`).sort(),
      );
      expect(steps.filter((step) => 'sessionStartMs' in step.metadata)).toHaveLength(1);
      expect(busy.wire.initializations()).toBe(1);
      expect(busy.wire.callsOf('get-sum')).toHaveLength(50);
      const stored = await api.query<{ run: { steps: { edges: unknown[] } } }>(
        'query ($u: String!) { run(uuid: $u) { steps(first: 100) { edges { cursor } } } }',
        { u: run },
      );
      expect(stored.data?.run.steps.edges).toHaveLength(50);

      const removed = await api.query<{ removeMcpServer: { __typename: string } }>(
        'mutation ($i: String!) { removeMcpServer(identifier: $i) { __typename } }',
        { i: busy.identifier },
      );
      expect(removed.data?.removeMcpServer.__typename).toBe('RemoveMcpServerSuccess');
      await expect.poll(() => busy.sessionEnded(), { timeout: 15_000 }).toBe(true);
    }, 60_000);
  });
});

describe('the service as it runs, on SIGTERM', () => {
  it('stops its stdio servers and ends its Streamable HTTP sessions with DELETE, then exits 0', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-everything-')), 'stdio.log');
    const server = await startEverythingHttp();
    const tap = await startHttpTap(server.url);
    const running = await startService(
      {
        PGLITE_DATA_DIR: 'memory://',
        RUNLEDGER_MCP_ALLOWED_HOSTS: '127.0.0.1:*',
        RUNLEDGER_MCP_STDIO_COMMANDS: STDIO_TAP.join(' '),
        // A slow start on a busy machine is no failure of what this test is about.
      },
      { timeoutMs: 120_000 },
    );
    try {
      const key = running.adminKey() ?? '';
      const ask = async (query: string, variables: Record<string, unknown>) =>
        (await post(running.url, key, query, variables)).body.data as Record<string, { __typename: string }>;
      const register = 'mutation ($i: McpServerInput!) { registerMcpServer(input: $i) { __typename } }';
      await ask(register, { i: { identifier: 'files', transport: 'STDIO', ...everythingStdio(log) } });
      await ask(register, { i: { identifier: 'web', transport: 'STREAMABLE_HTTP', url: tap.url } });
      const started = (
        await post(
          running.url,
          key,
          'mutation { startRun(input: { configuration: "stop" }) { ... on StartRunSuccess { data { uuid } } } }',
        )
      ).body.data as { startRun: { data: { uuid: string } } };
      for (const identifier of ['files', 'web']) {
        const called = await ask('mutation ($i: CallToolInput!) { callTool(input: $i) { __typename } }', {
          i: {
            runUuid: started.startRun.data.uuid,
            server: identifier,
            toolName: 'echo',
            arguments: { message: 'x' },
          },
        });
        expect(called.callTool?.__typename).toBe('RecordedStepsSuccess');
      }
      const [pid] = readTapLog(log)
        .filter((event) => event.event === 'start')
        .map((event) => event.pid);
      const sessionId = tap.requests.find((request) => request.sessionId)?.sessionId;
      expect(pid).toEqual(expect.any(Number));
      expect(tap.requests.some((request) => request.method === 'DELETE')).toBe(false);

      running.child.kill('SIGTERM');
      const [code] = await once(running.child, 'exit');
      expect(code).toBe(0);
      expect(readTapLog(log).some((event) => event.event === 'exit' && event.pid === pid)).toBe(true);
      expect(
        tap.requests
          .filter((request) => request.method === 'DELETE')
          .map((request) => [request.sessionId, request.status]),
      ).toEqual([[sessionId, 200]]);
    } finally {
      if (running.child.exitCode === null) running.child.kill('SIGKILL');
      await tap.close();
      server.kill();
    }
  }, 180_000);
});
