import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * A real MCP server, built with the SDK, with the tools the end-to-end tests
 * call: one that answers, one that answers binary text, one that answers isError, one that throws, and a
 * slow one that notices when the client cancels it.
 */
export function buildToolServer(
  onCancelled: (tool: string) => void,
  onStarted: (tool: string) => void = () => {},
): McpServer {
  const server = new McpServer({ name: 'runledger-test-tools', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Answers at once.', inputSchema: { text: z.string() } },
    async ({ text }) => ({
      content: [{ type: 'text', text: `echo: ${text}` }],
    }),
  );
  server.registerTool(
    'binary',
    { description: 'Reads a binary file: text with U+0000 and a lone surrogate.' },
    async () => ({
      content: [{ type: 'text', text: '\u0000PNG\r\n\uD800\u0000' }],
    }),
  );
  server.registerTool('fail', { description: 'Answers with isError.' }, async () => ({
    isError: true,
    content: [{ type: 'text', text: 'the tool reports a failure' }],
  }));
  server.registerTool('throws', { description: 'Throws.' }, async () => {
    throw new Error('the tool threw');
  });
  server.registerTool(
    'slow',
    {
      description: 'Answers after ms milliseconds, unless cancelled first.',
      inputSchema: { ms: z.number() },
    },
    async ({ ms }, extra) =>
      new Promise((resolve) => {
        onStarted('slow');
        const timer = setTimeout(() => resolve({ content: [{ type: 'text', text: `slept ${ms} ms` }] }), ms);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          onCancelled('slow');
          resolve({ content: [{ type: 'text', text: 'cancelled' }] });
        });
      }),
  );
  server.registerTool(
    'progress',
    {
      description: 'Works through steps of ms milliseconds each, reporting each as it begins, then answers.',
      inputSchema: { steps: z.number(), ms: z.number() },
    },
    async ({ steps, ms }, extra) => {
      const token = extra._meta?.progressToken;
      // Each step is reported as it begins, then worked on: the last report comes a step before the answer.
      for (let step = 1; step <= steps; step += 1) {
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: {
              progressToken: token,
              progress: step,
              total: steps,
              message: `step ${step} of ${steps}`,
            },
          });
        }
        await new Promise((resolve) => setTimeout(resolve, ms));
      }
      return { content: [{ type: 'text', text: token === undefined ? 'no progress token' : 'done' }] };
    },
  );
  server.registerTool(
    'ask',
    {
      description: 'Asks the user for a branch (elicitation/create), then answers with what it was told.',
      inputSchema: { message: z.string() },
    },
    async ({ message }, extra) => {
      // Sent as part of this call (on its stream over Streamable HTTP).
      const answer = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: {
            message,
            requestedSchema: {
              type: 'object',
              properties: { branch: { type: 'string', title: 'Branch' }, force: { type: 'boolean' } },
              required: ['branch'],
            },
          },
        },
        ElicitResultSchema,
      );
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
    },
  );
  server.registerTool('pid', { description: 'The process id of the server.' }, async () => ({
    content: [{ type: 'text', text: String(process.pid) }],
  }));
  server.registerTool(
    'env-names',
    { description: 'Names of the variables in its environment.' },
    async () => ({
      content: [{ type: 'text', text: Object.keys(process.env).sort().join('\n') }],
    }),
  );
  return server;
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

export interface HttpToolServer {
  url: string;
  cancellations: string[];
  /** The slow calls the server has begun working on. */
  started: string[];
  /** The Authorization header of every request that reached it ('' when none). */
  authorizations: string[];
  /** The tool calls that reached it (`tools/call` requests), by tool name. */
  calls: string[];
  /** How many sessions were initialized. */
  initializes: () => number;
  /** Stops and starts again on the same port, knowing no session: as a restarted server (or one that expired them). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** The tool server over Streamable HTTP on loopback, one session per client. */
export async function startHttpToolServer(): Promise<HttpToolServer> {
  const cancellations: string[] = [];
  const started: string[] = [];
  const authorizations: string[] = [];
  const calls: string[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let initializes = 0;
  const http: Server = createServer(async (request, response) => {
    authorizations.push(request.headers.authorization ?? '');
    try {
      const body = request.method === 'POST' ? await readBody(request) : undefined;
      const message = body as { method?: unknown; params?: { name?: unknown } } | undefined;
      if (message?.method === 'tools/call') calls.push(String(message.params?.name));
      if (message?.method === 'initialize') initializes += 1;
      const sessionId = request.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
      if (!transport && typeof sessionId === 'string') {
        // A session this server does not know: 404, as MCP's Streamable HTTP transport asks.
        response.writeHead(404, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: -32001, message: 'Session not found' },
            id: null,
          }),
        );
        return;
      }
      if (!transport) {
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            sessions.set(id, created);
          },
        });
        created.onclose = () => {
          if (created.sessionId) sessions.delete(created.sessionId);
        };
        await buildToolServer(
          (tool) => cancellations.push(tool),
          (tool) => started.push(tool),
        ).connect(created);
        transport = created;
      }
      await transport.handleRequest(request, response, body);
    } catch (error) {
      if (!response.headersSent) response.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    cancellations,
    started,
    authorizations,
    calls,
    initializes: () => initializes,
    restart: async () => {
      const known = [...sessions.values()];
      sessions.clear();
      for (const transport of known) {
        transport.onclose = undefined;
        await transport.close();
      }
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
      await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
    },
    close: async () => {
      for (const transport of sessions.values()) await transport.close();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}
