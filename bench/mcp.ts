import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../src/domain/mcp-server.ts';
import { McpPolicy } from '../src/mcp/outbound-policy.ts';
import { McpSessions } from '../src/mcp/sessions.ts';
import { callOnSession } from '../src/mcp/tool-adapter.ts';
import {
  EVERYTHING_SERVER,
  type EverythingHttpServer,
  startEverythingHttp,
} from '../test/support/mcp-everything.ts';
import { quantile, table } from './support.ts';

/**
 * MCP calls as runledger makes them (one kept session per server, the
 * adapter's checks and mapping), against a baseline in the same run: a bare
 * SDK client on one connection to the same server. The published
 * server-everything, over stdio and Streamable HTTP. Figures: call latency,
 * session start, deadline precision (how far past timeoutMs a call returns),
 * and how soon a call fails when its server is killed mid-call.
 * BENCH_MCP_CALLS sets the number of calls per series (default 200).
 */
const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 200);
const DEADLINES = Math.max(5, Math.round(CALLS / 20));
const KILLS = 3;
const DEADLINE_MS = 500;

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const ms = (value: number) => Math.round(value * 10) / 10;

function stdioServer(): McpServerConfig {
  return {
    identifier: 'bench-stdio',
    transport: 'stdio',
    url: null,
    command: process.execPath,
    args: [EVERYTHING_SERVER, 'stdio'],
    headers: [],
  };
}

function httpServer(url: string): McpServerConfig {
  return {
    identifier: 'bench-http',
    transport: 'streamable-http',
    url,
    command: null,
    args: [],
    headers: [],
  };
}

const policy = new McpPolicy({
  allowedHosts: ['127.0.0.1:*'],
  stdioCommands: [[process.execPath, EVERYTHING_SERVER]],
  stdioEnv: [],
});

function sdkTransport(server: McpServerConfig): Transport {
  return server.transport === 'stdio'
    ? new StdioClientTransport({ command: server.command ?? '', args: [...server.args], stderr: 'ignore' })
    : new StreamableHTTPClientTransport(new URL(server.url ?? ''));
}

interface Series {
  start: number;
  latencies: number[];
  overshoots: number[];
}

/**
 * Both paths on the same server program, call for call in turn, so that the
 * machine's load falls on both alike. The baseline: a bare SDK client,
 * connected once; its deadline is the SDK's own timeout. runledger: the
 * registry's session, through the adapter.
 */
async function series(server: McpServerConfig): Promise<{ base: Series; ours: Series }> {
  const client = new Client({ name: 'bench', version: '1' });
  const sessions = new McpSessions(policy);
  const signal = new AbortController().signal;
  const base: Series = { start: 0, latencies: [], overshoots: [] };
  const ours: Series = { start: 0, latencies: [], overshoots: [] };
  try {
    const began = performance.now();
    await client.connect(sdkTransport(server));
    base.start = performance.now() - began;
    const first = await callOnSession(
      sessions,
      server,
      'echo',
      { message: 'first' },
      { signal, timeoutMs: 30_000 },
    );
    ours.start = first.sessionStartMs ?? Number.NaN;
    for (let i = 0; i < CALLS; i += 1) {
      let t = performance.now();
      await client.callTool({ name: 'echo', arguments: { message: `m${i}` } });
      base.latencies.push(performance.now() - t);
      t = performance.now();
      const attempt = await callOnSession(
        sessions,
        server,
        'echo',
        { message: `m${i}` },
        { signal, timeoutMs: 30_000 },
      );
      if (attempt.result.outcome !== 'ok') throw new Error(`echo: ${attempt.result.content}`);
      ours.latencies.push(performance.now() - t);
    }
    const long = { name: 'trigger-long-running-operation', arguments: { duration: 5, steps: 5 } };
    for (let i = 0; i < DEADLINES; i += 1) {
      let t = performance.now();
      await client.callTool(long, undefined, { timeout: DEADLINE_MS }).catch(() => {});
      base.overshoots.push(performance.now() - t - DEADLINE_MS);
      t = performance.now();
      const attempt = await callOnSession(sessions, server, long.name, long.arguments, {
        signal,
        timeoutMs: DEADLINE_MS,
      });
      if (attempt.fault !== 'MCP_DEADLINE_EXHAUSTED') throw new Error(`deadline: ${attempt.result.content}`);
      ours.overshoots.push(performance.now() - t - DEADLINE_MS);
    }
    return { base, ours };
  } finally {
    await client.close();
    await sessions.close();
  }
}

