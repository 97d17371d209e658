import os from 'node:os';
import pg from 'pg';
import { createApiKey } from '../src/db/api-keys.ts';
import { openDatabase } from '../src/db/connection.ts';
import { PERMISSIONS } from '../src/domain/permissions.ts';
import { SseReader, subscriptionRequest } from '../test/support/sse.ts';
import {
  benchKey,
  freshDatabase,
  graphql,
  load,
  quantile,
  type Service,
  startService,
  table,
} from './support.ts';

/**
 * Live runs across instances: two services on one PostgreSQL. A step is
 * recorded through A; a subscriber on B receives it. Measured: the time from
 * A's answer (the step has committed and its notice has been sent) to the
 * event at B's subscriber, with 1 and with 500 streams open on B; and what the
 * notices cost recording, as steps per second through A against the same
 * service with its channel in memory (no NOTIFY), in the same run.
 */
const STREAMS = Number(process.env.BENCH_LIVE_STREAMS ?? 500);
const STEPS = Number(process.env.BENCH_LIVE_STEPS ?? 100);
const RECORDS = Number(process.env.BENCH_LIVE_RECORDS ?? 1_000);
const CONCURRENCY = 8;
/** Streams per actor stay under the per-actor limit. */
const PER_ACTOR = 100;

const START = `mutation { startRun(input: { configuration: "bench-live" }) { ... on StartRunSuccess { data { uuid } } } }`;
/** What a viewer of a run asks for each event: the step and the run's status and rollups. */
const WATCH = `subscription ($uuid: String!, $after: Int) { runEvents(uuid: $uuid, afterSequence: $after) {
  step { sequence kind toolName outcome durationMs } run { status rounds totalTokens estimatedCost } } }`;
const RECORD = `mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename ... on Error { code } } }`;
const RECORD_TOOL = `mutation ($input: RecordToolExecutionInput!) {
  recordToolExecution(input: $input) { __typename ... on Error { code } } }`;

/** Keys for enough actors to hold `streams` streams within the per-actor limit. */
async function watcherKeys(url: string, streams: number): Promise<string[]> {
  const handle = await openDatabase({ url });
  try {
    const keys: string[] = [];
    for (let i = 0; i < Math.ceil(streams / PER_ACTOR); i += 1) {
      keys.push((await createApiKey(handle.db, `watcher-${i}`, PERMISSIONS)).key);
    }
    return keys;
  } finally {
    await handle.close();
  }
}

async function startRun(service: Service, key: string): Promise<string> {
  return (await graphql<{ startRun: { data: { uuid: string } } }>(service.url, key, START, {})).startRun.data
    .uuid;
}

/** `count` streams on `service` watching `run`, each past its first event. */
async function openStreams(
  service: Service,
  keys: string[],
  run: string,
  count: number,
): Promise<SseReader[]> {
  const streams: SseReader[] = [];
  for (let i = 0; i < count; i += 1) {
    const key = keys[Math.floor(i / PER_ACTOR)] ?? '';
    const stream = new SseReader(
      await fetch(subscriptionRequest(service.url, key, { uuid: run }, undefined, WATCH)),
    );
    await stream.event();
    streams.push(stream);
  }
  return streams;
}

/** One step at a time through A; each stream's delay from A's answer to its event. */
async function latencies(a: Service, key: string, run: string, streams: SseReader[]): Promise<number[]> {
  const delays: number[] = [];
  for (let i = 0; i < STEPS; i += 1) {
    const arrivals = streams.map(async (stream) => {
      const event = await stream.event();
      if (event.step?.sequence !== i + 1)
        throw new Error(`expected step ${i + 1}, got ${JSON.stringify(event)}`);
      return performance.now();
    });
    await graphql(a.url, key, RECORD, { input: { runUuid: run, kind: 'LLM', round: 1, durationMs: 1 } });
    const answered = performance.now();
    for (const arrived of await Promise.all(arrivals)) delays.push(arrived - answered);
  }
  return delays.sort((x, y) => x - y);
}

