// An MCP server is an untrusted peer: the schema of its elicitation/create meets the same allow-list as
// requestInput's. The SDK alone would drop a `pattern` or an `allOf` and ask without it; runledger
// sees the schema as sent, answers `cancel` and stores nothing, and the call goes on at once.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { type ElicitRequestFormParams, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { selectRows } from '../../src/db/connection.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

/** A server with one tool: it asks a person with the schema it is given, and answers what it was told. */
function askingServer(): McpServer {
  const server = new McpServer({ name: 'runledger-test-asking', version: '1.0.0' });
  server.registerTool(
    'ask-with',
    { description: 'Asks with the given schema (JSON).', inputSchema: { schema: z.string() } },
    async ({ schema }, extra) => {
      const requestedSchema = JSON.parse(schema) as ElicitRequestFormParams['requestedSchema'];
      const answer = await extra.sendRequest(
        { method: 'elicitation/create', params: { message: 'Which region?', requestedSchema } },
        ElicitResultSchema,
      );
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
    },
  );
  return server;
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

/** The server over Streamable HTTP on loopback, a session per client. */
async function startAskingServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http: Server = createServer(async (request, response) => {
    const body = request.method === 'POST' ? await readBody(request) : undefined;
    const id = request.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (!transport) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, created);
        },
      });
      await askingServer().connect(created);
      transport = created;
    }
    await transport.handleRequest(request, response, body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      for (const transport of sessions.values()) await transport.close();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

const CALL = `mutation ($input: CallToolInput!) { callTool(input: $input) {
  __typename ... on Error { code }
  ... on RecordedStepsSuccess { data { steps { outcome payload } } } } }`;

interface Called {
  callTool: {
    __typename: string;
    data?: { steps: Array<{ outcome: string; payload: { content: string } }> };
  };
}

describe.each(backendNames)('elicitation: the schema an MCP server sends (%s)', (backend) => {
  const carol = { actor: 'carol', permissions: ['approve_runs' as const, 'read_payloads' as const] };
  let api: TestApi;
  let server: { url: string; close: () => Promise<void> };

  const startRun = async () =>
    (
      await api.query<{ startRun: { data: { uuid: string } } }>(
        'mutation { startRun(input: { configuration: "elicit-schemas" }) { ... on StartRunSuccess { data { uuid } } } }',
      )
    ).data?.startRun.data.uuid ?? '';
  const askWith = (run: string, schema: unknown) =>
    api.query<Called>(CALL, {
      input: {
        runUuid: run,
        server: 'asking',
        toolName: 'ask-with',
        arguments: { schema: JSON.stringify(schema) },
        timeoutMs: 20_000,
      },
    });
  const requestsOf = async (run: string) =>
    (
      await selectRows<{ count: number }>(
        api.db,
        sql`select count(*)::int as count from human_requests h join runs r on r.id = h.run_id
             where r.uuid = ${run}`,
      )
    )[0]?.count;

  beforeAll(async () => {
    api = await openTestApi(backend);
    server = await startAskingServer();
    const registered = await api.query<{ registerMcpServer: { __typename: string } }>(
      'mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename } }',
      { input: { identifier: 'asking', transport: 'STREAMABLE_HTTP', url: server.url } },
    );
    expect(registered.data?.registerMcpServer.__typename).toBe('RegisterMcpServerSuccess');
  }, 60_000);
  afterAll(async () => {
    await api?.dispose();
    await server?.close();
  });

  it.each([
    [
      'the ReDoS schema (allOf with a pattern)',
      {
        type: 'object',
        properties: { a: { type: 'string' } },
        allOf: [{ properties: { a: { pattern: '^([a-z]+ ?)*$' } } }],
      },
    ],
    [
      'a pattern in a field',
      { type: 'object', properties: { a: { type: 'string', pattern: '^([a-z]+ ?)*$' } } },
    ],
    [
      'a remote $ref at the root',
      { type: 'object', properties: { a: { type: 'string' } }, $ref: 'https://example.com/s' },
    ],
    [
      'additionalProperties with a pattern',
      {
        type: 'object',
        properties: { a: { type: 'string' } },
        additionalProperties: { type: 'string', pattern: '^(a+)+$' },
      },
    ],
  ])(
    '%s: answered cancel at once, nothing stored, the call OK',
    async (_name, schema) => {
      const run = await startRun();
      const started = performance.now();
      const called = await askWith(run, schema);
      expect(performance.now() - started).toBeLessThan(15_000);
      const [step] = called.data?.callTool.data?.steps ?? [];
      expect(step?.outcome).toBe('OK');
      expect(JSON.parse(step?.payload.content ?? '{}')).toEqual({ action: 'cancel' });
      expect(await requestsOf(run)).toBe(0);
    },
    30_000,
  );

  it('a schema within the subset becomes a request: several titled choices, answered as a list', async () => {
    const run = await startRun();
    const schema = {
      type: 'object',
      properties: {
        regions: {
          type: 'array',
          title: 'Regions',
          minItems: 1,
          items: {
            anyOf: [
              { const: 'eu', title: 'Europe' },
              { const: 'us', title: 'United States' },
            ],
          },
        },
      },
      required: ['regions'],
    };
    const pending = askWith(run, schema);
    let request: { uuid: string; schema: unknown } | undefined;
    for (let tries = 0; tries < 300 && !request; tries += 1) {
      const inbox = await api.query<{
        openRequests: Array<{ uuid: string; schema: unknown; run: { uuid: string } }>;
      }>('{ openRequests { uuid schema run { uuid } } }', {}, carol);
      request = inbox.data?.openRequests.find((entry) => entry.run.uuid === run);
      if (!request) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(request?.schema).toEqual(schema);
    const provided = await api.query<{ provideInput: { __typename: string } }>(
      'mutation ($input: ProvideInputInput!) { provideInput(input: $input) { __typename } }',
      { input: { runUuid: run, request: request?.uuid, values: { regions: ['us', 'eu'] } } },
      carol,
    );
    expect(provided.data?.provideInput.__typename).toBe('RequestRecordedSuccess');
    const [step] = (await pending).data?.callTool.data?.steps ?? [];
    expect(JSON.parse(step?.payload.content ?? '{}')).toEqual({
      action: 'accept',
      content: { regions: ['us', 'eu'] },
    });
  }, 30_000);
});
