import os from 'node:os';
import pg from 'pg';
import { openDatabase } from '../src/db/connection.ts';
import { migrate } from '../src/db/migrator.ts';
import {
  benchKey,
  freshDatabase,
  graphql,
  quantile,
  rssMb,
  type Service,
  startBareServer,
  startService,
  table,
} from './support.ts';

/**
 * A long run's timeline: 5,000 steps (a tool call and its output of 20 KB in
 * most, LLM, context and tool_write steps between), in a database that holds
 * other runs too. The API (over HTTP, the service in its own process) against a
 * plain `pg` fetch of the same rows' metadata (the columns a line shows and its
 * metadata), in the same run; and the service's memory after many requests.
 * Beside them, the floor of any answer over HTTP: a bare node:http server that
 * runs the plain fetch (or reads the same rows as unparsed text, the cheapest
 * read) and sends the API's own answer, bytes made once; and that answer alone.
 * BENCH_CPU_PROF=DIR: a CPU profile of the service.
 */
const STEPS = Number(process.env.BENCH_TIMELINE_STEPS ?? 5_000);
const OUTPUT_BYTES = Number(process.env.BENCH_OUTPUT_BYTES ?? 20_000);
/** The same run again with outputs this small: what the service spends must not depend on them. */
const SMALL_OUTPUT_BYTES = 200;
const OTHER_RUNS = Number(process.env.BENCH_OTHER_RUNS ?? 50);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 25);

// Tool output that does not compress to nothing: hex of hashes, as long as asked.
const outputSql = (bytes: number) =>
  `(SELECT string_agg(md5((g * 7919 + k)::text), '') FROM generate_series(1, ${Math.ceil(bytes / 32)}) AS k)`;

async function seedRun(client: pg.Client, uuid: string, steps: number, outputBytes: number): Promise<void> {
  const output = outputSql(outputBytes);
  const {
    rows: [run],
  } = await client.query<{ id: string }>(
    `INSERT INTO runs (uuid, owner, configuration, status, created_at, started_at)
     VALUES ($1, 'bench', 'timeline', 'running', now(), now()) RETURNING id::text`,
    [uuid],
  );
  // Kinds in turn: mostly tool calls with their output, an LLM step, context, a write.
  await client.query(
    `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server,
                            tool_is_error, tool_outcome, payload, metadata)
     SELECT $1::bigint, g, kind, 1 + g / 10, (g * 37) % 5000, now() - (($2 - g) * interval '1 second'),
            CASE WHEN kind IN ('tool', 'tool_write') THEN 'tool_' || (g % 13) END,
            CASE WHEN kind IN ('tool', 'tool_write') THEN 'server_' || (g % 5) END,
            CASE WHEN kind = 'tool' THEN g % 11 = 0 END,
            CASE WHEN kind <> 'tool' OR g % 7 = 0 THEN NULL WHEN g % 11 = 0 THEN 'failed' ELSE 'ok' END,
            CASE WHEN kind = 'tool'
                 THEN jsonb_build_object('arguments', jsonb_build_object('path', '/data/' || g), 'content', ${output}, 'artifacts', '[]'::jsonb)
                 WHEN kind = 'llm' THEN jsonb_build_object('messages', jsonb_build_array(${output}))
                 ELSE '{}'::jsonb END,
            CASE WHEN kind = 'tool' THEN jsonb_build_object('argumentsBytes', 20, 'contentBytes', ${outputBytes}, 'artifactCount', 0)
                 WHEN kind = 'llm' THEN jsonb_build_object('model', 'gpt-bench', 'promptTokens', g, 'completionTokens', 20, 'finishReason', 'stop')
                 WHEN kind = 'tool_write' THEN jsonb_build_object('writeTarget', jsonb_build_object('table', 'notes', 'uid', 'n' || g, 'kind', 'created'))
                 ELSE jsonb_build_object('messageCount', g % 40) END
       FROM generate_series(1, $2) AS g,
            LATERAL (SELECT (ARRAY['tool', 'tool', 'tool', 'tool', 'tool', 'llm', 'context', 'tool_write'])[1 + g % 8] AS kind) AS k`,
    [run?.id, steps],
  );
}

