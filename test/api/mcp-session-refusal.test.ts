// A server that refuses the session id in another form than MCP's 404: the reference server
// (@modelcontextprotocol/server-everything) answers 400 "No valid session ID provided" once it has
// restarted. Such a refusal starts a new session and the call is sent once more; a 400 about
// anything else fails the call as it did.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import {
  type EverythingHttpServer,
  type HttpTap,
  startEverythingHttp,
  startHttpTap,
} from '../support/mcp-everything.ts';

interface Step {
  outcome: string;
  failureCode: string | null;
  cancelCode: string | null;
  payload: { content: string };
}
interface Called {
  __typename: string;
  data?: { steps: Step[] };
}

const CALL = `mutation ($input: CallToolInput!) { callTool(input: $input) {
  __typename ... on RecordedStepsSuccess { data { steps { outcome failureCode cancelCode payload } } } } }`;
const START = `mutation ($c: String!) { startRun(input: { configuration: $c }) { ... on StartRunSuccess { data { uuid } } } }`;
const CANCEL = 'mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename } }';
const REGISTER = 'mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename } }';

/** An HTTP answer as the fake server gives it. */
interface Answer {
  status: number;
  body: unknown;
}

/** The reference server's answer to a session id it does not know. */
const REFERENCE_REFUSAL: Answer = {
  status: 400,
  body: { jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' } },
};

/** One POST the fake server received, and its answer's status (0 until it answered). */
interface Seen {
  rpcMethod: string | null;
  sessionId: string | null;
  status: number;
}

interface FakeServer {
  url: string;
  posts: Seen[];
  /** The tools/call requests it received, in order. */
  calls(): Seen[];
  initializes(): number;
  /** Forgets every session, as a restarted server does. */
  forget(): void;
  close(): Promise<void>;
}

interface FakeOptions {
  /** What a tools/call on a session it does not know is answered. */
  refusal?: Answer;
  /** What a tools/call on a known session is answered (default: an echo of its `text`). */
  answer?: Answer;
  /** Sessions are forgotten as soon as they are made: every call is refused. */
  forgetful?: boolean;
  /** How long a tools/call waits for its answer. */
  delayMs?: number;
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

/**
 * A Streamable HTTP MCP server just large enough for these cases: it
 * initializes sessions, answers tools/call with JSON, and answers what it
 * is told to a session it does not know. Notifications are always accepted.
 */
async function startFakeServer(options: FakeOptions = {}): Promise<FakeServer> {
  const posts: Seen[] = [];
  const known = new Set<string>();
  const refusal = options.refusal ?? REFERENCE_REFUSAL;
  const http: Server = createServer(async (request, response) => {
    if (request.method === 'DELETE') return response.writeHead(200).end();
    if (request.method !== 'POST') return response.writeHead(405).end();
    const message = await readJson(request);
    const sessionId = (request.headers['mcp-session-id'] as string | undefined) ?? null;
    const rpcMethod = typeof message.method === 'string' ? message.method : null;
    const seen: Seen = { rpcMethod, sessionId, status: 0 };
    posts.push(seen);
    const send = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
      seen.status = status;
      if (body === undefined) return response.writeHead(status, headers).end();
      response
        .writeHead(status, { 'content-type': 'application/json', ...headers })
        .end(JSON.stringify(body));
    };
    const id = message.id;
    if (id === undefined) return send(202);
    if (rpcMethod === 'initialize') {
      const session = randomUUID();
      if (!options.forgetful) known.add(session);
      const params = message.params as { protocolVersion: string };
      return send(
        200,
        {
          jsonrpc: '2.0',
          id,
          result: {
            protocolVersion: params.protocolVersion,
            capabilities: { tools: {} },
            serverInfo: { name: 'fake', version: '1.0.0' },
          },
        },
        { 'mcp-session-id': session },
      );
    }
    // Answered at once: the liveness check pings a server that is quiet while a call waits.
    if (rpcMethod === 'ping') return send(200, { jsonrpc: '2.0', id, result: {} });
    if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
    if (sessionId === null || !known.has(sessionId)) {
      return send(refusal.status, { ...(refusal.body as object), id });
    }
    if (options.answer) return send(options.answer.status, { ...(options.answer.body as object), id });
    const text = (message.params as { arguments?: { text?: string } }).arguments?.text;
    return send(200, { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: `echo: ${text}` }] } });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    posts,
    calls: () => posts.filter((seen) => seen.rpcMethod === 'tools/call'),
    initializes: () => posts.filter((seen) => seen.rpcMethod === 'initialize').length,
    forget: () => known.clear(),
    close: async () => {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

describe.each(backendNames)('a server that refuses the session id (%s)', (backend) => {
  let api: TestApi;
  const everything: EverythingHttpServer[] = [];
  const taps: HttpTap[] = [];
  const fakes: FakeServer[] = [];
  let registrations = 0;

  const register = async (url: string) => {
    registrations += 1;
    const identifier = `refusing-${registrations}`;
    const result = await api.query<{ registerMcpServer: { __typename: string } }>(REGISTER, {
      input: { identifier, transport: 'STREAMABLE_HTTP', url },
    });
    expect(result.data?.registerMcpServer.__typename).toBe('RegisterMcpServerSuccess');
    return identifier;
  };
  const fake = async (options?: FakeOptions) => {
    const server = await startFakeServer(options);
    fakes.push(server);
    return { server, identifier: await register(server.url) };
  };
  const startRun = async () =>
    (
      await api.query<{ startRun: { data: { uuid: string } } }>(START, {
        c: `session-refusal-${randomUUID()}`,
      })
    ).data?.startRun.data.uuid ?? '';
  const call = async (
    runUuid: string,
    server: string,
    tool: string,
    args: Record<string, unknown>,
    timeoutMs = 20_000,
  ) =>
    (
      await api.query<{ callTool: Called }>(CALL, {
        input: { runUuid, server, toolName: tool, arguments: args, timeoutMs },
      })
    ).data?.callTool?.data?.steps[0];

  beforeAll(async () => {
    api = await openTestApi(backend);
  }, 60_000);
  afterAll(async () => {
    await api?.dispose();
    for (const tap of taps) await tap.close();
    for (const server of everything) server.kill();
    for (const server of fakes) await server.close();
  });

  it('server-everything restarted while idle (400 to the old session id): a new session, the call sent once more, OK', async () => {
    const server = await startEverythingHttp();
    everything.push(server);
    const tap = await startHttpTap(server.url);
    taps.push(tap);
    const identifier = await register(tap.url);
    const echoes = () =>
      tap.requests.filter((request) => request.method === 'POST' && request.rpcMethod === 'tools/call');
    const initializes = () =>
      tap.requests.filter((request) => request.method === 'POST' && request.rpcMethod === 'initialize');

    const run = await startRun();
    expect(await call(run, identifier, 'echo', { message: 'before' })).toMatchObject({
      outcome: 'OK',
      payload: { content: 'Echo: before' },
    });
    const [first] = initializes();
    const oldSession = echoes()[0]?.sessionId;
    expect(oldSession).toEqual(expect.any(String));

    await server.restart();
    expect(await call(run, identifier, 'echo', { message: 'after' })).toMatchObject({
      outcome: 'OK',
      failureCode: null,
      payload: { content: 'Echo: after' },
    });
    // The restarted server refused the old id with 400; one new session; the call sent on it once more.
    expect(echoes().map((request) => [request.sessionId === oldSession, request.status])).toEqual([
      [true, 200],
      [true, 400],
      [false, 200],
    ]);
    expect(initializes()).toHaveLength(2);
    expect(first?.status).toBe(200);

    // The new session is kept.
    expect(await call(run, identifier, 'echo', { message: 'again' })).toMatchObject({ outcome: 'OK' });
    expect(initializes()).toHaveLength(2);
    expect(echoes()).toHaveLength(4);
  }, 60_000);

  it.each([
    ['the reference server', REFERENCE_REFUSAL],
    [
      "the SDK's server restarted with one transport",
      {
        status: 400,
        body: { jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: Server not initialized' } },
      },
    ],
    [
      "the SDK's server, 404",
      { status: 404, body: { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' } } },
    ],
  ])('a refusal as %s: a new session, the call sent once more, OK', async (_, refusal) => {
    const { server, identifier } = await fake({ refusal });
    const run = await startRun();
    expect(await call(run, identifier, 'echo', { text: 'before' })).toMatchObject({ outcome: 'OK' });
    server.forget();
    expect(await call(run, identifier, 'echo', { text: 'after' })).toMatchObject({
      outcome: 'OK',
      payload: { content: 'echo: after' },
    });
    expect(server.calls().map((seen) => seen.status)).toEqual([200, refusal.status, 200]);
    expect(server.initializes()).toBe(2);
  });

  it('refused on the new session too: FAILED with MCP_SESSION_EXPIRED, sent twice and no more', async () => {
    const { server, identifier } = await fake({ forgetful: true });
    const run = await startRun();
    expect(await call(run, identifier, 'echo', { text: 'hi' })).toMatchObject({
      outcome: 'FAILED',
      failureCode: 'MCP_SESSION_EXPIRED',
      payload: { content: 'the server no longer knows the session (HTTP 400)' },
    });
    const calls = server.calls();
    expect(calls.map((seen) => seen.status)).toEqual([400, 400]);
    expect(calls[0]?.sessionId).not.toBe(calls[1]?.sessionId);
    expect(server.initializes()).toBe(2);
  });

  it.each([
    [
      'a JSON-RPC error about the request',
      { jsonrpc: '2.0', error: { code: -32602, message: 'Invalid params' } },
    ],
    ['a parse error', { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Invalid JSON' } }],
    ['no JSON-RPC error', { detail: 'Bad Request' }],
  ])(
    'a 400 with %s, on a known session: FAILED with MCP_HTTP_STATUS as before, not sent again',
    async (_, body) => {
      const { server, identifier } = await fake({ answer: { status: 400, body } });
      const run = await startRun();
      const step = await call(run, identifier, 'echo', { text: 'hi' });
      expect(step).toMatchObject({ outcome: 'FAILED', failureCode: 'MCP_HTTP_STATUS' });
      expect(step?.payload.content).toMatch(/^HTTP 400: /);
      expect(server.calls().map((seen) => seen.status)).toEqual([400]);
      expect(server.initializes()).toBe(1);
    },
  );

  it('a call cancelled before the refusal arrives: CANCELLED, never sent again', async () => {
    const { server, identifier } = await fake({ delayMs: 1_500 });
    const run = await startRun();
    expect(await call(run, identifier, 'echo', { text: 'before' })).toMatchObject({ outcome: 'OK' });
    server.forget();
    const pending = call(run, identifier, 'echo', { text: 'cancelled' });
    await expect.poll(() => server.calls().length, { timeout: 10_000 }).toBe(2);
    await api.query(CANCEL, { u: run });
    expect(await pending).toMatchObject({ outcome: 'CANCELLED', cancelCode: 'MCP_CALL_CANCELLED' });
    // The refusal came after the cancel: no new session, no second send.
    await expect.poll(() => server.calls()[1]?.status, { timeout: 10_000 }).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(server.calls().map((seen) => seen.status)).toEqual([200, 400]);
    expect(server.initializes()).toBe(1);
  });
});
