import os from 'node:os';
import pg from 'pg';
import { openDatabase } from '../src/db/connection.ts';
import { migrate } from '../src/db/migrator.ts';
import { benchKey, freshDatabase, graphql, quantile, startService, table } from './support.ts';

/**
 * Outcome aggregations at scale: 1,000,000 tool steps over 90 days, 20
 * servers, 200 tools, 10% legacy rows. The API (over HTTP, the service in its
 * own process) against a plain GROUP BY over run_steps through `pg` giving
 * the same answers, measured in the same run.
 */
const STEPS = Number(process.env.BENCH_STEPS ?? 1_000_000);
const CHUNK = 100_000;
const DAYS = 90;
const REPEATS = Number(process.env.BENCH_REPEATS ?? 25);

async function seed(url: string, end: Date): Promise<void> {
  const handle = await openDatabase({ url });
  await migrate(handle);
  await handle.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const started = Date.now();
  const runCount = Math.ceil(STEPS / 10);
  await client.query(
    `INSERT INTO runs (uuid, owner, configuration, status, termination_reason, created_at, started_at, finished_at)
     SELECT gen_random_uuid(), 'owner_' || (g % 20), 'config_' || (g % 10), 'completed', 'completed', t, t, t
       FROM generate_series(1, $1) AS g, LATERAL (SELECT $2::timestamptz - (g::float / $1) * interval '${DAYS} days' AS t) AS at`,
    [runCount, end.toISOString()],
  );
  const { rows } = await client.query<{ min: string }>('SELECT min(id)::text AS min FROM runs');
  const firstRun = Number(rows[0]?.min ?? 1);
  for (let offset = 0; offset < STEPS; offset += CHUNK) {
    const count = Math.min(CHUNK, STEPS - offset);
    // Ten tool calls per run, spread evenly over the 90 days; tool k belongs to server k % 20.
    await client.query(
      `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome)
       SELECT $1 + (g / 10), (g % 10) + 1, 'tool', 1,
              least(3000000, floor(exp(random() * 9))::int),
              $2::timestamptz - ((g + 0.5) / $3) * interval '${DAYS} days',
              'tool_' || tool, 'server_' || (tool % 20),
              roll >= 0.92, CASE WHEN legacy THEN NULL WHEN roll >= 0.97 THEN 'cancelled' WHEN roll >= 0.92 THEN 'failed' ELSE 'ok' END
         FROM generate_series($4::bigint, $5::bigint) AS g,
              LATERAL (SELECT (hashint8(g) & 2147483647) % 200 AS tool, random() AS roll, random() < 0.1 AS legacy) AS pick`,
      [firstRun, end.toISOString(), STEPS, offset, offset + count - 1],
    );
    const done = offset + count;
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `  seeded ${done.toLocaleString('en')} / ${STEPS.toLocaleString('en')} tool steps (${seconds.toFixed(0)} s)`,
    );
  }
  await client.query('ANALYZE');
  await client.end();
}

