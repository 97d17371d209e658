import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { agentTrace, type ExporterKind, exportSpans } from '../support/otel.ts';
import { type PrivatePostgres, startPrivatePostgres } from '../support/private-postgres.ts';
import { post, type Running, startService } from '../support/service.ts';
import { SseReader, subscriptionRequest } from '../support/sse.ts';

/**
 * The real process, as `npm start` runs it, fed by the SDK's exporters
 * configured the way an agent's deployment configures them: through the
 * OTEL_EXPORTER_OTLP_* environment variables alone.
 */

const RUN_QUERY = `query ($configuration: [String!]) {
  runs(first: 5, filter: { configurations: $configuration }) {
    edges { node { status toolOutcomeCounts { ok failed cancelled failureRate } steps(first: 50) { edges { node { sequence outcome } } } } }
  }
}`;

interface RunRead {
  status: string;
  toolOutcomeCounts: { ok: number; failed: number; cancelled: number; failureRate: number | null };
  steps: { edges: Array<{ node: { sequence: number; outcome: string | null } }> };
}

async function runsOf(running: Running, key: string, configuration: string): Promise<RunRead[]> {
  const answer = await post(running.url, key, RUN_QUERY, { configuration: [configuration] });
  expect(answer.status).toBe(200);
  return (answer.body.data as { runs: { edges: Array<{ node: RunRead }> } }).runs.edges.map((e) => e.node);
}

/** Sets OTEL_* variables for the exporters made inside `work`, then puts back what was there. */
async function withEnvironment<T>(variables: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(variables).map((name) => [name, process.env[name]]));
  Object.assign(process.env, variables);
  try {
    return await work();
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

describe.each(backendNames)('OTLP exporters against the real process (%s)', (backend) => {
  let database: TestDatabase | undefined;
  let running: Running;
  let key: string;
  beforeAll(async () => {
    if (backend === 'postgres') database = await openTestDatabase('postgres', { migrateTo: 0 });
    running = await startService(
      backend === 'postgres' ? { DATABASE_URL: database?.url ?? '' } : { PGLITE_DATA_DIR: 'memory://' },
      // An embedded database is created and migrated at start: slower on a busy machine.
      { timeoutMs: 100_000 },
    );
    key = running.adminKey() ?? '';
  }, 120_000);
  afterAll(async () => {
    if (running?.child.exitCode === null) running.child.kill('SIGKILL');
    await database?.dispose();
  });

  it.each([
    ['protobuf', 'gzip'],
    ['json', 'none'],
  ] as Array<[ExporterKind, string]>)(
    'the %s exporter (compression %s), configured by OTEL_EXPORTER_OTLP_* only, records the run; its retry nothing more',
    async (kind, compression) => {
      const configuration = `service-${kind}`;
      const agent = await agentTrace(configuration);
      const environment = {
        OTEL_EXPORTER_OTLP_ENDPOINT: new URL(running.url).origin,
        // As a deployment writes it: the value percent-encoded.
        OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer%20${key}`,
        OTEL_EXPORTER_OTLP_COMPRESSION: compression,
      };
      const sent = await withEnvironment(environment, () => exportSpans(kind, agent.spans));
      expect(sent.code).toBe(0);
      const [run, ...more] = await runsOf(running, key, configuration);
      expect(more).toEqual([]);
      expect(run).toMatchObject({
        status: 'COMPLETED',
        toolOutcomeCounts: { ok: 1, failed: 2, cancelled: 1, failureRate: 2 / 3 },
      });
      expect(run?.steps.edges.map((e) => e.node.outcome)).toEqual([
        null,
        'OK',
        'FAILED',
        'FAILED',
        'CANCELLED',
      ]);

      const again = await withEnvironment(environment, () => exportSpans(kind, agent.spans));
      expect(again.code).toBe(0);
      expect(await runsOf(running, key, configuration)).toEqual([run]);
    },
  );

  it('the same new trace sent four times at once is stored once', async () => {
    const configuration = 'service-race';
    const agent = await agentTrace(configuration);
    const body = ProtobufTraceSerializer.serializeRequest(agent.spans) ?? new Uint8Array();
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        fetch(`${new URL(running.url).origin}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${key}` },
          body: new Uint8Array(body),
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    const runs = await runsOf(running, key, configuration);
    expect(runs).toHaveLength(1);
    expect(runs[0]?.steps.edges.map((e) => e.node.sequence)).toEqual([1, 2, 3, 4, 5]);
  });

  it("reaches a live stream of the run: each export's steps, then the run's end", async () => {
    const configuration = 'service-live';
    const agent = await agentTrace(configuration);
    const root = agent.spans.find((span) => span.name === `invoke_agent ${configuration}`);
    const rest = agent.spans.filter((span) => span !== root);
    const [first, ...later] = rest;
    if (!root || !first) throw new Error('missing spans');
    const endpoint = `${new URL(running.url).origin}/v1/traces`;
    const send = async (spans: typeof agent.spans) => {
      const answer = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${key}` },
        body: new Uint8Array(ProtobufTraceSerializer.serializeRequest(spans) ?? new Uint8Array()),
      });
      expect(answer.status).toBe(200);
    };
    // The first span makes the run; a stream of it is opened, then the rest arrives.
    await send([first]);
    const listed = await post(
      running.url,
      key,
      `query ($c: [String!]) { runs(first: 1, filter: { configurations: $c }) {
      edges { node { uuid } } } }`,
      { c: [`${configuration}-service`] },
    );
    const uuid = (listed.body.data as { runs: { edges: Array<{ node: { uuid: string } }> } }).runs.edges[0]
      ?.node.uuid;
    if (!uuid) throw new Error('no run');
    const stream = new SseReader(await fetch(subscriptionRequest(running.url, key, { uuid, after: 1 })));
    try {
      // The run as it stands, before anything new.
      expect((await stream.event()).step).toBeNull();
      await send(later);
      const seen: number[] = [];
      while (seen.length < later.length) {
        const event = await stream.event();
        if (event.step) seen.push(event.step.sequence);
      }
      expect(seen).toEqual(later.map((_, i) => i + 2));
      await send([root]);
      for (;;) {
        const event = await stream.event();
        if (event.run.status === 'COMPLETED') break;
      }
    } finally {
      await stream.close();
    }
  });
});

