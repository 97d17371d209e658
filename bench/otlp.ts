import os from 'node:os';
import { type Context, ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import pg from 'pg';
import { spanRunUuid } from '../src/domain/span-evidence.ts';
import { decodeProtobuf } from '../src/otlp/decode.ts';
import { mapSpans } from '../src/otlp/mapping.ts';
import { benchKey, freshDatabase, startService, table, timed, withoutTriggers } from './support.ts';

/**
 * Spans ingested per second through `POST /v1/traces` (protobuf, the service in
 * its own process, one trace per request as an SDK's batch would send it)
 * against the floor: plain `pg` inserts of the same rows (the run, its steps,
 * the span records) into the same tables with the triggers of run_steps off,
 * so that it stores the rows alone, in the same run; and beside it the same
 * inserts with the triggers on (the statistics' change log). The ratio is what decoding,
 * mapping, the evidence rule, the checks, the lock and the exactly-once
 * bookkeeping cost on top of the database.
 *
 * BENCH_CPU_PROF=DIR: a CPU profile of the service (otlp.cpuprofile). BENCH_OTLP_RETRIES=0: without the
 * retries (a profile of new spans alone).
 */
const TRACES = Number(process.env.BENCH_OTLP_TRACES ?? 400);
/** BENCH_OTLP_ROUNDS: rounds of the API and its floor, one after the other (3). */
const ROUNDS = Number(process.env.BENCH_OTLP_ROUNDS ?? 3);
const TOOL_SPANS = 48;
const CONCURRENCY = 8;

/** One agent trace: an invoke_agent root, a chat span and 48 tool calls of every outcome. */
async function traceBodies(count: number): Promise<Uint8Array[]> {
  const memory = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const tracer = provider.getTracer('bench-agent');
  const bodies: Uint8Array[] = [];
  for (let t = 0; t < count; t += 1) {
    const root = tracer.startSpan('invoke_agent bench', {
      attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'bench-otlp' },
    });
    const parent: Context = trace.setSpan(ROOT_CONTEXT, root);
    tracer
      .startSpan(
        'chat m',
        {
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.request.model': 'm',
            'gen_ai.usage.input_tokens': 900,
            'gen_ai.usage.output_tokens': 60,
            'gen_ai.response.finish_reasons': ['tool_calls'],
          },
        },
        parent,
      )
      .end();
    for (let i = 0; i < TOOL_SPANS; i += 1) {
      const span = tracer.startSpan(
        `execute_tool tool_${i % 20}`,
        {
          attributes: {
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': `tool_${i % 20}`,
            'server.address': `server_${i % 5}`,
            'gen_ai.tool.call.arguments': '{"query":"benchmark"}',
            'gen_ai.tool.call.result': 'a result of modest size',
          },
        },
        parent,
      );
      if (i % 7 === 0) {
        span.setAttribute('error.type', 'tool_error');
        span.setStatus({ code: SpanStatusCode.ERROR });
      } else if (i % 31 === 0) {
        span.setAttribute('error.type', 'AbortError');
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    }
    root.end();
    const body = ProtobufTraceSerializer.serializeRequest(memory.getFinishedSpans());
    if (!body) throw new Error('nothing serialised');
    bodies.push(body);
    memory.reset();
  }
  await provider.shutdown();
  return bodies;
}

/** The rows ingestion writes for one request, computed here once, for the plain inserts. */
function plainRows(body: Uint8Array) {
  const spans = mapSpans(decodeProtobuf(body));
  const steps = spans
    .filter((s) => s.step !== null)
    .sort((a, b) => (a.startUnixNano < b.startUnixNano ? -1 : 1))
    .map((s, index) => {
      const step = s.step;
      if (step?.type === 'tool') {
        const outcome = step.result.outcome;
        return {
          span: s,
          sequence: index + 1,
          kind: 'tool',
          durationMs: step.call.durationMs,
          occurredAt: step.call.occurredAt ?? s.endedAt,
          toolName: step.call.toolName,
          server: step.call.server ?? null,
          isError: outcome !== 'ok',
          outcome,
          payload: { arguments: step.call.arguments ?? null, content: step.result.content, artifacts: [] },
          metadata: { argumentsBytes: 21, contentBytes: 23, artifactCount: 0 },
        };
      }
      return {
        span: s,
        sequence: index + 1,
        kind: 'llm',
        durationMs: step?.type === 'plain' ? step.step.durationMs : 0,
        occurredAt: s.endedAt,
        toolName: null,
        server: null,
        isError: null,
        outcome: null,
        payload: {},
        metadata: { model: 'm', promptTokens: 900, completionTokens: 60, finishReason: 'tool_calls' },
      };
    });
  const root = spans.find((s) => s.ending !== null);
  return { spans, steps, root };
}

