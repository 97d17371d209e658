// A trace its sender never sent before (an exporter sends each trace once) is written as a new run by one
// statement; every other request takes the general path (the run locked, what it holds read, then written).
// Both must end in the same rows; a delivery of the same spans committing while the one statement waits must
// leave the spans stored once.
import type { Server as HttpServer } from 'node:http';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
import { createHttpServer } from '../../src/transport.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { agentTrace, exportSpans } from '../support/otel.ts';

const PERMISSIONS = ['record', 'read_own_runs'] as const;

async function listen(api: TestApi): Promise<{ http: HttpServer; endpoint: string }> {
  const http = createHttpServer(api.server);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const address = http.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { http, endpoint: `http://127.0.0.1:${address.port}/v1/traces` };
}

/** A run's rows, as comparable between owners: its own columns, its steps, its span records (no ids, no owner). */
async function runRows(api: TestApi, owner: string, configuration?: string) {
  const [run] = await selectRows<Record<string, unknown>>(
    api.db,
    sql`select id, status, termination_reason, rounds, prompt_tokens::text, completion_tokens::text,
               estimated_cost::text, finished_at
          from runs where owner = ${owner} and (${configuration ?? null}::text is null or configuration = ${configuration ?? null})`,
  );
  if (!run) throw new Error(`no run of ${owner}`);
  const steps = await selectRows<Record<string, unknown>>(
    api.db,
    sql`select sequence, kind, round, duration_ms, occurred_at, tool_name, server, tool_is_error, tool_outcome,
               payload, metadata
          from run_steps where run_id = ${run.id} order by sequence`,
  );
  const spans = await selectRows(
    api.db,
    sql`select trace_id, span_id, sequence, parent_span_id, call_role, tool_name, started_unix_nano::text,
               ended_unix_nano::text
          from otlp_spans where run_id = ${run.id} order by span_id`,
  );
  const { id: _id, ...columns } = run;
  return { columns, steps, spans };
}

describe.each(backendNames)('a trace new to its sender (%s)', (backend) => {
  let api: TestApi;
  let http: HttpServer;
  let endpoint: string;
  const statements: string[] = [];
  let listening = false;
  beforeAll(async () => {
    api = await openTestApi(backend, {
      onQuery: (text) => {
        if (listening) statements.push(text);
      },
    });
    ({ http, endpoint } = await listen(api));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => http.close(() => resolve()));
    await api?.dispose();
  });

  const send = async (actor: string, spans: ReadableSpan[]) => {
    const key = await api.keyFor(actor, PERMISSIONS);
    const result = await exportSpans('protobuf', spans, {
      url: endpoint,
      headers: { Authorization: `Bearer ${key}` },
    });
    expect(result.code).toBe(0);
  };

  it('is written by one statement: the run with its totals and end, its steps, its span records', async () => {
    // The key is read once, by an earlier request; then remembered, and checked in the same statement.
    await send('one-statement-agent', (await agentTrace('warm-up')).spans);
    const agent = await agentTrace('one-statement');
    statements.length = 0;
    listening = true;
    try {
      await send('one-statement-agent', agent.spans);
    } finally {
      listening = false;
    }
    expect(statements).toEqual([expect.stringMatching(/^with fresh as \(\s*insert into runs/)]);
    const { columns, steps, spans } = await runRows(api, 'one-statement-agent', 'one-statement');
    expect(columns).toMatchObject({ status: 'completed', termination_reason: 'completed' });
    expect(steps.length).toBeGreaterThan(4);
    expect(spans.length).toBe(agent.spans.length);
    // The triggers of run_steps read the run the same statement inserted: its calls are in the change log.
    const tools = steps.filter((step) => step.kind === 'tool');
    const [counted] = await selectRows<{ calls: number }>(
      api.db,
      sql`select coalesce(sum(ok + failed + cancelled), 0)::int as calls from tool_call_changes
           where owner = 'one-statement-agent' and configuration = 'one-statement'`,
    );
    expect(counted?.calls).toBe(tools.length);
    expect(tools.length).toBeGreaterThan(3);
  });

  it('a refusal of the whole group is answered as the general path answers it: nothing written', async () => {
    // A configuration name past its limit refuses the group's every span, whichever path takes it.
    const agent = await agentTrace('x'.repeat(250));
    const key = await api.keyFor('refused-agent', PERMISSIONS);
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: new TextDecoder().decode(JsonTraceSerializer.serializeRequest(agent.spans)),
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as {
      partialSuccess?: { rejectedSpans?: string; errorMessage?: string };
    };
    expect(answer.partialSuccess?.rejectedSpans).toBe(String(agent.spans.length));
    expect(answer.partialSuccess?.errorMessage).toContain('configuration');
    const [runs] = await selectRows<{ n: number }>(
      api.db,
      sql`select count(*)::int as n from runs where owner = 'refused-agent'`,
    );
    expect(runs?.n).toBe(0);
  });

  it('ends in the same rows as the general path: a run made by an earlier request, then every span', async () => {
    const agent = await agentTrace('both-paths');
    const chat = agent.spans.filter((s) => s.name.startsWith('chat '));
    expect(chat).toHaveLength(1);
    // One sender: the whole trace in one request, written by the one statement.
    await send('path-one', agent.spans);
    // The other: its run made by a request of the chat span alone, then the whole trace by the general path
    // (the chat span known, the rest new to a run that holds a step).
    await send('path-two', chat);
    const made = await runRows(api, 'path-two');
    expect(made.steps).toHaveLength(1);
    expect(made.columns).toMatchObject({ status: 'running' });
    await send('path-two', agent.spans);
    const [one, two] = [await runRows(api, 'path-one'), await runRows(api, 'path-two')];
    expect(two).toEqual(one);
    expect(one.steps.length).toBeGreaterThan(4);
    expect(one.columns).toMatchObject({ status: 'completed' });
    // Sent again: nothing written, either way.
    await send('path-one', agent.spans);
    expect(await runRows(api, 'path-one')).toEqual(one);
  });
});