async function seed(url: string): Promise<{ uuid: string; smallOutputs: string }> {
  const handle = await openDatabase({ url });
  await migrate(handle);
  await handle.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const started = Date.now();
  // Other runs first, so the measured run's rows are not the only ones in the table.
  for (let r = 0; r < OTHER_RUNS; r += 1) await seedRun(client, crypto.randomUUID(), 100, OUTPUT_BYTES);
  const uuid = crypto.randomUUID();
  await seedRun(client, uuid, STEPS, OUTPUT_BYTES);
  const smallOutputs = crypto.randomUUID();
  await seedRun(client, smallOutputs, STEPS, SMALL_OUTPUT_BYTES);
  await client.query('VACUUM ANALYZE');
  console.log(
    `  seeded a ${STEPS.toLocaleString('en')}-step run (${OUTPUT_BYTES.toLocaleString('en')} B outputs), the same with ${SMALL_OUTPUT_BYTES} B outputs, and ${OTHER_RUNS} others (${((Date.now() - started) / 1000).toFixed(0)} s)`,
  );
  await client.end();
  return { uuid, smallOutputs };
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

const TIMELINE = `query ($uuid: String!) { run(uuid: $uuid) {
  timeline(locale: EN) { sequence kind occurredAt round durationMs outcome outcomeLabel detail } } }`;
const PAGE = `query ($uuid: String!, $after: String) { run(uuid: $uuid) {
  timelinePage(locale: EN, first: 500, after: $after) {
    edges { node { sequence kind occurredAt round durationMs outcome outcomeLabel detail } }
    pageInfo { hasNextPage endCursor } } } }`;
const STEPS_PAGE = `query ($uuid: String!) { run(uuid: $uuid) {
  steps(first: 100) { edges { node { sequence kind toolName server outcome durationMs metadata } } } } }`;
// The same rows' metadata, as a client of the database alone would read it.
const PLAIN = `SELECT s.sequence, s.kind, s.occurred_at, s.round, s.duration_ms, s.tool_name, s.server,
                      s.tool_is_error, s.tool_outcome, s.metadata
                 FROM run_steps s JOIN runs r ON r.id = s.run_id WHERE r.uuid = $1 ORDER BY s.sequence`;
const PLAIN_PAGE = `${PLAIN} LIMIT 501`;

interface Entry {
  sequence: number;
  detail: string;
}

/**
 * The same timeline of runs that differ only in the size of their tool
 * outputs, read in turn: the service's CPU and memory per timeline must not
 * follow the outputs it does not return.
 */
async function compareOutputSizes(
  service: Service,
  key: string,
  runs: Record<number, string>,
): Promise<void> {
  const ROUNDS = 4;
  const READS = 10;
  const spent = new Map<number, { cpuMs: number; times: number[]; rssMb: number }>();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [bytes, uuid] of Object.entries(runs)) {
      const entry = spent.get(Number(bytes)) ?? { cpuMs: 0, times: [], rssMb: 0 };
      const cpu = (await service.memory()).cpuMicros;
      for (let i = 0; i < READS; i += 1) {
        const started = process.hrtime.bigint();
        await graphql(service.url, key, TIMELINE, { uuid });
        entry.times.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      entry.cpuMs += ((await service.memory()).cpuMicros - cpu) / 1000;
      entry.rssMb = rssMb(service.pid);
      spent.set(Number(bytes), entry);
    }
  }
  table(
    [...spent].map(([bytes, { cpuMs, times, rssMb: rss }]) => ({
      'tool output B': bytes,
      'API median ms': Number(
        quantile(
          times.sort((a, b) => a - b),
          0.5,
        ).toFixed(1),
      ),
      'service CPU ms per timeline': Number((cpuMs / (ROUNDS * READS)).toFixed(1)),
      'service RSS MB after its last round': Number(rss.toFixed(0)),
    })),
  );
  const sizes = [...spent.keys()].sort((a, b) => a - b);
  const cpuOf = (bytes: number | undefined) => spent.get(bytes ?? 0)?.cpuMs ?? Number.NaN;
  console.log(
    `  the same ${STEPS} steps with outputs of ${sizes.join(' and ')} B, ${ROUNDS} rounds of ${READS} reads each in turn: service CPU per timeline, largest / smallest outputs, ${(cpuOf(sizes.at(-1)) / cpuOf(sizes[0])).toFixed(2)}`,
  );
}

