import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  benchKey,
  freshDatabase,
  graphql,
  load,
  type MemorySample,
  quantile,
  type Service,
  startBareServer,
  startService,
  table,
  withoutTriggers,
} from './support.ts';

/**
 * Steps recorded per second through the API (over HTTP, the service in its own
 * process, compiled, as `npm start` runs it, its statistics folder running)
 * against the floor: plain `pg` inserts of the same rows into run_steps with
 * its triggers off, so that the floor pays for storing the rows alone, in the
 * same run, and against a bare HTTP server (node:http and pg, in its own
 * process as the service is: bench/record-floor.mjs) that reads the same
 * request bodies and stores the same rows with one INSERT, the triggers on:
 * one step, 10 and 100 steps per request, over 1, 8 and 32
 * connections, with one owner and configuration for every request (the hot
 * case, where rollups kept in the write's transaction queued writers) and with
 * an owner and a configuration for each connection. Beside them, the same
 * plain inserts with the triggers on (what the change log's append costs a
 * write). Then the service's memory at rest and under this load, on
 * PostgreSQL and on the embedded database.
 *
 * BENCH_STEPS: steps per measurement (default 3,000; requests = steps / size,
 * at least 4 per connection). BENCH_SIZES and BENCH_CONNECTIONS (comma-separated)
 * narrow the table, BENCH_PGLITE=0 leaves the embedded database out.
 * BENCH_CPU_PROF=DIR: a CPU profile of the service. BENCH_ROUNDS (default 3):
 * each cell measured that many times, its floors beside it each time (the
 * machine's speed moves from minute to minute); the table gives each figure's
 * median over the rounds, and the ratio's range.
 */
const STEPS = Number(process.env.BENCH_STEPS ?? 3_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** A comma-separated list of numbers from the environment, or the default. */
const numbers = (value: string | undefined, fallback: number[]) =>
  value ? value.split(',').map((n) => Number(n.trim())) : fallback;
const SIZES = numbers(process.env.BENCH_SIZES, [1, 10, 100]);
const CONNECTIONS = numbers(process.env.BENCH_CONNECTIONS, [1, 8, 32]);
const MB = 1024 * 1024;

const RECORD = `mutation ($input: RecordToolExecutionInput!) {
  recordToolExecution(input: $input) { __typename ... on Error { code } } }`;
const RECORD_BATCH = `mutation ($input: RecordStepsInput!) {
  recordSteps(input: $input) { __typename ... on Error { code } } }`;
const START = `mutation ($configuration: String!) { startRun(input: { configuration: $configuration }) {
  ... on StartRunSuccess { data { uuid } } } }`;

/** The tool call of step j: 20 tools on 5 servers, one in seven failed. */
const call = (j: number) => ({
  round: 1,
  durationMs: 25,
  toolName: `tool_${j % 20}`,
  server: `server_${j % 5}`,
  arguments: { query: 'benchmark' },
  isError: j % 7 === 0,
});
const CONTENT = 'a result of modest size';

function body(size: number, runUuid: string, i: number): unknown {
  if (size === 1) {
    return { query: RECORD, variables: { input: { runUuid, ...call(i), result: CONTENT } } };
  }
  const steps = Array.from({ length: size }, (_, j) => ({ kind: 'TOOL', ...call(j), content: CONTENT }));
  return { query: RECORD_BATCH, variables: { input: { runUuid, steps } } };
}

const PLAIN_ONE = `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome, payload, metadata)
  VALUES ($1, $2, 'tool', $3, $4, now(), $5, $6, $7, $8, $9, $10)`;
/** Many rows sent by the client, as arrays: each row's data travels, as it does to the API. */
const PLAIN_SENT = `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome, payload, metadata)
  SELECT $1, $2 + x.i - 1, 'tool', x.r, x.d, now(), x.t, x.s, x.e, x.o, x.p, x.m
    FROM unnest($3::int[], $4::int[], $5::text[], $6::text[], $7::boolean[], $8::text[], $9::jsonb[], $10::jsonb[])
         WITH ORDINALITY AS x(r, d, t, s, e, o, p, m, i)`;
/** Runs `total` tasks over `concurrency` workers; seconds elapsed and each task's latency in ms. */
async function timedWithLatency(
  total: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
): Promise<{ seconds: number; latencies: number[] }> {
  let next = 0;
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next;
        next += 1;
        const began = process.hrtime.bigint();
        await task(i);
        latencies.push(Number(process.hrtime.bigint() - began) / 1e6);
      }
    }),
  );
  return {
    seconds: Number(process.hrtime.bigint() - started) / 1e9,
    latencies: latencies.sort((a, b) => a - b),
  };
}