describe.runIf(backendNames.includes('postgres'))(
  'a trace new to its sender, delivered twice at once (postgres)',
  () => {
    let api: TestApi;
    let http: HttpServer;
    let endpoint: string;
    let other: pg.Client;
    beforeAll(async () => {
      api = await openTestApi('postgres');
      ({ http, endpoint } = await listen(api));
      other = new pg.Client({ connectionString: api.database.url });
      await other.connect();
    });
    afterAll(async () => {
      await other?.end();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await api?.dispose();
    });

    /** A sender's key, and a trace of its agent with the trace's chat span. */
    async function traceOf(owner: string, configuration: string) {
      const key = await api.keyFor(owner, PERMISSIONS);
      const agent = await agentTrace(configuration);
      const chat = agent.spans.find((s) => s.name.startsWith('chat '));
      if (!chat) throw new Error('no chat span');
      return { key, agent, chat };
    }

    /** A run of another delivery holding one span of the trace (the chat span); committed unless said. */
    async function heldByAnother(owner: string, traceId: string, spanId: string, configuration: string) {
      const { rows } = await other.query<{ id: string }>(
        `INSERT INTO runs (uuid, owner, configuration, status) VALUES (gen_random_uuid(), $1, $2, 'running')
       RETURNING id`,
        [owner, configuration],
      );
      await other.query(
        'INSERT INTO otlp_spans (owner, trace_id, span_id, run_id, sequence) VALUES ($1, $2, $3, $4, NULL)',
        [owner, traceId, spanId, rows[0]?.id],
      );
    }

    /** The sender's runs, with their steps, and its span records: each span once. */
    async function storedOf(owner: string) {
      const runs = await selectRows<{ configuration: string; steps: number }>(
        api.db,
        sql`select r.configuration, (select count(*)::int from run_steps s where s.run_id = r.id) as steps
            from runs r where r.owner = ${owner} order by r.configuration`,
      );
      const [spans] = await selectRows<{ n: number; distinct: number }>(
        api.db,
        sql`select count(*)::int as n, count(distinct span_id)::int as distinct from otlp_spans where owner = ${owner}`,
      );
      return { runs, spans };
    }

    it('a trace another instance stored: the one statement finds it, writes nothing, and the general path goes on', async () => {
      const owner = 'other-instance-agent';
      const { key, agent, chat } = await traceOf(owner, 'other-instance');
      await heldByAnother(owner, agent.traceId, chat.spanContext().spanId, 'other-instance-first');
      const exported = await exportSpans('protobuf', agent.spans, {
        url: endpoint,
        headers: { Authorization: `Bearer ${key}` },
      });
      expect(exported.code).toBe(0);
      // Every span went to the run the trace went to first (the root ends only a run of its own trace).
      expect(await storedOf(owner)).toEqual({
        runs: [{ configuration: 'other-instance-first', steps: agent.spans.length - 2 }],
        spans: { n: agent.spans.length - 1, distinct: agent.spans.length - 1 },
      });
    });

    it('the one statement waits on the other delivery, fails on its spans, and the general path stores the rest once', async () => {
      const owner = 'racing-agent';
      const { key, agent, chat } = await traceOf(owner, 'racing');
      // Another delivery holds one of the trace's spans, in a run of its own, not yet committed.
      await other.query('BEGIN');
      await heldByAnother(owner, agent.traceId, chat.spanContext().spanId, 'racing-other');
      const exported = exportSpans('protobuf', agent.spans, {
        url: endpoint,
        headers: { Authorization: `Bearer ${key}` },
      });
      // The export's statement waits on the held span's index entry. (The activity is read afresh each time:
      // within a transaction PostgreSQL otherwise answers the snapshot of its first read.)
      for (let waited = 0; ; waited += 1) {
        await other.query('SELECT pg_stat_clear_snapshot()');
        const { rows: waiting } = await other.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'with fresh as%'`,
        );
        if ((waiting[0]?.n ?? 0) > 0) break;
        if (waited > 200) {
          const { rows: all } = await other.query(
            'SELECT state, wait_event_type, wait_event, left(query, 60) AS q FROM pg_stat_activity WHERE datname = current_database()',
          );
          throw new Error(`the export never waited on the other delivery: ${JSON.stringify(all)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await other.query('COMMIT');
      expect((await exported).code).toBe(0);
      // Everything went to the run the trace went to first; no run of the trace's own, no span twice (the
      // root ends only a run of its own trace).
      expect(await storedOf(owner)).toEqual({
        runs: [{ configuration: 'racing-other', steps: agent.spans.length - 2 }],
        spans: { n: agent.spans.length - 1, distinct: agent.spans.length - 1 },
      });
    });
  },
);
