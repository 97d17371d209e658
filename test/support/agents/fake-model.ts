import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// Erasable TypeScript only: the Node 22 capture runner imports this file with Node's type stripping.

/**
 * A fake OpenAI-compatible model (`POST /v1/chat/completions`, streaming and
 * not) that plays one scripted agent turn per scenario: the first call asks
 * for the scenario's tool, the call after a tool result answers in text. The
 * scenario is read from the user's message (`scenario:<name>`), so every
 * library's own client can talk to it unchanged.
 */

export type Scenario = 'ok' | 'tool-error' | 'thrown' | 'cancel-call' | 'cancel-run';

export const SCENARIOS: readonly Scenario[] = ['ok', 'tool-error', 'thrown', 'cancel-call', 'cancel-run'];

/** The tool each scenario's first turn asks for, and its arguments. */
export const TOOL_CALLS: Record<Scenario, { tool: string; args: Record<string, unknown> }> = {
  ok: { tool: 'echo', args: { message: 'hello' } },
  // server-everything answers isError: true for a URL it will not fetch (a protocol it refuses).
  'tool-error': {
    tool: 'gzip-file-as-resource',
    args: { name: 'notes.gz', data: 'ftp://127.0.0.1/notes.txt' },
  },
  // A tool of the agent's own whose function throws: no MCP server turns it into an isError answer.
  thrown: { tool: 'lookup_order', args: { orderId: 'A-17' } },
  'cancel-call': { tool: 'trigger-long-running-operation', args: { duration: 5, steps: 5 } },
  'cancel-run': { tool: 'echo', args: { message: 'hello' } },
};

/** The usage the model reports on each turn: the tests expect exactly these token counts. */
export const USAGE = [
  { prompt_tokens: 120, completion_tokens: 18 },
  { prompt_tokens: 180, completion_tokens: 12 },
] as const;

export const MODEL = 'fake-gpt';
export const RESPONSE_MODEL = 'fake-gpt-2026-01';

export interface ModelCall {
  scenario: Scenario;
  /** 0: the turn that asks for a tool; 1: the turn after the tool result. */
  turn: number;
  stream: boolean;
}

export interface FakeModel {
  /** The base URL an OpenAI client takes (`…/v1`). */
  baseURL: string;
  calls: ModelCall[];
  /** Called when a call has been answered (for turn 1 of cancel-run: when it started to stall). */
  onAnswered: ((call: ModelCall) => void) | undefined;
  close(): Promise<void>;
}

interface ChatRequest {
  messages?: unknown[];
  tools?: Array<{ function?: { name?: string } }>;
  stream?: boolean;
}

async function readJson(request: IncomingMessage): Promise<ChatRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequest;
}

/** The scenario the user's message names; none (a documentation example's question) plays `ok`. */
function scenarioOf(body: ChatRequest): Scenario {
  const found = /scenario:([a-z-]+)/.exec(JSON.stringify(body.messages ?? []))?.[1];
  return SCENARIOS.find((name) => name === found) ?? 'ok';
}

/** The name the client knows the tool by: libraries may prefix an MCP server's tools, or write `-` as `_`. */
function toolNameIn(body: ChatRequest, tool: string): string {
  const names = (body.tools ?? []).map((entry) => entry.function?.name ?? '');
  const plain = (name: string) => name.replaceAll('-', '_');
  return (
    names.find((name) => name === tool) ?? names.find((name) => plain(name).endsWith(plain(tool))) ?? tool
  );
}

function hasToolResult(body: ChatRequest): boolean {
  return (body.messages ?? []).some(
    (message) =>
      typeof message === 'object' && message !== null && (message as { role?: unknown }).role === 'tool',
  );
}

export async function startFakeModel(): Promise<FakeModel> {
  let counter = 0;
  const model: FakeModel = { baseURL: '', calls: [], onAnswered: undefined, close: async () => {} };
  const answer = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const body = await readJson(request);
    const scenario = scenarioOf(body);
    // A client that offers no tool gets its answer at once.
    const turn = hasToolResult(body) || (body.tools ?? []).length === 0 ? 1 : 0;
    const stream = body.stream === true;
    const call: ModelCall = { scenario, turn, stream };
    model.calls.push(call);
    counter += 1;
    const id = `chatcmpl-fake-${counter}`;
    const created = Math.floor(Date.now() / 1000);
    const usage = USAGE[turn] ?? USAGE[0];
    const usageBody = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
    const planned = TOOL_CALLS[scenario];
    const toolCall =
      turn === 0
        ? {
            id: `call_${scenario.replaceAll('-', '_')}_${counter}`,
            type: 'function',
            function: { name: toolNameIn(body, planned.tool), arguments: JSON.stringify(planned.args) },
          }
        : undefined;
    const text = turn === 0 ? null : `Done: ${scenario}.`;
    const finish = toolCall ? 'tool_calls' : 'stop';
    // The run is cancelled while the model still writes its last answer: it stalls until the client goes.
    const stall = scenario === 'cancel-run' && turn === 1;

    if (!stream) {
      if (stall) {
        model.onAnswered?.(call);
        await new Promise<void>((resolve) => {
          response.once('close', resolve);
          setTimeout(resolve, 15_000);
        });
        if (!response.writableEnded && !response.destroyed) response.destroy();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model: RESPONSE_MODEL,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: text, ...(toolCall ? { tool_calls: [toolCall] } : {}) },
              finish_reason: finish,
              logprobs: null,
            },
          ],
          usage: usageBody,
        }),
      );
      model.onAnswered?.(call);
      return;
    }

    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const chunk = (delta: Record<string, unknown>, finishReason: string | null) =>
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model: RESPONSE_MODEL,
        choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
      })}\n\n`;
    response.write(chunk({ role: 'assistant', content: toolCall ? null : '' }, null));
    if (stall) {
      response.write(chunk({ content: 'Working on it' }, null));
      model.onAnswered?.(call);
      await new Promise<void>((resolve) => {
        response.once('close', resolve);
        setTimeout(resolve, 15_000);
      });
      if (!response.writableEnded && !response.destroyed) response.destroy();
      return;
    }
    if (toolCall) {
      response.write(
        chunk(
          {
            tool_calls: [
              {
                index: 0,
                id: toolCall.id,
                type: 'function',
                function: { name: toolCall.function.name, arguments: '' },
              },
            ],
          },
          null,
        ),
      );
      response.write(
        chunk({ tool_calls: [{ index: 0, function: { arguments: toolCall.function.arguments } }] }, null),
      );
    } else {
      response.write(chunk({ content: text }, null));
    }
    response.write(chunk({}, finish));
    // The usage chunk OpenAI sends with stream_options.include_usage: sent always, clients ignore what they did not ask for.
    response.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: RESPONSE_MODEL, choices: [], usage: usageBody })}\n\n`,
    );
    response.end('data: [DONE]\n\n');
    model.onAnswered?.(call);
  };

  const server = createServer((request, response) => {
    if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: `not served: ${request.method} ${request.url}` } }));
      return;
    }
    answer(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: String(error) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  model.baseURL = `http://127.0.0.1:${port}/v1`;
  model.close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return model;
}
