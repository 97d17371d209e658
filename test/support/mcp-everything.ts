import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { killOwned, spawnOwned } from './processes.ts';

/** One request that passed the tap: what it carried and what the server said to it. */
export interface TappedRequest {
  at: number;
  method: string;
  sessionId: string | null;
  /** The JSON-RPC method and id of a POST, and the request a cancellation names. */
  rpcMethod: string | null;
  rpcId: number | string | null;
  /** The tool a tools/call names. */
  tool: string | null;
  requestId: number | string | null;
  /** The server's status, once it answered. */
  status: number | null;
}

export interface HttpTap {
  url: string;
  requests: TappedRequest[];
  close(): Promise<void>;
}

async function readAll(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A Streamable HTTP MCP server seen from the wire: a proxy on loopback in
 * front of `target` that forwards every request unchanged, streams every
 * answer back as it comes, and notes each request. When the server's answer
 * breaks off, the client's answer breaks off too, as it would without the tap.
 */
export async function startHttpTap(target: string): Promise<HttpTap> {
  const requests: TappedRequest[] = [];
  const upstream = new URL(target);
  const http: Server = createServer(async (incoming, outgoing) => {
    const body = await readAll(incoming);
    let rpc: {
      method?: string;
      id?: number | string;
      params?: { requestId?: number | string; name?: string };
    } = {};
    try {
      if (body.length > 0) rpc = JSON.parse(body.toString('utf8'));
    } catch {}
    const seen: TappedRequest = {
      at: Date.now(),
      method: incoming.method ?? 'GET',
      sessionId: (incoming.headers['mcp-session-id'] as string | undefined) ?? null,
      rpcMethod: rpc.method ?? null,
      rpcId: rpc.id ?? null,
      tool: rpc.params?.name ?? null,
      requestId: rpc.params?.requestId ?? null,
      status: null,
    };
    requests.push(seen);
    const forward = httpRequest(
      upstream,
      { method: incoming.method, headers: { ...incoming.headers, host: upstream.host }, agent: false },
      (answer) => {
        seen.status = answer.statusCode ?? 0;
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
        answer.on('aborted', () => outgoing.destroy());
        answer.on('error', () => outgoing.destroy());
        answer.on('close', () => {
          if (!answer.complete) outgoing.destroy();
        });
      },
    );
    forward.on('error', () => outgoing.destroy());
    incoming.on('close', () => {
      if (!outgoing.writableFinished) forward.destroy();
    });
    forward.end(body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    close: async () => {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

/** A port free on loopback now. */
export async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The published server's entry point, installed as a dev dependency. */
export const EVERYTHING_SERVER = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';

export interface EverythingHttpServer {
  url: string;
  /** The process now: another one after `restart`. */
  readonly pid: number;
  /** What it printed: it notes each session it initialises and each DELETE it receives. */
  output: () => string;
  kill(signal?: NodeJS.Signals): void;
  /** Kills the process and starts a new one on the same port: it knows none of the sessions it had. */
  restart(): Promise<void>;
}

/** One server-everything process on `port`, once it listens; what it prints goes to `print`. */
async function spawnEverythingHttp(port: number, print: (text: string) => void): Promise<ChildProcess> {
  const child = spawnOwned(process.execPath, [EVERYTHING_SERVER, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    print(chunk.toString('utf8'));
  });
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      print(chunk.toString('utf8'));
      if (output.includes('listening on port')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${output}`)));
  });
  return child;
}

/** `@modelcontextprotocol/server-everything` over Streamable HTTP, as its own process on a free port. */
export async function startEverythingHttp(): Promise<EverythingHttpServer> {
  const port = await freePort();
  let output = '';
  const print = (text: string) => {
    output += text;
  };
  let child = await spawnEverythingHttp(port, print);
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get pid() {
      return child.pid ?? 0;
    },
    output: () => output,
    kill: (signal = 'SIGKILL') => {
      child.kill(signal);
    },
    restart: async () => {
      await killOwned(child);
      child = await spawnEverythingHttp(port, print);
    },
  };
}

/** The stdio tap (mcp-stdio-tap.mjs) as a program and its leading arguments: then the log, then the server. */
export const STDIO_TAP = [process.execPath, 'test/support/mcp-stdio-tap.mjs'];

/** The published server over stdio, behind the tap writing to `log`: a registration's command and args. */
export function everythingStdio(log: string): { command: string; args: string[] } {
  const [command = process.execPath, ...leading] = STDIO_TAP;
  return { command, args: [...leading, log, process.execPath, EVERYTHING_SERVER, 'stdio'] };
}

/** One line of the stdio tap's log. */
export interface TapEvent {
  at: number;
  event: 'start' | 'to-server' | 'from-server' | 'exit';
  pid?: number;
  method?: string;
  id?: number | string;
  tool?: string;
  requestId?: number | string;
  error?: number;
}

export function readTapLog(log: string): TapEvent[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as TapEvent);
}
