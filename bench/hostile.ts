import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { RequestLimits } from '../src/domain/limits.ts';
import {
  benchKey,
  freshDatabase,
  quantile,
  rssMb,
  type Service,
  startService,
  table,
  timed,
} from './support.ts';

/**
 * The service under attack, as `npm start` runs it (NODE_ENV=production, on
 * PostgreSQL): each attack runs while a prober asks /health every 20 ms on a
 * connection of its own, and the process's resident memory is read every
 * 50 ms. Printed per attack: what the service answered, the peak RSS, and
 * /health's p99 and worst latency as a ratio to its latency with no attack,
 * measured in the same run. The bar: under 512 MB, and /health within 100 ms.
 */

const RSS_BAR_MB = 512;
const HEALTH_BAR_MS = 100;

interface Probe {
  stop(): Promise<{ health: number[]; peakRssMb: number }>;
}

/**
 * /health every 20 ms (one at a time) from a process of its own, so that the
 * attack's own work in this process (building 15 MB bodies) does not count,
 * and the service's RSS every 50 ms, until stopped.
 */
function probe(service: Service): Probe {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const url = process.argv[1]; const times = []; let running = true;
       process.stdin.on('data', () => { running = false; });
       (async () => {
         // Its own first requests (a new connection, a cold fetch) are not the service's latency.
         for (let i = 0; i < 5; i++) await (await fetch(url)).arrayBuffer();
         while (running) {
           const began = performance.now();
           const response = await fetch(url).catch(() => undefined);
           await response?.arrayBuffer();
           times.push(response?.status === 200 ? performance.now() - began : -1);
           await new Promise((resolve) => setTimeout(resolve, 20));
         }
         process.stdout.write(JSON.stringify(times));
       })();`,
      new URL('/health', service.url).toString(),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += String(chunk);
  });
  let peakRssMb = rssMb(service.pid);
  const memory = setInterval(() => {
    peakRssMb = Math.max(peakRssMb, rssMb(service.pid));
  }, 50);
  return {
    stop: async () => {
      clearInterval(memory);
      const exited = once(child, 'exit');
      child.stdin?.end('stop');
      await exited;
      peakRssMb = Math.max(peakRssMb, rssMb(service.pid));
      const health = (JSON.parse(output || '[]') as number[]).map((ms) =>
        ms < 0 ? Number.POSITIVE_INFINITY : ms,
      );
      return { health, peakRssMb };
    },
  };
}

/** Statuses (and codes) of the answers, counted: `413 QUERY_TOO_LARGE ×135`. */
class Tally {
  readonly #counts = new Map<string, number>();
  add(what: string): void {
    this.#counts.set(what, (this.#counts.get(what) ?? 0) + 1);
  }
  toString(): string {
    return [...this.#counts].map(([what, n]) => `${what} ×${n}`).join(', ');
  }
}

async function answerOf(response: Response): Promise<string> {
  const text = await response.text();
  const code = /"code"\s*:\s*"([A-Z_]+)"/.exec(text)?.[1];
  return code ? `${response.status} ${code}` : String(response.status);
}

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

/** An OTLP export of `spans` empty spans in one scope, gzipped: a few KB that inflate to twice `spans` bytes. */
function emptySpansBomb(spans: number): Buffer {
  const varint = (n: number) => {
    const bytes: number[] = [];
    let value = n;
    while (value > 0x7f) {
      bytes.push((value & 0x7f) | 0x80);
      value >>>= 7;
    }
    bytes.push(value);
    return Buffer.from(bytes);
  };
  // ScopeSpans.spans (field 2), each empty: 0x12 0x00.
  const scope = Buffer.alloc(spans * 2);
  for (let i = 0; i < scope.length; i += 2) scope[i] = 0x12;
  // ResourceSpans.scope_spans (field 2), then the request's resource_spans (field 1).
  const resource = Buffer.concat([Buffer.from([0x12]), varint(scope.length), scope]);
  const request = Buffer.concat([Buffer.from([0x0a]), varint(resource.length), resource]);
  return gzipSync(request, { level: 9 });
}

interface Attack {
  name: string;
  run(service: Service, keys: { record: string; other: string }): Promise<string>;
}

const attacks: Attack[] = [
  {
    name: '135 distinct 15 MB query texts (a comment), no key',
    run: async (service) => {
      const tally = new Tally();
      const comment = 'x'.repeat(15 * 1024 * 1024);
      await timed(135, 4, async (i) => {
        tally.add(
          await answerOf(
            await post(service.url, JSON.stringify({ query: `# ${i} ${comment}\n{ __typename }` })),
          ),
        );
      });
      return tally.toString();
    },
  },
  {
    name: '2,000 distinct 99 KB texts with a syntax error, no key',
    run: async (service) => {
      const tally = new Tally();
      const comment = 'y'.repeat(RequestLimits.maxQueryBytes - 1_000);
      await timed(2_000, 8, async (i) => {
        tally.add(
          await answerOf(await post(service.url, JSON.stringify({ query: `# ${i} ${comment}\n{ runs( }` }))),
        );
      });
      return tally.toString();
    },
  },
  {
    name: '2,000 distinct 99 KB texts with a valid key (the parse cache)',
    run: async (service, keys) => {
      const tally = new Tally();
      const comment = 'z'.repeat(RequestLimits.maxQueryBytes - 1_000);
      await timed(2_000, 8, async (i) => {
        const body = JSON.stringify({ query: `# ${i} ${comment}\n{ __typename }` });
        tally.add(await answerOf(await post(service.url, body, { authorization: `Bearer ${keys.record}` })));
      });
      return tally.toString();
    },
  },
  {
    name: 'OTLP: 5 gzip bodies of 16 M empty spans each (32 MB inflated), record key',
    run: async (service, keys) => {
      const tally = new Tally();
      const bomb = emptySpansBomb(16_000_000);
      const traces = new URL('/v1/traces', service.url).toString();
      for (let i = 0; i < 5; i++) {
        const response = await fetch(traces, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-protobuf',
            'content-encoding': 'gzip',
            authorization: `Bearer ${keys.record}`,
          },
          body: new Uint8Array(bomb),
        });
        tally.add(`${response.status}`);
        await response.arrayBuffer();
      }
      return `${tally} (body ${Math.round(bomb.length / 1024)} KB)`;
    },
  },
  {
    name: 'OTLP: 10,000 root spans of one trace with cancel notices (JSON, 3 MB), record key',
    run: async (service, keys) => {
      const traceId = 'ab'.repeat(16);
      const spans = Array.from({ length: 10_000 }, (_, i) => ({
        traceId,
        spanId: (i + 1).toString(16).padStart(16, '0'),
        name: i % 2 === 0 ? 'invoke_agent bench' : 'notifications/cancelled',
        startTimeUnixNano: String(1_700_000_000_000_000_000n + BigInt(i)),
        endTimeUnixNano: String(1_700_000_000_000_000_100n + BigInt(i)),
        attributes: [
          i % 2 === 0
            ? { key: 'gen_ai.operation.name', value: { stringValue: 'invoke_agent' } }
            : { key: 'mcp.method.name', value: { stringValue: 'notifications/cancelled' } },
          { key: 'jsonrpc.request.id', value: { stringValue: String(i % 100) } },
        ],
      }));
      const body = JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans }] }] });
      const began = performance.now();
      const response = await fetch(new URL('/v1/traces', service.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.record}` },
        body,
      });
      await response.arrayBuffer();
      return `${response.status} in ${(performance.now() - began).toFixed(0)} ms (body ${Math.round(body.length / 1024)} KB)`;
    },
  },
  {
    name: '520 awaitDecision of one key (20 s each), and another key meanwhile',
    run: async (service, keys) => {
      const tally = new Tally();
      const ask = async (query: string, variables: Record<string, unknown>, key: string) =>
        (
          await post(service.url, JSON.stringify({ query, variables }), { authorization: `Bearer ${key}` })
        ).json() as Promise<{
          data?: Record<string, { data?: { uuid?: string; request?: { uuid: string } } }>;
        }>;
      const run =
        (
          await ask(
            'mutation { startRun(input: { configuration: "hostile" }) { ... on StartRunSuccess { data { uuid } } } }',
            {},
            keys.record,
          )
        ).data?.startRun?.data?.uuid ?? '';
      const request =
        (
          await ask(
            'mutation ($input: RequestApprovalInput!) { requestApproval(input: $input) { ... on RequestRecordedSuccess { data { request { uuid } } } } }',
            { input: { runUuid: run, toolName: 'deploy', server: 'ops', arguments: {}, reason: 'ship' } },
            keys.record,
          )
        ).data?.requestApproval?.data?.request?.uuid ?? '';
      const controller = new AbortController();
      const waits = Array.from({ length: 520 }, async () => {
        const response = await fetch(service.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.record}` },
          body: JSON.stringify({
            query:
              'query ($r: String!, $q: String!) { awaitDecision(runUuid: $r, request: $q, timeoutMs: 20000) { __typename } }',
            variables: { r: run, q: request },
          }),
          signal: controller.signal,
        }).catch(() => undefined);
        if (response) tally.add(await answerOf(response).catch(() => 'cut'));
      });
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const began = performance.now();
      const other = await post(
        service.url,
        JSON.stringify({ query: '{ runs(first: 1) { edges { cursor } } }' }),
        {
          authorization: `Bearer ${keys.other}`,
        },
      );
      const otherMs = performance.now() - began;
      const otherStatus = other.status;
      controller.abort();
      await Promise.all(waits);
      return `${tally}; another key's query: ${otherStatus} in ${otherMs.toFixed(0)} ms`;
    },
  },
  {
    name: '600 half-open connections, then /health on a new one',
    run: async (service) => {
      const { hostname, port } = new URL(service.url);
      const sockets: Socket[] = [];
      for (let i = 0; i < 600; i++) {
        const socket = connect(Number(port), hostname);
        socket.on('error', () => {});
        socket.write('POST /graphql HTTP/1.1\r\nHost: x\r\n');
        sockets.push(socket);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      const began = performance.now();
      const status = await new Promise<number>((resolve) => {
        httpRequest(new URL('/health', service.url), { agent: false }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        })
          .on('error', () => resolve(0))
          .end();
      });
      const ms = performance.now() - began;
      const closed = sockets.filter((socket) => socket.destroyed || socket.readableEnded).length;
      for (const socket of sockets) socket.destroy();
      return `new connection's /health: ${status} in ${ms.toFixed(0)} ms; ${closed} of 600 half-open closed to make room`;
    },
  },
  {
    name: '20,000 requests for missing assets with long names',
    run: async (service) => {
      const tally = new Tally();
      await timed(20_000, 16, async (i) => {
        const response = await fetch(new URL(`/assets/missing-${i}-${'q'.repeat(1_000)}.js`, service.url));
        tally.add(String(response.status));
        await response.arrayBuffer();
      });
      return tally.toString();
    },
  },
];