/** The rows of each request stored by hand under this owner: a run, its steps and its span records, no checks. */
function insertPlain(pool: pg.Pool, rows: ReturnType<typeof plainRows>[], owner: string) {
  return async (i: number) => {
    const { spans, steps, root } = rows[i] ?? rows[0] ?? { spans: [], steps: [], root: undefined };
    const traceId = spans[0]?.traceId ?? '';
    const { rows: made } = await pool.query<{ id: string }>(
      `INSERT INTO runs (uuid, owner, configuration, status, termination_reason, finished_at)
       VALUES ($1, $3, 'bench-otlp', 'completed', 'completed', $2) RETURNING id`,
      [
        spanRunUuid('bench-secret-of-the-plain-rows-000000000', owner, 'trace', traceId),
        root?.endedAt ?? new Date(),
        owner,
      ],
    );
    const runId = made[0]?.id ?? '';
    await pool.query(
      `INSERT INTO run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome, payload, metadata)
       SELECT $1, s.sequence, s.kind, 0, s.duration_ms, s.occurred_at, s.tool_name, s.server, s.tool_is_error, s.tool_outcome, s.payload, s.metadata
         FROM jsonb_to_recordset($2::jsonb) AS s(sequence int, kind text, duration_ms int, occurred_at timestamptz,
              tool_name text, server text, tool_is_error boolean, tool_outcome text, payload jsonb, metadata jsonb)`,
      [
        runId,
        JSON.stringify(
          steps.map((s) => ({
            sequence: s.sequence,
            kind: s.kind,
            duration_ms: s.durationMs,
            occurred_at: s.occurredAt.toISOString(),
            tool_name: s.toolName,
            server: s.server,
            tool_is_error: s.isError,
            tool_outcome: s.outcome,
            payload: s.payload,
            metadata: s.metadata,
          })),
        ),
      ],
    );
    const records = [...steps.map((s) => ({ span_id: s.span.spanId, sequence: s.sequence }))];
    if (root) records.push({ span_id: root.spanId, sequence: null as unknown as number });
    await pool.query(
      `INSERT INTO otlp_spans (owner, trace_id, span_id, run_id, sequence)
       SELECT $4, $1, r.span_id, $2, r.sequence FROM jsonb_to_recordset($3::jsonb) AS r(span_id text, sequence int)`,
      [traceId, runId, JSON.stringify(records), owner],
    );
  };
}

export async function benchOtlp(): Promise<void> {
  console.log(`\n## OTLP ingestion: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown cpu'}`);
  const url = await freshDatabase('runledger_bench_otlp');
  const key = await benchKey(url);
  const service = await startService(url, {
    nodeArgs: process.env.BENCH_CPU_PROF
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, '--cpu-prof-name=otlp.cpuprofile']
      : [],
  });
  const endpoint = `${new URL(service.url).origin}/v1/traces`;
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY });
  try {
    // The service's code compiled and optimised (V8 tiers a function up after many calls) and the
    // database's caches warm before anything is measured: a round of new traces, not counted (with 20
    // requests only, the first measured round ran at about 0.6 of the later ones).
    const warm = await traceBodies(Number(process.env.BENCH_OTLP_WARM ?? TRACES));
    const spansPerTrace = TOOL_SPANS + 2;
    const send = async (body: Uint8Array) => {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${key}` },
        body: new Uint8Array(body),
      });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`export answered ${response.status}`);
    };
    await timed(warm.length, CONCURRENCY, (i) => send(warm[i] ?? new Uint8Array()));

    // Each round: new traces through the API, the same again (retries), then the same rows by hand. The
    // rounds interleave the API and its floor, so that the machine's speed, which moves from minute to
    // minute here, weighs on both alike; the ratios are reported per round and as their median.
    const rounds: Array<{ api: number; retry: number; pg: number; floor: number }> = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const bodies = await traceBodies(TRACES);
      const api = await timed(bodies.length, CONCURRENCY, (i) => send(bodies[i] ?? new Uint8Array()));
      // The same batches again, as an exporter's retries: every span is known, nothing written.
      const retry =
        process.env.BENCH_OTLP_RETRIES === '0'
          ? Number.NaN
          : await timed(bodies.length, CONCURRENCY, (i) => send(bodies[i] ?? new Uint8Array()));
      // The same rows by hand (other owners, so other runs): a run, its 49 steps, 50 span records, no checks.
      const rows = bodies.map(plainRows);
      const pgSeconds = await timed(rows.length, CONCURRENCY, insertPlain(pool, rows, `plain-${round}`));
      const floor = await withoutTriggers(pool, () =>
        timed(rows.length, CONCURRENCY, insertPlain(pool, rows, `floor-${round}`)),
      );
      rounds.push({ api, retry, pg: pgSeconds, floor });
    }

    const perSecond = (seconds: number) => Math.round((TRACES * spansPerTrace) / seconds);
    const ratio = (a: number, b: number) => Number((perSecond(a) / perSecond(b)).toFixed(2));
    const median = (values: number[]) => {
      const sorted = [...values].sort((x, y) => x - y);
      return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
    };
    table(
      rounds.map((r, i) => ({
        round: `${i + 1}: ${TRACES} requests of ${spansPerTrace} spans, ${CONCURRENCY} clients`,
        'API spans/s': perSecond(r.api),
        'floor spans/s': perSecond(r.floor),
        'API / floor': ratio(r.api, r.floor),
        'retries spans/s': Number.isNaN(r.retry) ? '-' : perSecond(r.retry),
        'retries / floor': Number.isNaN(r.retry) ? '-' : ratio(r.retry, r.floor),
        'pg + change log spans/s': perSecond(r.pg),
        'pg + change log / floor': ratio(r.pg, r.floor),
      })),
    );
    console.log(
      `  median of ${rounds.length} rounds: API / floor ${median(rounds.map((r) => ratio(r.api, r.floor)))}` +
        `, retries (nothing written) / floor ${median(rounds.map((r) => ratio(r.retry, r.floor)))}` +
        `, pg + change log / floor ${median(rounds.map((r) => ratio(r.pg, r.floor)))}`,
    );
  } finally {
    await pool.end();
    await service.stop();
  }
}
