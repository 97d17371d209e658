// A bare HTTP server (node:http and pg, nothing else) for the recording benchmark's floor: what
// taking a recording request over HTTP and storing its rows costs before any GraphQL. It reads the
// same JSON bodies the API does (recordToolExecution's input, or recordSteps' steps), makes the
// same payload and metadata of each step, stores the rows with one INSERT (the triggers on: the
// change log is appended, as for the API), and answers the API's answer of success.
//   POST /  a recording request, as the API takes it
import http from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
});
/** Each run's id and next sequence, by uuid: the floor trusts its client and looks a run up once. */
const runs = new Map();

const INSERT = `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome, payload, metadata)
  SELECT $1, $2 + x.i - 1, 'tool', x.r, x.d, now(), x.t, x.s, x.e, x.o, x.p, x.m
    FROM unnest($3::int[], $4::int[], $5::text[], $6::text[], $7::boolean[], $8::text[], $9::jsonb[], $10::jsonb[])
         WITH ORDINALITY AS x(r, d, t, s, e, o, p, m, i)`;
const ONE = Buffer.from('{"data":{"recordToolExecution":{"__typename":"RecordedStepsSuccess"}}}');
const MANY = Buffer.from('{"data":{"recordSteps":{"__typename":"RecordedStepsSuccess"}}}');

async function bodyOf(request) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function runOf(uuid, steps) {
  let run = runs.get(uuid);
  if (!run) {
    const { rows } = await pool.query('SELECT id FROM runs WHERE uuid = $1', [uuid]);
    run = { id: rows[0].id, next: 1_000_000 };
    runs.set(uuid, run);
  }
  const first = run.next;
  run.next += steps;
  return { id: run.id, first };
}

const server = http.createServer(async (request, response) => {
  try {
    const { variables } = JSON.parse(await bodyOf(request));
    const input = variables.input;
    const single = input.steps === undefined;
    const steps = single ? [{ ...input, content: input.result }] : input.steps;
    const run = await runOf(input.runUuid, steps.length);
    const column = (of) => steps.map(of);
    const payloads = steps.map((step) =>
      JSON.stringify({ arguments: step.arguments ?? null, content: step.content ?? null, artifacts: [] }),
    );
    const metadata = steps.map((step) =>
      JSON.stringify({
        argumentsBytes: Buffer.byteLength(JSON.stringify(step.arguments ?? null)),
        contentBytes: Buffer.byteLength(step.content ?? ''),
        artifactCount: 0,
      }),
    );
    await pool.query(INSERT, [
      run.id,
      run.first,
      column((step) => step.round),
      column((step) => step.durationMs),
      column((step) => step.toolName),
      column((step) => step.server),
      column((step) => step.isError),
      column((step) => (step.isError ? 'failed' : 'ok')),
      payloads,
      metadata,
    ]);
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(single ? ONE : MANY);
  } catch (error) {
    response.writeHead(500).end(String(error));
  }
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`);
});
// Kept-alive connections would hold a closing server open: the benchmark is done with it.
process.on('SIGTERM', () => process.exit(0));
