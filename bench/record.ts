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
  startService,
  table,
} from './support.ts';

/**
 * Steps recorded per second through the API (over HTTP, the service in its own
 * process, compiled, as `npm start` runs it) against plain `pg` inserts of the
 * same rows into the same table (triggers included), in the same run: one
 * step, 10 and 100 steps per request, over 1, 8 and 32 connections. The ratio
 * is what the service costs on top of the database. Then what the rollups
 * cost a write: the same plain inserts with the trigger that keeps every
 * rollup (`run_steps_follow_insert`) disabled, against the same with it. Then
 * the service's memory at rest and under this load, on PostgreSQL and on the
 * embedded database.
 *
 * BENCH_STEPS: steps per measurement (default 3,000; requests = steps / size,
 * at least 4 per connection). BENCH_SIZES and BENCH_CONNECTIONS (comma-separated)
 * narrow the table, BENCH_PGLITE=0 leaves the embedded database out.
 * BENCH_CPU_PROF=DIR: a CPU profile of the service.
 */
const STEPS = Number(process.env.BENCH_STEPS ?? 3_000);
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
const START = `mutation { startRun(input: { configuration: "bench" }) { ... on StartRunSuccess { data { uuid } } } }`;

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
/** Many rows made by the server from a series, each with the tool given: nothing travels but three numbers. */
const generatedSteps = (
  tool: string,
) => `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome, payload, metadata)
  SELECT $1, $2 + g, 'tool', 1, 25, now(), ${tool}, 'server_' || (g % 5), g % 7 = 0,
         CASE WHEN g % 7 = 0 THEN 'failed' ELSE 'ok' END,
         '{"arguments":{"query":"benchmark"},"content":"a result of modest size","artifacts":[]}'::jsonb,
         '{"argumentsBytes":21,"contentBytes":23,"artifactCount":0}'::jsonb
    FROM generate_series(0, $3 - 1) AS g`;
/** On the 20 tools of `call`. */
const PLAIN_MANY = generatedSteps("'tool_' || (g % 20)");
/**
 * With a tool never seen before at each step: every call opens a new row (and
 * its index entries) in each rollup keyed by tool, where the others add to
 * rows that exist. The write path's worst case for the rollups.
 */
const PLAIN_NEW_KEYS = generatedSteps("'new_' || $1::bigint || '_' || ($2 + g)");

/** The trigger that adds every inserted tool call to the rollups (migration 0005 and later), in the same transaction. */
const ROLLUP_TRIGGER = 'run_steps_follow_insert';

/**
 * Runs `work` with the rollups' trigger disabled, for every session, and
 * enables it again whatever happens: the rollups of this throwaway database
 * then lack those calls, which nothing in this benchmark reads.
 */
async function withoutRollups<T>(pool: pg.Pool, work: () => Promise<T>): Promise<T> {
  await pool.query(`ALTER TABLE run_steps DISABLE TRIGGER ${ROLLUP_TRIGGER}`);
  try {
    return await work();
  } finally {
    await pool.query(`ALTER TABLE run_steps ENABLE TRIGGER ${ROLLUP_TRIGGER}`);
  }
}

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
      peak[name] = Math.max(peak[name], sample[name]);
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

async function startRuns(service: Service, key: string, count: number): Promise<string[]> {
  const uuids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const data = await graphql<{ startRun: { data: { uuid: string } } }>(service.url, key, START, {});
    uuids.push(data.startRun.data.uuid);
  }
  return uuids;
}

const profileArgs = (name: string) =>
  process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, `--cpu-prof-name=${name}.cpuprofile`]
    : [];

