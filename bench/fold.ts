import os from 'node:os';
import pg from 'pg';
import { openDatabase } from '../src/db/connection.ts';
import { addFunctionSql, tablesOfRollup } from '../src/db/rollup-sql.ts';
import { FOLD_BULK_BATCH_CHANGES, pendingToolCallChanges } from '../src/db/tool-call-changes.ts';
import { OUTCOME_ROLLUPS } from '../src/domain/outcome-rollups.ts';
import { foldEverything } from '../src/ledger/stats-folder.ts';
import { benchKey, freshDatabase, graphql, load, quantile, startService, table } from './support.ts';

/**
 * The statistics' folder. Its lag: while the API records as fast as it can
 * (8 connections; single steps, then batches of 100 tool steps, the fastest
 * way it records), the service in its own process folding as it does in
 * production, a probe commits a tool call of a tool of its own, then looks
 * for it in a rollup every 2 ms: the time from the commit's answer to the
 * call folded, p50 and p99 over every probe. Its throughput: a backlog of
 * changes written with no service running (plain inserts, the trigger
 * appending their changes), then folded by the same function the service
 * runs, batch after batch, against the rate at which the API records in
 * batches of 100 (measured in the same run); then what each rollup costs of
 * a batch of the many-keys backlog (foldCostByRollup). Two backlogs: `few keys` (40
 * runs of 10 owners and 4 configurations, 20 tools on 5 servers, 30 days, a
 * statement of 100 steps of one run and hour at a time, as the API writes
 * them) and `many keys` (12 owners, 30 configurations, 50 servers, 400
 * tools, every call at its own time over 90 days, 20,000 a statement, as a
 * bulk load of history writes them).
 *
 * BENCH_FOLD_STEPS: steps the API records while probed, each way (default 12,000; at least 800, a
 * batch of 100 a connection).
 * BENCH_FOLD_BACKLOG: steps of each backlog (default 200,000).
 */
const STEPS = Number(process.env.BENCH_FOLD_STEPS ?? 12_000);
const BACKLOG = Number(process.env.BENCH_FOLD_BACKLOG ?? 200_000);
const CONNECTIONS = 8;
const START = `mutation { startRun(input: { configuration: "bench-fold" }) { ... on StartRunSuccess { data { uuid } } } }`;
const RECORD = `mutation ($input: RecordToolExecutionInput!) {
  recordToolExecution(input: $input) { __typename ... on Error { code } } }`;
const RECORD_BATCH = `mutation ($input: RecordStepsInput!) {
  recordSteps(input: $input) { __typename ... on Error { code } } }`;

const ms = (value: number) => Number(value.toFixed(1));