/** Steps per second through `service`, over `runs`. */
async function throughput(service: Service, key: string, runs: string[]): Promise<number> {
  const input = (i: number) => ({
    runUuid: runs[i % runs.length],
    round: 1,
    durationMs: 25,
    toolName: `tool_${i % 20}`,
    server: `server_${i % 5}`,
    arguments: { query: 'benchmark' },
    result: 'a result of modest size',
    isError: i % 7 === 0,
  });
  const warm = await load(service.url, key, 200, CONCURRENCY, (i) => ({
    query: RECORD_TOOL,
    variables: { input: input(i) },
  }));
  if (warm.errors > 0) throw new Error(`${warm.errors} warm-up requests failed`);
  const result = await load(service.url, key, RECORDS, CONCURRENCY, (i) => ({
    query: RECORD_TOOL,
    variables: { input: input(i) },
  }));
  if (result.errors > 0) throw new Error(`${result.errors} requests failed`);
  return RECORDS / result.seconds;
}

export async function benchLive(): Promise<void> {
  console.log(
    `\n## live runs across instances: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown cpu'}`,
  );
  const url = await freshDatabase('runledger_bench_live');
  const key = await benchKey(url);
  const keys = await watcherKeys(url, STREAMS);
  const env = { HTTP_MAX_CONNECTIONS: String(STREAMS + 100) };
  const a = await startService(url, { env });
  const b = await startService(url, { env });
  const memory = await startService(url, { env: { ...env, RUNLEDGER_LIVE_CHANNEL: 'memory' } });
  const open: SseReader[] = [];
  try {
    const rows: Array<Record<string, string | number>> = [];
    for (const count of [1, STREAMS]) {
      const run = await startRun(a, key);
      const streams = await openStreams(b, keys, run, count);
      open.push(...streams);
      const delays = await latencies(a, key, run, streams);
      rows.push({
        'streams open on B': count,
        events: delays.length,
        'p50 ms': Number(quantile(delays, 0.5).toFixed(2)),
        'p99 ms': Number(quantile(delays, 0.99).toFixed(2)),
      });
      for (const stream of streams) await stream.close();
    }
    console.log(`  from A's answer to the event at a subscriber on B (${STEPS} steps each):`);
    table(rows);

    // Recording: the same load, the same runs, three ways.
    const runs = await Promise.all(Array.from({ length: CONCURRENCY }, () => startRun(a, key)));
    const firstBaseline = await throughput(memory, key, runs);
    const notices = await throughput(a, key, runs);
    // Watchers from the last step stored on: each reads every step recorded from now on.
    const last = new Map<string, number>();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    for (const run of runs) {
      const { rows } = await admin.query<{ last: number }>(
        'select coalesce(max(s.sequence), 0)::int as last from run_steps s join runs r on r.id = s.run_id where r.uuid = $1',
        [run],
      );
      last.set(run, rows[0]?.last ?? 0);
    }
    await admin.end();
    const watchers: SseReader[] = [];
    for (let i = 0; i < STREAMS; i += 1) {
      const run = runs[i % runs.length] ?? '';
      const watcherKey = keys[Math.floor(i / PER_ACTOR)] ?? '';
      const request = subscriptionRequest(
        b.url,
        watcherKey,
        { uuid: run, after: last.get(run) ?? 0 },
        undefined,
        WATCH,
      );
      const stream = new SseReader(await fetch(request));
      await stream.event();
      watchers.push(stream);
    }
    open.push(...watchers);
    // The watchers read what is recorded; their reading is part of the cost.
    const drained = watchers.map(async (stream) => {
      for (;;) if ((await stream.next()) === null) return;
    });
    const watched = await throughput(a, key, runs);
    for (const stream of watchers) await stream.close();
    await Promise.allSettled(drained);
    // The baseline again, after the others: the table has grown meanwhile, so the two are averaged.
    const baseline = (firstBaseline + (await throughput(memory, key, runs))) / 2;
    table([
      { recording: 'channel in memory, no NOTIFY (baseline)', 'steps/s': Math.round(baseline), ratio: 1 },
      {
        recording: 'LISTEN/NOTIFY, nobody watching',
        'steps/s': Math.round(notices),
        ratio: Number((notices / baseline).toFixed(3)),
      },
      {
        recording: `LISTEN/NOTIFY, ${STREAMS} streams on B watching`,
        'steps/s': Math.round(watched),
        ratio: Number((watched / baseline).toFixed(3)),
      },
    ]);
  } finally {
    for (const stream of open) await stream.close();
    await Promise.all([a.stop(), b.stop(), memory.stop()]);
  }
}
