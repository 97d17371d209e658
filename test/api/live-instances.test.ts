import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/db/api-keys.ts';
import { openDatabase } from '../../src/db/connection.ts';
import { migrate } from '../../src/db/migrator.ts';
import { LISTENER_NAME } from '../../src/db/notifications.ts';
import { PERMISSIONS } from '../../src/domain/permissions.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { type HttpToolServer, startHttpToolServer } from '../support/mcp-tool-server.ts';
import { type PrivatePostgres, startPrivatePostgres } from '../support/private-postgres.ts';
import { post, type Running, startService } from '../support/service.ts';
import { SseReader, sequencesOf, subscriptionRequest } from '../support/sse.ts';

/**
 * Several instances of the real service on one PostgreSQL: what is written
 * through one reaches streams on the other, and a cancel on one cuts off a
 * call on the other.
 */
const onPostgres = backendNames.includes('postgres');

const START = `mutation { startRun(input: { configuration: "instances" }) { ... on StartRunSuccess { data { uuid } } } }`;
const RECORD = `mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename } }`;
const FINISH = `mutation ($u: String!) { finishRun(input: { uuid: $u, status: COMPLETED, terminationReason: COMPLETED }) { __typename } }`;
const CANCEL = `mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename } }`;
const CALL = `mutation ($input: CallToolInput!) { callTool(input: $input) {
  __typename ... on RecordedStepsSuccess { data { steps { sequence outcome } } } } }`;

async function startRun(service: Running, key: string): Promise<string> {
  const { body } = await post(service.url, key, START);
  return (body.data as { startRun: { data: { uuid: string } } }).startRun.data.uuid;
}

async function record(service: Running, key: string, runUuid: string): Promise<void> {
  const { body } = await post(service.url, key, RECORD, {
    input: { runUuid, kind: 'LLM', round: 1, durationMs: 3 },
  });
  expect(body).toEqual({ data: { recordStep: { __typename: 'RecordedStepsSuccess' } } });
}

async function subscribe(service: Running, key: string, uuid: string, after?: number): Promise<SseReader> {
  return new SseReader(await fetch(subscriptionRequest(service.url, key, { uuid, after })));
}

function stop(service: Running | undefined): void {
  if (service?.child.exitCode === null) service.child.kill('SIGKILL');
}

/** Two services on one database, with keys made straight in it. */
async function twoInstances(url: string, db: TestDatabase['handle']['db']) {
  const env = {
    DATABASE_URL: url,
    RUNLEDGER_MCP_ALLOWED_HOSTS: '127.0.0.1:*',
  };
  const [a, b] = await Promise.all([startService(env), startService(env)]);
  const key = (await createApiKey(db, 'alice', PERMISSIONS)).key;
  return { a, b, key };
}