export async function benchTimeline(): Promise<void> {
  console.log(`\n## timeline: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown cpu'}`);
  const url = await freshDatabase('runledger_bench_timeline');
  const { uuid, smallOutputs } = await seed(url);
  const key = await benchKey(url);
  const service = await startService(url, {
    nodeArgs: process.env.BENCH_CPU_PROF
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, '--cpu-prof-name=timeline.cpuprofile']
      : [],
  });
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  let floor: Awaited<ReturnType<typeof startBareServer>> | null = null;
  try {
    floor = await startBareServer('./answer-floor.mjs', { DATABASE_URL: url, FLOOR_STATEMENT: PLAIN });
    const floorUrl = floor.url;
    // Same rows first: every step once, in order, and no line shows the output.
    const whole = await graphql<{ run: { timeline: Entry[] } }>(service.url, key, TIMELINE, { uuid });
    const plain = await pool.query<{ sequence: number }>(PLAIN, [uuid]);
    const sequences = whole.run.timeline.map((entry) => entry.sequence);
    if (JSON.stringify(sequences) !== JSON.stringify(plain.rows.map((row) => row.sequence))) {
      throw new Error('the timeline and the plain fetch disagree on the steps');
    }
    if (whole.run.timeline.some((entry) => entry.detail.length > 200))
      throw new Error('a detail line is long');
    const paged: number[] = [];
    let after: string | null = null;
    for (;;) {
      const page: {
        run: {
          timelinePage: {
            edges: Array<{ node: Entry }>;
            pageInfo: { hasNextPage: boolean; endCursor: string | null };
          };
        };
      } = await graphql(service.url, key, PAGE, { uuid, after });
      paged.push(...page.run.timelinePage.edges.map((edge) => edge.node.sequence));
      if (!page.run.timelinePage.pageInfo.hasNextPage) break;
      after = page.run.timelinePage.pageInfo.endCursor;
    }
    if (JSON.stringify(paged) !== JSON.stringify(sequences))
      throw new Error('the pages and the timeline disagree');
    console.log(
      `  the timeline, its ${Math.ceil(STEPS / 500)} pages and the plain fetch agree on ${STEPS} steps`,
    );

    // The API's answer as sent, for the bare server to send as it is.
    const answer = await fetch(service.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: TIMELINE, variables: { uuid } }),
    }).then((response) => response.arrayBuffer());
    await fetch(`${floorUrl}/answer`, { method: 'PUT', body: answer });

    const rssBefore = rssMb(service.pid);
    // The service's own CPU per whole timeline: what it costs whatever else the machine runs.
    const cpuBefore = (await service.memory()).cpuMicros;
    const wholeTimes = await measure(`whole timeline, ${STEPS} steps: API`, () =>
      graphql(service.url, key, TIMELINE, { uuid }),
    );
    const cpuPerTimeline = ((await service.memory()).cpuMicros - cpuBefore) / (REPEATS + 3) / 1000;
    const post = async (path: string, body: string) => {
      const response = await fetch(`${floorUrl}${path}`, { method: 'POST', body });
      if (!response.ok) throw new Error(`the bare server answered ${response.status}`);
      return response.json();
    };
    const results = [
      wholeTimes,
      await measure(`same rows' metadata: plain pg`, () => pool.query(PLAIN, [uuid])),
      await measure('plain pg, then the same answer: bare HTTP', () =>
        post('/fetch-answer', JSON.stringify({ uuid })),
      ),
      await measure('the same rows as text, then the answer: bare HTTP', () =>
        post('/text-answer', JSON.stringify({ uuid })),
      ),
      await measure('the same answer alone: bare HTTP', () => post('/answer', '')),
      await measure('first timeline page (500): API', () =>
        graphql(service.url, key, PAGE, { uuid, after: null }),
      ),
      await measure(`same 501 rows' metadata: plain pg`, () => pool.query(PLAIN_PAGE, [uuid])),
      await measure('first 100 steps with metadata: API', () =>
        graphql(service.url, key, STEPS_PAGE, { uuid }),
      ),
    ];
    for (let i = 0; i < 50; i += 1) await graphql(service.url, key, TIMELINE, { uuid });
    const rssAfter = rssMb(service.pid);
    table(
      results.map((r) => ({
        query: r.name,
        'median ms': Number(quantile(r.times, 0.5).toFixed(1)),
        'p95 ms': Number(quantile(r.times, 0.95).toFixed(1)),
      })),
    );
    const ratio = (a: number, b: number) =>
      (quantile(results[a]?.times ?? [], 0.5) / quantile(results[b]?.times ?? [], 0.5)).toFixed(3);
    console.log(
      `  median ratio API / plain pg: whole timeline ${ratio(0, 1)} (target <= 1.5), one page ${ratio(5, 6)}`,
    );
    console.log(
      `  the floor of any answer over HTTP, / plain pg: from a bare server, the plain fetch then the API's answer (${(answer.byteLength / 1e6).toFixed(2)} MB, made once) ${ratio(2, 1)}; the rows as unparsed text then that answer ${ratio(3, 1)}; that answer alone ${ratio(4, 1)}. API / the first ${ratio(0, 2)}`,
    );
    console.log(`  service CPU per whole timeline: ${cpuPerTimeline.toFixed(1)} ms`);
    console.log(
      `  service RSS: ${rssBefore.toFixed(0)} MB after the checks, ${rssAfter.toFixed(0)} MB after ${REPEATS * 3 + 3 * 5 + 50} more timeline reads (${(rssAfter - rssBefore).toFixed(0)} MB)`,
    );
    await compareOutputSizes(service, key, { [OUTPUT_BYTES]: uuid, [SMALL_OUTPUT_BYTES]: smallOutputs });
  } finally {
    await pool.end();
    await floor?.stop();
    await service.stop();
  }
}