async function onPostgres(memory: Array<Record<string, string | number>>): Promise<void> {
  const url = await freshDatabase('runledger_bench_record');
  const key = await benchKey(url);
  const service = await startService(url, { nodeArgs: profileArgs('record-postgres') });
  const maxConnections = Math.max(...CONNECTIONS);
  const pool = new pg.Pool({ connectionString: url, max: maxConnections });
  const rows: Array<Record<string, string | number>> = [];
  const rollupCost: Array<Record<string, string | number>> = [];
  try {
    await new Promise((resolve) => setTimeout(resolve, 500));
    memory.push(memoryRow('PostgreSQL', 'at rest', await service.memory()));
    const runs = await startRuns(service, key, maxConnections);
    const { rows: plainRuns } = await pool.query<{ id: string }>(
      `INSERT INTO runs (uuid, owner, configuration, status)
       SELECT gen_random_uuid(), 'bench', 'plain', 'running' FROM generate_series(1, $1) RETURNING id`,
      [maxConnections],
    );
    const sequences = new Map<string, number>();
    const payload = JSON.stringify({ arguments: { query: 'benchmark' }, content: CONTENT, artifacts: [] });
    const metadata = JSON.stringify({ argumentsBytes: 21, contentBytes: 23, artifactCount: 0 });
    const plain =
      (size: number, connections: number, generated: 'repeated keys' | 'new keys' | null = null) =>
      async (i: number) => {
        const runId = plainRuns[i % connections]?.id ?? '';
        const first = (sequences.get(runId) ?? 0) + 1;
        sequences.set(runId, first + size - 1);
        if (size > 1 && generated) {
          await pool.query(generated === 'new keys' ? PLAIN_NEW_KEYS : PLAIN_MANY, [runId, first, size]);
          return;
        }
        if (size > 1) {
          const calls = Array.from({ length: size }, (_, j) => call(j));
          await pool.query(PLAIN_SENT, [
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
          ]);
          return;
        }
        const step = call(i);
        await pool.query(PLAIN_ONE, [
          runId,
          first,
          step.round,
          step.durationMs,
          step.toolName,
          step.server,
          step.isError,
          step.isError ? 'failed' : 'ok',
          payload,
          metadata,
        ]);
      };

    const { peak } = await peakMemory(service, async () => {
      for (const size of SIZES) {
        // Warm both paths so neither pays for first use in the measurement.
        await load(service.url, key, 40, maxConnections, (i) =>
          body(size, runs[i % maxConnections] ?? '', i),
        );
        await timedWithLatency(40, maxConnections, plain(size, maxConnections));
        if (size > 1)
          await timedWithLatency(40, maxConnections, plain(size, maxConnections, 'repeated keys'));
        for (const connections of CONNECTIONS) {
          const requests = requestsFor(size, connections);
          const cpuBefore = (await service.memory()).cpuMicros;
          const api = await load(service.url, key, requests, connections, (i) =>
            body(size, runs[i % connections] ?? '', i),
          );
          if (api.errors > 0) throw new Error(`${api.errors} requests failed`);
          // The service's own CPU per step: what it costs whatever else the machine runs.
          const cpuPerStep = ((await service.memory()).cpuMicros - cpuBefore) / (requests * size);
          const direct = await timedWithLatency(requests, connections, plain(size, connections));
          const generated =
            size > 1
              ? await timedWithLatency(requests, connections, plain(size, connections, 'repeated keys'))
              : undefined;
          const newKeys =
            size > 1
              ? await timedWithLatency(requests, connections, plain(size, connections, 'new keys'))
              : undefined;
          const noRollups = await withoutRollups(pool, () =>
            timedWithLatency(requests, connections, plain(size, connections)),
          );
          const apiRate = perSecond(requests * size, api.seconds);
          const pgRate = perSecond(requests * size, direct.seconds);
          const noRollupsRate = perSecond(requests * size, noRollups.seconds);
          rollupCost.push({
            'steps/request': size,
            connections,
            'pg steps/s, with the rollups': pgRate,
            'pg steps/s, without': noRollupsRate,
            'with / without': Number((pgRate / noRollupsRate).toFixed(2)),
            'pg p50 ms, with': ms(quantile(direct.latencies, 0.5)),
            'pg p50 ms, without': ms(quantile(noRollups.latencies, 0.5)),
          });
          rows.push({
            'steps/request': size,
            connections,
            requests,
            'API steps/s': apiRate,
            'pg steps/s': pgRate,
            'API / pg': Number((apiRate / pgRate).toFixed(2)),
            'API p50 ms': ms(api.p50),
            'API p99 ms': ms(api.p99),
            'service CPU µs/step': Math.round(cpuPerStep),
            'pg p50 ms': ms(quantile(direct.latencies, 0.5)),
            'pg p99 ms': ms(quantile(direct.latencies, 0.99)),
            'pg generated steps/s': generated ? perSecond(requests * size, generated.seconds) : '-',
            'pg generated, new keys, steps/s': newKeys ? perSecond(requests * size, newKeys.seconds) : '-',
          });
        }
      }
    });
    memory.push(memoryRow('PostgreSQL', 'peak under the load above', peak));
    table(rows);
    console.log(
      `\n what the rollups cost a write: the plain inserts above with the rollups' trigger, and without (${ROLLUP_TRIGGER} disabled):`,
    );
    table(rollupCost);
  } finally {
    await pool.end();
    await service.stop();
  }
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
      const runs = await startRuns(service, key, 8);
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
