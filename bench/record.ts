import os from 'node:os';
import pg from 'pg';
import { benchKey, freshDatabase, graphql, load, startService, table, timed } from './support.ts';

/**
 * Steps recorded per second through the API (over HTTP, the service in its own
 * process) against plain `pg` inserts of the same rows into the same table, in
 * the same run: the ratio is what the service costs on top of the database.
 */
const SINGLE = Number(process.env.BENCH_SINGLE ?? 2_000);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 200);
const BATCH_SIZE = 100;
const CONCURRENCY = 8;

const RECORD = `mutation ($input: RecordToolExecutionInput!) {
  recordToolExecution(input: $input) { __typename ... on Error { code } } }`;
const RECORD_BATCH = `mutation ($input: RecordStepsInput!) {
  recordSteps(input: $input) { __typename ... on Error { code } } }`;
const START = `mutation { startRun(input: { configuration: "bench" }) { ... on StartRunSuccess { data { uuid } } } }`;

export async function benchRecording(): Promise<void> {
  console.log(`\n## recording: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown cpu'}`);
  const url = await freshDatabase('runledger_bench_record');
  const key = await benchKey(url);
  const service = await startService(url);
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY });
  try {
    const runs: string[] = [];
    for (let i = 0; i < CONCURRENCY; i += 1) {
      const data = await graphql<{ startRun: { data: { uuid: string } } }>(service.url, key, START, {});
      runs.push(data.startRun.data.uuid);
    }
    const input = (i: number) => ({
      runUuid: runs[i % CONCURRENCY],
      round: 1,
      durationMs: 25,
      toolName: `tool_${i % 20}`,
      server: `server_${i % 5}`,
      arguments: { query: 'benchmark' },
      result: 'a result of modest size',
      isError: i % 7 === 0,
    });

    // Warm both paths so neither pays for first-use compilation in the measurement.
    await timed(100, CONCURRENCY, async (i) => {
      await graphql(service.url, key, RECORD, { input: input(i) });
    });

    const api = await load(service.url, key, SINGLE, CONCURRENCY, (i) => ({
      query: RECORD,
      variables: { input: input(i) },
    }));
    if (api.errors > 0) throw new Error(`${api.errors} requests failed`);
    const apiSeconds = api.seconds;

    // The same rows by hand: one run per worker, sequences by a counter, no validation, no rollups.
    const { rows: runRows } = await pool.query<{ id: string }>(
      `INSERT INTO runs (uuid, owner, configuration, status)
       SELECT gen_random_uuid(), 'bench', 'plain', 'running' FROM generate_series(1, $1) RETURNING id`,
      [CONCURRENCY],
    );
    const sequences = new Map<string, number>();
    const insertOne = async (i: number) => {
      const runId = runRows[i % CONCURRENCY]?.id ?? '';
      const sequence = (sequences.get(runId) ?? 0) + 1;
      sequences.set(runId, sequence);
      const row = input(i);
      await pool.query(
        `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome, payload, metadata)
         VALUES ($1, $2, 'tool', $3, $4, now(), $5, $6, $7, $8, $9, $10)`,
        [
          runId,
          sequence,
          row.round,
          row.durationMs,
          row.toolName,
          row.server,
          row.isError,
          row.isError ? 'failed' : 'ok',
          JSON.stringify({ arguments: row.arguments, content: row.result, artifacts: [] }),
          JSON.stringify({ argumentsBytes: 21, contentBytes: 23, artifactCount: 0 }),
        ],
      );
    };
    await timed(100, CONCURRENCY, insertOne);
    const pgSeconds = await timed(SINGLE, CONCURRENCY, insertOne);

    const batchInput = (i: number) => ({
      runUuid: runs[i % CONCURRENCY],
      steps: Array.from({ length: BATCH_SIZE }, (_, j) => ({
        kind: 'TOOL',
        round: 1,
        durationMs: 25,
        toolName: `tool_${j % 20}`,
        server: `server_${j % 5}`,
        arguments: { query: 'benchmark' },
        isError: j % 7 === 0,
        content: 'a result of modest size',
      })),
    });
    const apiBatch = await load(service.url, key, BATCHES, CONCURRENCY, (i) => ({
      query: RECORD_BATCH,
      variables: { input: batchInput(i) },
    }));
    const apiBatchSeconds = apiBatch.seconds;
    const pgBatchSeconds = await timed(BATCHES, CONCURRENCY, async (i) => {
      const runId = runRows[i % CONCURRENCY]?.id ?? '';
      const first = (sequences.get(runId) ?? 0) + 1;
      sequences.set(runId, first + BATCH_SIZE - 1);
      await pool.query(
        `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome, payload, metadata)
         SELECT $1, $2 + g, 'tool', 1, 25, now(), 'tool_' || (g % 20), 'server_' || (g % 5), g % 7 = 0,
                CASE WHEN g % 7 = 0 THEN 'failed' ELSE 'ok' END,
                '{"arguments":{"query":"benchmark"},"content":"a result of modest size","artifacts":[]}'::jsonb,
                '{"argumentsBytes":21,"contentBytes":23,"artifactCount":0}'::jsonb
           FROM generate_series(0, $3 - 1) AS g`,
        [runId, first, BATCH_SIZE],
      );
    });

    const perSecond = (count: number, seconds: number) => Math.round(count / seconds);
    const single = { api: perSecond(SINGLE, apiSeconds), pg: perSecond(SINGLE, pgSeconds) };
    const batch = {
      api: perSecond(BATCHES * BATCH_SIZE, apiBatchSeconds),
      pg: perSecond(BATCHES * BATCH_SIZE, pgBatchSeconds),
    };
    table([
      {
        path: `one step per request (${SINGLE}, ${CONCURRENCY} clients)`,
        'API steps/s': single.api,
        'plain pg steps/s': single.pg,
        'API / pg': Number((single.api / single.pg).toFixed(2)),
      },
      {
        path: `${BATCH_SIZE} steps per request (${BATCHES} batches)`,
        'API steps/s': batch.api,
        'plain pg steps/s': batch.pg,
        'API / pg': Number((batch.api / batch.pg).toFixed(2)),
      },
    ]);
  } finally {
    await pool.end();
    await service.stop();
  }
}