export async function benchHostile(): Promise<void> {
  console.log(
    '\n== hostile: attacks on the service as npm start runs it (NODE_ENV=production), on PostgreSQL',
  );
  console.log(
    '   each attack on a fresh process, after 2 s of /health with no attack on the same process (the baseline)',
  );
  const url = await freshDatabase('bench_hostile');
  const record = await benchKey(url, undefined, 'attacker');
  const other = await benchKey(url, undefined, 'bystander');
  const rows: Array<Record<string, string | number>> = [];
  const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
  for (const attack of attacks) {
    process.stdout.write(`  ${attack.name} …\n`);
    const service = await startService(url);
    try {
      // The first answers warm the process up: not part of either figure.
      for (let i = 0; i < 10; i++) await (await fetch(new URL('/health', service.url))).arrayBuffer();
      await service.memory();
      const idle = probe(service);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const baseline = await idle.stop();
      const idleP99 = quantile(sorted(baseline.health), 0.99);
      const idleLoop = await service.memory();
      const watching = probe(service);
      const answers = await attack.run(service, { record, other });
      const { health, peakRssMb } = await watching.stop();
      const loop = await service.memory();
      const p99 = quantile(sorted(health), 0.99);
      rows.push({
        attack: attack.name,
        answers,
        idle_rss_mb: Math.round(baseline.peakRssMb),
        peak_rss_mb: Math.round(peakRssMb),
        idle_health_p99_ms: idleP99.toFixed(1),
        health_p99_ms: p99.toFixed(1),
        health_max_ms: Math.max(...health).toFixed(1),
        p99_ratio: (p99 / idleP99).toFixed(2),
        idle_loop_max_ms: (idleLoop.loopDelayMaxMs ?? Number.NaN).toFixed(1),
        loop_max_ms: (loop.loopDelayMaxMs ?? Number.NaN).toFixed(1),
        verdict: peakRssMb < RSS_BAR_MB && p99 < HEALTH_BAR_MS ? 'held' : 'MISSED',
      });
    } finally {
      await service.stop();
    }
  }
  table(rows);
  console.log(
    `bar: peak RSS under ${RSS_BAR_MB} MB and /health p99 under ${HEALTH_BAR_MS} ms during each attack`,
  );
}