/** Samples the service's memory every 200 ms while `work` runs; the highest figures seen. */
async function peakMemory<T>(
  service: Service,
  work: () => Promise<T>,
): Promise<{ result: T; peak: MemorySample }> {
  const peak: MemorySample = {
    rss: 0,
    heapTotal: 0,
    heapUsed: 0,
    external: 0,
    arrayBuffers: 0,
    cpuMicros: 0,
  };
  const take = (sample: MemorySample) => {
    for (const name of Object.keys(peak) as Array<keyof MemorySample>) {
      peak[name] = Math.max(peak[name] ?? 0, sample[name] ?? 0);
    }
  };
  let running = true;
  const sampler = (async () => {
    while (running) {
      take(await service.memory());
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  try {
    const result = await work();
    return { result, peak };
  } finally {
    running = false;
    await sampler;
  }
}

const requestsFor = (size: number, connections: number) =>
  Math.max(4 * connections, Math.round(STEPS / size));
const perSecond = (count: number, seconds: number) => Math.round(count / seconds);
const ms = (value: number) => Number(value.toFixed(1));
const megabytes = (bytes: number) => Math.round(bytes / MB);

function memoryRow(database: string, state: string, sample: MemorySample) {
  return {
    database,
    state,
    'RSS MB': megabytes(sample.rss),
    'heap used MB': megabytes(sample.heapUsed),
    'heap total MB': megabytes(sample.heapTotal),
    'external MB': megabytes(sample.external),
  };
}

/** Runs started through the API: each with the key and configuration of its index, or all with the first. */
async function startRuns(
  service: Service,
  keys: readonly string[],
  count: number,
  configuration = (_i: number) => 'bench',
): Promise<string[]> {
  const uuids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const data = await graphql<{ startRun: { data: { uuid: string } } }>(
      service.url,
      keys[i % keys.length] ?? '',
      START,
      { configuration: configuration(i) },
    );
    uuids.push(data.startRun.data.uuid);
  }
  return uuids;
}

/** Who records: one owner and configuration for every connection, or one each. */
const KEYINGS = ['one owner and configuration', 'an owner and configuration each'] as const;

const profileArgs = (name: string) =>
  process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, `--cpu-prof-name=${name}.cpuprofile`]
    : [];

async function onPostgres(memory: Array<Record<string, string | number>>): Promise<void> {
  const url = await freshDatabase('runledger_bench_record');
  const maxConnections = Math.max(...CONNECTIONS);
  const keys: string[] = [];
  for (let i = 0; i < maxConnections; i += 1) keys.push(await benchKey(url, undefined, `bench_${i}`));
  const service = await startService(url, { nodeArgs: profileArgs('record-postgres') });
  const bare = await startBareServer('./record-floor.mjs', { DATABASE_URL: url });
  const pool = new pg.Pool({ connectionString: url, max: maxConnections });
  const rows: Array<Record<string, string | number>> = [];
  try {
    await new Promise((resolve) => setTimeout(resolve, 500));
    memory.push(memoryRow('PostgreSQL', 'at rest', await service.memory()));
    const hotRuns = await startRuns(service, keys.slice(0, 1), maxConnections);
    const spreadRuns = await startRuns(service, keys, maxConnections, (i) => `bench_${i}`);
    const { rows: plainRuns } = await pool.query<{ id: string }>(
      `INSERT INTO runs (uuid, owner, configuration, status)
       SELECT gen_random_uuid(), 'bench_0', 'plain', 'running' FROM generate_series(1, $1) RETURNING id`,
      [maxConnections],
    );
    const { rows: bareRuns } = await pool.query<{ uuid: string }>(
      `INSERT INTO runs (uuid, owner, configuration, status)
       SELECT gen_random_uuid(), 'bench_0', 'bare', 'running' FROM generate_series(1, $1) RETURNING uuid`,
      [maxConnections],
    );
    const bareHttp = (size: number, connections: number) =>
      load(bare.url, '', requestsFor(size, connections), connections, (i) =>
        body(size, bareRuns[i % connections]?.uuid ?? '', i),
      );
    const sequences = new Map<string, number>();
    const payload = JSON.stringify({ arguments: { query: 'benchmark' }, content: CONTENT, artifacts: [] });
    const metadata = JSON.stringify({ argumentsBytes: 21, contentBytes: 23, artifactCount: 0 });
    const plain = (size: number, connections: number) => async (i: number) => {
      const runId = plainRuns[i % connections]?.id ?? '';
      const first = (sequences.get(runId) ?? 0) + 1;
      sequences.set(runId, first + size - 1);
      const calls = Array.from({ length: size }, (_, j) => call(size === 1 ? i : j));
      const [statement, values] =
        size === 1
          ? [PLAIN_ONE, [runId, first, ...Object.values(callColumns(calls[0] ?? call(i))), payload, metadata]]
          : [
              PLAIN_SENT,
              [
                runId,
                first,
                calls.map((c) => c.round),
                calls.map((c) => c.durationMs),
                calls.map((c) => c.toolName),
                calls.map((c) => c.server),
                calls.map((c) => c.isError),
                calls.map((c) => (c.isError ? 'failed' : 'ok')),
                calls.map(() => payload),
                calls.map(() => metadata),
              ],
            ];
      await pool.query(statement, values);
    };
    const api = (size: number, connections: number, keying: (typeof KEYINGS)[number]) => {
      const spread = keying !== KEYINGS[0];
      const runs = spread ? spreadRuns : hotRuns;
      return load(
        service.url,
        keys[0] ?? '',
        requestsFor(size, connections),
        connections,
        (i) => body(size, runs[i % connections] ?? '', i),
        spread ? (i) => keys[i % connections] ?? '' : undefined,
      );
    };

    const { peak } = await peakMemory(service, async () => {
      for (const size of SIZES) {
        // Warm every path so none pays for first use in the measurement.
        for (const keying of KEYINGS) await api(size, maxConnections, keying);
        await timedWithLatency(40, maxConnections, plain(size, maxConnections));
        await bareHttp(size, maxConnections);
        await withoutTriggers(pool, () => timedWithLatency(40, maxConnections, plain(size, maxConnections)));
        for (let round = 0; round < ROUNDS; round += 1)
          for (const connections of CONNECTIONS) {
            const requests = requestsFor(size, connections);
            const floor = await withoutTriggers(pool, () =>
              timedWithLatency(requests, connections, plain(size, connections)),
            );
            const withLog = await timedWithLatency(requests, connections, plain(size, connections));
            const bareMeasured = await bareHttp(size, connections);
            if (bareMeasured.errors > 0)
              throw new Error(`${bareMeasured.errors} requests to the bare server failed`);
            const floorRate = perSecond(requests * size, floor.seconds);
            const logRate = perSecond(requests * size, withLog.seconds);
            const bareRate = perSecond(requests * size, bareMeasured.seconds);
            for (const keying of KEYINGS) {
              const cpuBefore = (await service.memory()).cpuMicros;
              const measured = await api(size, connections, keying);
              if (measured.errors > 0) throw new Error(`${measured.errors} requests failed`);
              // The service's own CPU per step: what it costs whatever else the machine runs.
              const cpuPerStep = ((await service.memory()).cpuMicros - cpuBefore) / (requests * size);
              const apiRate = perSecond(requests * size, measured.seconds);
              rows.push({
                'steps/request': size,
                connections,
                'who records': keying,
                'API steps/s': apiRate,
                'bare HTTP steps/s': bareRate,
                'API / bare HTTP': Number((apiRate / bareRate).toFixed(2)),
                'floor steps/s': floorRate,
                'API / floor': Number((apiRate / floorRate).toFixed(2)),
                'pg + change log steps/s': logRate,
                'pg + change log / floor': Number((logRate / floorRate).toFixed(2)),
                'API p50 ms': ms(measured.p50),
                'API p99 ms': ms(measured.p99),
                'floor p50 ms': ms(quantile(floor.latencies, 0.5)),
                'service CPU µs/step': Math.round(cpuPerStep),
              });
            }
          }
      }
    });
    memory.push(memoryRow('PostgreSQL', 'peak under the load above', peak));
    console.log(
      '\n recording through the API against the bare HTTP server (the same bodies, the same rows in one INSERT, triggers on) and the floor (plain inserts of the same rows, every trigger of run_steps off):',
    );
    table(mediansOfRounds(rows));
  } finally {
    await pool.end();
    await bare.stop();
    await service.stop();
  }
}

/**
 * The rows of one cell (steps a request, connections, who records) over the rounds, as one row: each
 * figure's median, and the range of the ratio to the bare HTTP server.
 */
function mediansOfRounds(
  rows: Array<Record<string, string | number>>,
): Array<Record<string, string | number>> {
  const cells = new Map<string, Array<Record<string, string | number>>>();
  for (const row of rows) {
    const cell = `${row['steps/request']}|${row.connections}|${row['who records']}`;
    cells.set(cell, [...(cells.get(cell) ?? []), row]);
  }
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  };
  return [...cells.values()].map((rounds) => {
    const [first] = rounds;
    const merged: Record<string, string | number> = { ...first };
    for (const [column, value] of Object.entries(first ?? {})) {
      if (typeof value === 'number' && column !== 'steps/request' && column !== 'connections') {
        merged[column] = median(rounds.map((round) => Number(round[column])));
      }
    }
    const ratios = rounds.map((round) => Number(round['API / bare HTTP']));
    merged['API / bare HTTP, rounds'] = `${Math.min(...ratios)} to ${Math.max(...ratios)}`;
    merged.rounds = rounds.length;
    return merged;
  });
}