describe.runIf(onPostgres)('two instances on one PostgreSQL', () => {
  let database: TestDatabase;
  let a: Running;
  let b: Running;
  let key: string;
  let tools: HttpToolServer;

  beforeAll(async () => {
    database = await openTestDatabase('postgres');
    ({ a, b, key } = await twoInstances(database.url ?? '', database.handle.db));
    tools = await startHttpToolServer();
    await post(a.url, key, 'mutation ($i: McpServerInput!) { registerMcpServer(input: $i) { __typename } }', {
      i: { identifier: 'tools', transport: 'STREAMABLE_HTTP', url: tools.url },
    });
  }, 60_000);
  afterAll(async () => {
    stop(a);
    stop(b);
    await tools?.close();
    await database?.dispose();
  });

  it('both listen on PostgreSQL; a setting that names no channel stops the start', async () => {
    for (const service of [a, b])
      expect(service.output()).toContain('live runs: LISTEN/NOTIFY on PostgreSQL');
    await expect(
      startService({ DATABASE_URL: database.url ?? '', RUNLEDGER_LIVE_CHANNEL: 'redis' }),
    ).rejects.toThrow('RUNLEDGER_LIVE_CHANNEL must be postgres or memory, not "redis"');
  });

  it('sends a subscriber on B the steps recorded through A, in order, then the end', async () => {
    const run = await startRun(a, key);
    const stream = await subscribe(b, key, run);
    expect((await stream.event()).step).toBeNull();
    for (let i = 0; i < 20; i += 1) await record(a, key, run);
    await post(a.url, key, FINISH, { u: run });
    const { events, completed } = await stream.rest();
    expect(completed).toBe(true);
    expect(sequencesOf(events)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(events.at(-1)?.run.status).toBe('COMPLETED');
  });

  it('resumes on A from the last sequence seen on B, without a gap or a repeat, while A and B both write', async () => {
    const run = await startRun(a, key);
    for (let i = 0; i < 5; i += 1) await record(i % 2 ? a : b, key, run);
    const first = await subscribe(b, key, run);
    const seen = [await first.event(), await first.event(), await first.event()];
    await first.close();
    const writers = [a, b].map(async (service) => {
      for (let i = 0; i < 10; i += 1) await record(service, key, run);
    });
    const resumed = await subscribe(a, key, run, seen.at(-1)?.step?.sequence);
    await Promise.all(writers);
    await post(b.url, key, FINISH, { u: run });
    const { events, completed } = await resumed.rest();
    expect(completed).toBe(true);
    expect([...sequencesOf(seen), ...sequencesOf(events)]).toEqual(
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
  });

  it('cuts off a call on A when B cancels the run: CANCELLED, and the MCP server was told', async () => {
    const run = await startRun(a, key);
    const watcher = await subscribe(b, key, run);
    expect((await watcher.event()).step).toBeNull();
    const pending = post(a.url, key, CALL, {
      input: {
        runUuid: run,
        server: 'tools',
        toolName: 'slow',
        arguments: { ms: 30_000 },
        timeoutMs: 60_000,
      },
    });
    // Time for the call to reach the wire (as in the MCP tests).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const cancelledAt = Date.now();
    expect((await post(b.url, key, CANCEL, { u: run })).body).toEqual({
      data: { cancelRun: { __typename: 'CancelRunSuccess' } },
    });
    expect((await pending).body).toEqual({
      data: {
        callTool: {
          __typename: 'RecordedStepsSuccess',
          data: { steps: [{ sequence: 1, outcome: 'CANCELLED' }] },
        },
      },
    });
    // The promise of the MCP tests, across instances: cut off within a second of the cancel.
    expect(Date.now() - cancelledAt).toBeLessThan(1_000);
    await expect.poll(() => tools.cancellations).toContain('slow');
    // The watcher on B saw the cancel, then the cut-off call's step, then the end.
    const { events, completed } = await watcher.rest();
    expect(completed).toBe(true);
    expect(events.at(-1)).toMatchObject({
      step: { sequence: 1, toolName: 'slow', outcome: 'CANCELLED' },
      run: { status: 'CANCELLED' },
    });
  });

  it('answers a subscriber who may not see the run as it answers for a missing run', async () => {
    const run = await startRun(a, key);
    const reader = (await createApiKey(database.handle.db, 'carol', ['read_own_runs'])).key;
    const codes = [];
    for (const uuid of [run, crypto.randomUUID()]) {
      const stream = await subscribe(b, reader, uuid);
      const message = await stream.next();
      codes.push(message?.event === 'next' ? message.data.errors?.map((e) => e.extensions?.code) : message);
      expect(await stream.next()).toEqual({ event: 'complete' });
    }
    expect(codes).toEqual([['RUN_NOT_FOUND'], ['RUN_NOT_FOUND']]);
  });

  it('catches up from the table when its listening connection is cut', async () => {
    const run = await startRun(a, key);
    const stream = await subscribe(b, key, run);
    expect((await stream.event()).step).toBeNull();
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      // Both listeners go; what A writes now is announced to nobody.
      await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and datname = current_database()',
        [LISTENER_NAME],
      );
    } finally {
      await admin.end();
    }
    for (let i = 0; i < 3; i += 1) await record(a, key, run);
    expect(sequencesOf([await stream.event(), await stream.event(), await stream.event()])).toEqual([
      1, 2, 3,
    ]);
    await expect.poll(() => b.output()).toContain('listening again');
    await stream.close();
  });
});

describe.runIf(onPostgres)('the listening connection across a database restart', () => {
  let server: PrivatePostgres;
  let a: Running;
  let b: Running;
  let key: string;

  beforeAll(async () => {
    server = await startPrivatePostgres();
    const handle = await openDatabase({ url: server.url });
    try {
      await migrate(handle);
      ({ a, b, key } = await twoInstances(server.url, handle.db));
    } finally {
      await handle.close();
    }
  }, 90_000);
  afterAll(() => {
    stop(a);
    stop(b);
    server?.dispose();
  });

  it('listens again after PostgreSQL restarts, and a stream opened before goes on', async () => {
    const run = await startRun(a, key);
    await record(a, key, run);
    const stream = await subscribe(b, key, run);
    expect((await stream.event()).step?.sequence).toBe(1);
    server.stop('fast');
    server.start();
    // A records again once its pool has reconnected (the first attempt may meet the restart).
    await expect
      .poll(
        async () =>
          (
            await post(a.url, key, RECORD, {
              input: { runUuid: run, kind: 'LLM', round: 1, durationMs: 3 },
            }).catch(() => ({ body: {} }))
          ).body,
        { timeout: 20_000, interval: 200 },
      )
      .toEqual({ data: { recordStep: { __typename: 'RecordedStepsSuccess' } } });
    await record(a, key, run);
    expect(sequencesOf([await stream.event(), await stream.event()])).toEqual([2, 3]);
    await expect.poll(() => b.output(), { timeout: 10_000 }).toContain('listening again');
    // Heartbeats kept coming across the outage: the first at once, then on the clock (every 300 ms under test).
    expect(stream.heartbeats).toBeGreaterThan(1);
    await post(a.url, key, FINISH, { u: run });
    const { completed } = await stream.rest();
    expect(completed).toBe(true);
  }, 60_000);
});