async function measure(
  name: string,
  work: () => Promise<unknown>,
): Promise<{ name: string; times: number[] }> {
  for (let i = 0; i < 3; i += 1) await work();
  const times: number[] = [];
  for (let i = 0; i < REPEATS; i += 1) {
    const started = process.hrtime.bigint();
    await work();
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return { name, times: times.sort((a, b) => a - b) };
}

const BY_SERVER = `query ($from: DateTime!, $to: DateTime!) {
  toolOutcomeStats(groupBy: [SERVER], filter: { occurredAfter: $from, occurredBefore: $to }, first: 500) {
    groups { server counts { ok failed cancelled total failureRate } p50DurationMs p95DurationMs } } }`;
const BY_SERVER_COUNTS = `query ($from: DateTime!, $to: DateTime!) {
  toolOutcomeStats(groupBy: [SERVER], filter: { occurredAfter: $from, occurredBefore: $to }, first: 500) {
    groups { server counts { ok failed cancelled total failureRate } } } }`;
const TOOL_SERIES = `query ($from: DateTime!, $to: DateTime!, $server: String!) {
  toolOutcomeStats(groupBy: [TOOL], bucket: DAY, filter: { occurredAfter: $from, occurredBefore: $to, servers: [$server] }, first: 500) {
    groups { toolName bucketStart counts { ok failed cancelled total failureRate } p50DurationMs p95DurationMs } } }`;

const PLAIN_COUNTS = `count(*) FILTER (WHERE o = 'ok') AS ok, count(*) FILTER (WHERE o = 'failed') AS failed,
  count(*) FILTER (WHERE o = 'cancelled') AS cancelled, count(*) AS total,
  percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
  percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95`;
const PLAIN_BY_SERVER = `SELECT server, ${PLAIN_COUNTS}
  FROM (SELECT server, duration_ms, stated_tool_outcome(kind, tool_is_error, tool_outcome) AS o FROM run_steps
         WHERE kind = 'tool' AND occurred_at >= $1 AND occurred_at < $2) s
 WHERE o IS NOT NULL GROUP BY server`;
const PLAIN_TOOL_SERIES = `SELECT tool_name, date_trunc('day', occurred_at AT TIME ZONE 'UTC') AS day, ${PLAIN_COUNTS}
  FROM (SELECT tool_name, occurred_at, duration_ms, stated_tool_outcome(kind, tool_is_error, tool_outcome) AS o FROM run_steps
         WHERE kind = 'tool' AND server = $3 AND occurred_at >= $1 AND occurred_at < $2) s
 WHERE o IS NOT NULL GROUP BY 1, 2`;

export async function benchStats(): Promise<void> {
  console.log(`\n## outcome statistics: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown cpu'}`);
  const url = await freshDatabase('runledger_bench_stats');
  const end = new Date();
  console.log(`seeding ${STEPS.toLocaleString('en')} tool steps over ${DAYS} days (10% legacy rows)`);
  await seed(url, end);
  const from = new Date(end.getTime() - DAYS * 86_400_000).toISOString();
  const to = new Date(end.getTime() + 1).toISOString();
  const key = await benchKey(url);
  const service = await startService(url);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    // Same answers first: the API's counts equal the plain GROUP BY's.
    const api = await graphql<{
      toolOutcomeStats: { groups: Array<{ server: string; counts: { total: number; failed: number } }> };
    }>(service.url, key, BY_SERVER, { from, to });
    const plain = await pool.query<{ server: string; total: string; failed: string }>(PLAIN_BY_SERVER, [
      from,
      to,
    ]);
    const plainTotals = new Map(plain.rows.map((r) => [r.server, `${r.total}/${r.failed}`]));
    for (const group of api.toolOutcomeStats.groups) {
      if (plainTotals.get(group.server) !== `${group.counts.total}/${group.counts.failed}`) {
        throw new Error(`API and plain SQL disagree on ${group.server}`);
      }
    }
    console.log(
      `  the API and the plain GROUP BY agree on all ${api.toolOutcomeStats.groups.length} servers`,
    );

    const results = [
      await measure('by server, 90 days: API', () => graphql(service.url, key, BY_SERVER, { from, to })),
      await measure('by server, 90 days: plain SQL', () => pool.query(PLAIN_BY_SERVER, [from, to])),
      await measure('by server, 90 days, counts only: API', () =>
        graphql(service.url, key, BY_SERVER_COUNTS, { from, to }),
      ),
      await measure('daily series by tool, one server: API', () =>
        graphql(service.url, key, TOOL_SERIES, { from, to, server: 'server_7' }),
      ),
      await measure('daily series by tool, one server: plain SQL', () =>
        pool.query(PLAIN_TOOL_SERIES, [from, to, 'server_7']),
      ),
    ];
    const row = (r: { name: string; times: number[] }) => ({
      query: r.name,
      'median ms': Number(quantile(r.times, 0.5).toFixed(1)),
      'p95 ms': Number(quantile(r.times, 0.95).toFixed(1)),
    });
    table(results.map(row));
    const ratio = (a: number, b: number) =>
      (quantile(results[a]?.times ?? [], 0.5) / quantile(results[b]?.times ?? [], 0.5)).toFixed(3);
    console.log(
      `  median ratio API / plain SQL: by server ${ratio(0, 1)}, counts only ${ratio(2, 1)}, daily series ${ratio(3, 4)}`,
    );
  } finally {
    await pool.end();
    await service.stop();
  }
}