describe.runIf(backendNames.includes('postgres'))('OTLP while PostgreSQL is down (a private cluster)', () => {
  let cluster: PrivatePostgres;
  let running: Running | undefined;
  let key: string;
  beforeAll(async () => {
    cluster = await startPrivatePostgres();
    running = await startService({
      DATABASE_URL: cluster.url,
      DATABASE_CONNECT_TIMEOUT_MS: '1000',
      DATABASE_QUERY_TIMEOUT_MS: '2000',
    });
    key = running.adminKey() ?? '';
  }, 120_000);
  afterAll(() => {
    if (running?.child.exitCode === null) running.child.kill('SIGKILL');
    cluster?.dispose();
  });

  it('answers 503 with Retry-After, so exporters retry, and stores the retry once the database is back', async () => {
    if (!running) throw new Error('the service did not start');
    const configuration = 'service-outage';
    const agent = await agentTrace(configuration);
    const body = ProtobufTraceSerializer.serializeRequest(agent.spans) ?? new Uint8Array();
    const send = () =>
      fetch(`${new URL(running?.url ?? '').origin}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${key}` },
        body: new Uint8Array(body),
      });
    cluster.stop('immediate');
    try {
      const refused = await send();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(refused.headers.get('content-type')).toBe('application/x-protobuf');
      expect(running.child.exitCode).toBeNull();
    } finally {
      cluster.start();
    }
    let answer = await send();
    for (let tries = 0; answer.status === 503 && tries < 50; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      answer = await send();
    }
    expect(answer.status).toBe(200);
    expect((await send()).status).toBe(200);
    const runs = await runsOf(running, key, configuration);
    expect(runs).toHaveLength(1);
    expect(runs[0]?.steps.edges).toHaveLength(5);
  });
});