/**
 * From the signal to the server to the failed call, KILLS times; each time a fresh server. SIGKILL: it
 * died; SIGSTOP: it stopped answering (found by the liveness pings).
 */
async function killed(transport: 'stdio' | 'http', signalName: 'SIGKILL' | 'SIGSTOP'): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < KILLS; i += 1) {
    let http: EverythingHttpServer | null = null;
    const sessions = new McpSessions(policy);
    try {
      if (transport === 'http') http = await startEverythingHttp();
      const server = http ? httpServer(http.url) : stdioServer();
      const signal = new AbortController().signal;
      await callOnSession(sessions, server, 'echo', { message: 'up' }, { signal, timeoutMs: 30_000 });
      const pid = http ? http.pid : await stdioPid(sessions, server);
      const pending = callOnSession(
        sessions,
        server,
        'trigger-long-running-operation',
        { duration: 30, steps: 30 },
        { signal, timeoutMs: 60_000 },
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      const killedAt = performance.now();
      process.kill(pid, signalName);
      const attempt = await pending;
      const expected = signalName === 'SIGKILL' ? 'MCP_TRANSPORT_FAILURE' : 'MCP_SERVER_UNRESPONSIVE';
      if (attempt.fault !== expected) throw new Error(`${signalName}: ${attempt.result.content}`);
      times.push(performance.now() - killedAt);
      if (signalName === 'SIGSTOP') process.kill(pid, 'SIGKILL');
    } finally {
      await sessions.close();
      http?.kill();
    }
  }
  return times;
}

/** The stdio server's process id, asked of the server itself (server-everything has a get-env tool). */
async function stdioPid(sessions: McpSessions, server: McpServerConfig): Promise<number> {
  const { session } = await sessions.sessionFor(sessions.specFor(server), new AbortController().signal);
  const transport = (session.client.transport ?? null) as StdioClientTransport | null;
  const pid = transport?.pid;
  if (!pid) throw new Error('no stdio process');
  return pid;
}

export async function benchMcp(): Promise<void> {
  console.log(
    `\n== mcp: server-everything, ${CALLS} echo calls and ${DEADLINES} deadlines of ${DEADLINE_MS} ms per series`,
  );
  const http = await startEverythingHttp();
  const rows: Array<Record<string, string | number>> = [];
  try {
    for (const server of [stdioServer(), httpServer(http.url)]) {
      const { base, ours } = await series(server);
      const name = server.transport;
      const p = (values: number[], q: number) => quantile(sorted(values), q);
      for (const [what, b, o] of [
        ['session start (spawn/connect + initialize)', base.start, ours.start],
        ['echo call p50', p(base.latencies, 0.5), p(ours.latencies, 0.5)],
        ['echo call p95', p(base.latencies, 0.95), p(ours.latencies, 0.95)],
        ['deadline overshoot p50', p(base.overshoots, 0.5), p(ours.overshoots, 0.5)],
        ['deadline overshoot max', p(base.overshoots, 1), p(ours.overshoots, 1)],
      ] as const) {
        rows.push({
          transport: name,
          figure: what,
          baseline_ms: ms(b),
          runledger_ms: ms(o),
          ratio: (o / b).toFixed(2),
        });
      }
    }
  } finally {
    http.kill();
  }
  for (const [transport, signalName] of [
    ['stdio', 'SIGKILL'],
    ['http', 'SIGKILL'],
    ['stdio', 'SIGSTOP'],
    ['http', 'SIGSTOP'],
  ] as const) {
    const times = sorted(await killed(transport, signalName));
    rows.push({
      transport,
      figure: `${signalName === 'SIGKILL' ? 'killed' : 'stopped'} mid-call → failed, max of ${KILLS} (budget 2000 ms)`,
      baseline_ms: 2_000,
      runledger_ms: ms(times.at(-1) ?? Number.NaN),
      ratio: ((times.at(-1) ?? Number.NaN) / 2_000).toFixed(2),
    });
  }
  table(rows);
}