export async function benchFold(): Promise<void> {
  // Batches of 100 over CONNECTIONS connections: at least a batch a connection.
  if (!Number.isInteger(STEPS) || STEPS < 100 * CONNECTIONS)
    throw new Error(
      `BENCH_FOLD_STEPS must be a whole number of at least ${100 * CONNECTIONS} (a batch of 100 a connection)`,
    );
  console.log(
    `\n## statistics folder: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown cpu'}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const url = await freshDatabase('runledger_bench_fold');
  const key = await benchKey(url);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    const single = await lagWhileRecording(url, key, pool, 1);
    const batched = await lagWhileRecording(url, key, pool, 100);
    table(
      [single, batched].map((seen) => ({
        'API records': seen.size === 1 ? 'single steps' : `batches of ${seen.size}`,
        'steps/s': seen.apiRate,
        probes: seen.lags.length,
        'lag p50 ms': ms(quantile(seen.lags, 0.5)),
        'lag p99 ms': ms(quantile(seen.lags, 0.99)),
        'lag max ms': ms(seen.lags.at(-1) ?? 0),
      })),
    );
    const rows = [];
    for (const backlog of BACKLOGS) {
      const throughput = await foldThroughput(url, pool, backlog);
      rows.push({
        backlog: backlog.name,
        'fold: calls/s': throughput,
        'API batches of 100: steps/s': batched.apiRate,
        'fold / API': Number((throughput / batched.apiRate).toFixed(2)),
      });
    }
    table(rows);
    table(await foldCostByRollup(pool));
  } finally {
    await pool.end();
  }
}

/**
 * What each rollup costs the fold, on the many-keys backlog once folded: one
 * more batch of FOLD_BULK_BATCH_CHANGES calls, its cells added to each rollup
 * alone (the fold's own statements for that rollup, made from the catalogue)
 * in a transaction rolled back, the median of three; with the rows that
 * writes (inserted or updated, its table of histograms included) per call.
 * The rollups that write about a row a call are what the fold's rate on many
 * keys is made of.
 */
async function foldCostByRollup(pool: pg.Pool): Promise<Array<Record<string, string | number>>> {
  const calls = FOLD_BULK_BATCH_CHANGES;
  const { rows: runs } = await pool.query<{ id: string }>(
    `SELECT min(id)::text AS id FROM runs WHERE owner LIKE 'owner\\_%'`,
  );
  await writeManyKeys(pool, Number(runs[0]?.id), 2_000_000, calls);
  const client = await pool.connect();
  const results: Array<Record<string, string | number>> = [];
  const perCall = (value: number) => Number((value / calls).toFixed(2));
  try {
    await client.query(
      `CREATE TEMP TABLE fold_batch AS
       SELECT array_agg(ROW(hour, owner, configuration, server, tool_name, b, ok, failed, cancelled)::tool_call_cell) AS cells
         FROM (SELECT hour, owner, configuration, server, tool_name, b,
                      sum(ok)::bigint AS ok, sum(failed)::bigint AS failed, sum(cancelled)::bigint AS cancelled
                 FROM tool_call_changes GROUP BY 1, 2, 3, 4, 5, 6) AS summed`,
    );
    // The function of no rollup: the batch summed per day and per week, which every rollup's own
    // function does first and the fold once (taken from each rollup's time, counted once in the total).
    // The time spent in the histogram functions (plpgsql, called a row), as PostgreSQL counts it: a
    // setting only a superuser may change, so for another role the column says nothing.
    const counted = await client
      .query(`SET track_functions = 'pl'`)
      .then(() => true)
      .catch(() => false);
    const histogramMs = async () => {
      if (!counted) return Number.NaN;
      const { rows } = await client.query<{ ms: number }>(
        `SELECT coalesce(sum(self_time), 0)::float8 AS ms FROM pg_stat_xact_user_functions
          WHERE funcname IN ('tool_duration_histogram', 'tool_duration_histogram_add')`,
      );
      return rows[0]?.ms ?? 0;
    };
    const timed = async (name: string, rounds: number, each?: () => Promise<number>) => {
      const times: number[] = [];
      const histograms: number[] = [];
      let written = 0;
      for (let round = 0; round < rounds; round += 1) {
        await client.query('BEGIN');
        const before = (await each?.()) ?? 0;
        const histogramsBefore = await histogramMs();
        const started = performance.now();
        await client.query(`SELECT ${name}(cells) FROM fold_batch`);
        times.push(performance.now() - started);
        histograms.push((await histogramMs()) - histogramsBefore);
        written = ((await each?.()) ?? 0) - before;
        await client.query('ROLLBACK');
      }
      const median = (values: number[]) =>
        quantile(
          values.sort((a, b) => a - b),
          0.5,
        );
      return { ms: median(times), histogramMs: median(histograms), written };
    };
    await client.query(addFunctionSql([], 'pg_temp.fold_cost_none'));
    const shared = (await timed('pg_temp.fold_cost_none', 5)).ms;
    results.push({
      rollup: 'the batch summed per day and per week',
      'rows written a call': 0,
      [`ms for ${calls} calls`]: Number(shared.toFixed(1)),
      'µs a call': perCall(shared * 1000),
    });
    let [totalMs, totalRows, totalHistogramMs] = [shared, 0, 0];
    for (const [i, rollup] of OUTCOME_ROLLUPS.entries()) {
      await client.query(addFunctionSql([rollup], `pg_temp.fold_cost_${i}`));
      // The rows its tables took in this transaction: read before and after, as the counts a backend has
      // not reported yet include its earlier transactions'.
      const rowsTaken = async () => {
        const { rows } = await client.query<{ n: string }>(
          `SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0)::text AS n FROM pg_stat_xact_user_tables WHERE relname = ANY($1)`,
          [tablesOfRollup(rollup)],
        );
        return Number(rows[0]?.n);
      };
      const {
        ms: withShared,
        histogramMs: inHistograms,
        written,
      } = await timed(`pg_temp.fold_cost_${i}`, 3, rowsTaken);
      const ms = Math.max(0, withShared - shared);
      totalMs += ms;
      totalRows += written;
      totalHistogramMs += inHistograms;
      results.push({
        rollup: rollup.name,
        'rows written a call': perCall(written),
        [`ms for ${calls} calls`]: Number(ms.toFixed(1)),
        'µs a call': perCall(ms * 1000),
        'of which histograms µs': counted ? perCall(inHistograms * 1000) : '-',
      });
    }
    results.push({
      rollup: 'every rollup',
      'rows written a call': perCall(totalRows),
      [`ms for ${calls} calls`]: Number(totalMs.toFixed(1)),
      'µs a call': perCall(totalMs * 1000),
      'of which histograms µs': counted ? perCall(totalHistogramMs * 1000) : '-',
    });
  } finally {
    await client.query('DROP TABLE IF EXISTS fold_batch').catch(() => undefined);
    client.release();
  }
  return results;
}

async function lagWhileRecording(
  url: string,
  key: string,
  pool: pg.Pool,
  size: 1 | 100,
): Promise<{ size: number; lags: number[]; apiRate: number }> {
  const service = await startService(url);
  try {
    const runs: string[] = [];
    for (let i = 0; i < CONNECTIONS; i += 1)
      runs.push(
        (await graphql<{ startRun: { data: { uuid: string } } }>(service.url, key, START, {})).startRun.data
          .uuid,
      );
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO runs (uuid, owner, configuration, status)
       VALUES (gen_random_uuid(), 'probe', 'probe', 'running') RETURNING id`,
    );
    const probeRun = rows[0]?.id ?? '';
    const call = (i: number) => ({
      round: 1,
      durationMs: 25,
      toolName: `tool_${i % 20}`,
      server: `server_${i % 5}`,
      isError: i % 7 === 0,
    });
    const body = (i: number) =>
      size === 1
        ? {
            query: RECORD,
            variables: {
              input: { runUuid: runs[i % CONNECTIONS], ...call(i), result: 'a result of modest size' },
            },
          }
        : {
            query: RECORD_BATCH,
            variables: {
              input: {
                runUuid: runs[i % CONNECTIONS],
                steps: Array.from({ length: size }, (_, j) => ({
                  kind: 'TOOL',
                  ...call(i * size + j),
                  content: 'a result of modest size',
                })),
              },
            },
          };
    await load(service.url, key, Math.max(2 * CONNECTIONS, Math.round(400 / size)), CONNECTIONS, body);
    const lags: number[] = [];
    let recording = true;
    const probing = (async () => {
      for (let probe = 1; recording; probe += 1) {
        const tool = `probe_${probe}`;
        await pool.query(
          `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome)
           VALUES ($1, $2, 'tool', 1, 1, now(), $3, 'probe', false, 'ok')`,
          [probeRun, probe, tool],
        );
        const committed = performance.now();
        for (;;) {
          const { rowCount } = await pool.query(
            `SELECT 1 FROM stats_owner_configuration_server_tool_all_time WHERE tool_name = $1 AND ok > 0`,
            [tool],
          );
          if (rowCount) break;
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
        lags.push(performance.now() - committed);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    // The probe stopped and awaited however the load ends: left running, it would query a pool closed
    // meanwhile and hide the load's own error behind its own.
    let recorded: Awaited<ReturnType<typeof load>>;
    try {
      recorded = await load(service.url, key, Math.round(STEPS / size), CONNECTIONS, body);
    } finally {
      recording = false;
      await probing;
    }
    if (recorded.errors > 0) throw new Error(`${recorded.errors} requests failed`);
    return { size, lags: lags.sort((a, b) => a - b), apiRate: Math.round(STEPS / recorded.seconds) };
  } finally {
    await service.stop();
  }
}

interface Backlog {
  name: string;
  /** Writes BACKLOG steps into run_steps with the triggers on (the changes appended, nothing folded). */
  write: (pool: pg.Pool) => Promise<void>;
}

/** The runs of the many-keys backlog: 12 owners, 30 configurations; the first one's id. */
async function manyKeysRuns(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO runs (uuid, owner, configuration, status)
     SELECT gen_random_uuid(), 'owner_' || (g % 12), 'config_' || (g % 30), 'running'
       FROM generate_series(0, 359) AS g RETURNING id`,
  );
  return Math.min(...rows.map((row) => Number(row.id)));
}

/** `count` calls of the many-keys backlog, from step `offset` on: one statement, as a bulk load writes them. */
async function writeManyKeys(pool: pg.Pool, firstRun: number, offset: number, count: number): Promise<void> {
  // Every call of its own run, tool and minute over 90 days: a bulk load of history.
  await pool.query(
    `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome)
     SELECT $1 + (h % 360), $2 + g, 'tool', 1, h % 5000, now() - ((h / 7) % (90 * 24 * 60)) * interval '1 minute',
            'tool_' || (t % 400), 'server_' || (t % 50), h % 9 = 0 OR h % 13 = 0,
            CASE WHEN h % 9 = 0 THEN 'failed' WHEN h % 13 = 0 THEN 'cancelled' ELSE 'ok' END
       FROM generate_series(1, ${count}) AS g,
            LATERAL (SELECT abs(hashint4($2 + g)) AS h, abs(hashint4(($2 + g) * 31 + 7)) AS t) AS x`,
    [firstRun, offset],
  );
}

const BACKLOGS: Backlog[] = [
  {
    name: 'few keys',
    async write(pool) {
      const { rows } = await pool.query<{ id: string }>(
        `INSERT INTO runs (uuid, owner, configuration, status)
         SELECT gen_random_uuid(), 'backlog_' || (g % 10), 'backlog_' || (g % 4), 'running'
           FROM generate_series(1, 40) AS g RETURNING id`,
      );
      const ids = rows.map((row) => row.id);
      const perStatement = 100;
      for (let done = 0; done < BACKLOG; done += perStatement) {
        // One statement of 100 steps, as a batch through the API: 100 steps of one run, one hour.
        await pool.query(
          `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome)
           SELECT $1, $2 + g, 'tool', 1, (g * 37) % 5000, now() - ($3::int % 720) * interval '1 hour',
                  'tool_' || (g % 20), 'server_' || (g % 5), g % 7 = 0, CASE WHEN g % 7 = 0 THEN 'failed' ELSE 'ok' END
             FROM generate_series(1, ${perStatement}) AS g`,
          [ids[(done / perStatement) % ids.length], done, done / perStatement],
        );
      }
    },
  },
  {
    name: 'many keys',
    async write(pool) {
      const first = await manyKeysRuns(pool);
      const perStatement = 20_000;
      for (let done = 0; done < BACKLOG; done += perStatement)
        await writeManyKeys(pool, first, 1_000_000 + done, Math.min(perStatement, BACKLOG - done));
    },
  },
];

/** Calls a second the fold takes from a backlog, with no service running. */
async function foldThroughput(url: string, pool: pg.Pool, backlog: Backlog): Promise<number> {
  await backlog.write(pool);
  const handle = await openDatabase({ url });
  try {
    const { changes } = await pendingToolCallChanges(handle.db);
    const started = performance.now();
    const { folded } = await foldEverything(handle.db, {
      progress: (done) => process.stdout.write(`\r  ${backlog.name}: ${done} of ${changes} changes folded`),
    });
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `\r  ${backlog.name}: a backlog of ${BACKLOG} calls (${changes} changes, ${folded} folded) in ${seconds.toFixed(2)} s`,
    );
    return Math.round(BACKLOG / seconds);
  } finally {
    await handle.close();
  }
}