/** A single step's columns of PLAIN_ONE, in its order after the run and sequence. */
function callColumns(step: ReturnType<typeof call>) {
  return {
    round: step.round,
    durationMs: step.durationMs,
    toolName: step.toolName,
    server: step.server,
    isError: step.isError,
    outcome: step.isError ? 'failed' : 'ok',
  };
}

async function onPglite(memory: Array<Record<string, string | number>>): Promise<void> {
  const dir = mkdtempSync(join(os.tmpdir(), 'runledger-bench-'));
  const dataDir = join(dir, 'pglite');
  try {
    const key = await benchKey('', dataDir);
    const service = await startService('', {
      env: { PGLITE_DATA_DIR: dataDir },
      nodeArgs: profileArgs('record-pglite'),
    });
    const rows: Array<Record<string, string | number>> = [];
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      memory.push(memoryRow('embedded (PGlite)', 'at rest', await service.memory()));
      const runs = await startRuns(service, [key], 8);
      const { peak } = await peakMemory(service, async () => {
        for (const size of SIZES.filter((s) => s !== 10)) {
          await load(service.url, key, 20, 8, (i) => body(size, runs[i % 8] ?? '', i));
          const requests = requestsFor(size, 8);
          const api = await load(service.url, key, requests, 8, (i) => body(size, runs[i % 8] ?? '', i));
          if (api.errors > 0) throw new Error(`${api.errors} requests failed`);
          rows.push({
            'steps/request': size,
            connections: 8,
            requests,
            'API steps/s': perSecond(requests * size, api.seconds),
            'API p50 ms': ms(api.p50),
            'API p99 ms': ms(api.p99),
          });
        }
      });
      memory.push(memoryRow('embedded (PGlite)', 'peak under the load above', peak));
      console.log('\n embedded database (PGlite), one connection by nature:');
      table(rows);
    } finally {
      await service.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchRecording(): Promise<void> {
  console.log(
    `\n## recording: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown cpu'}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const memory: Array<Record<string, string | number>> = [];
  await onPostgres(memory);
  if (process.env.BENCH_PGLITE !== '0') await onPglite(memory);
  console.log('\n memory of the service process:');
  table(memory);
  console.log(
    `load average at the end: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
}
