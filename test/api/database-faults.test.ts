import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { type PrivatePostgres, startPrivatePostgres } from '../support/private-postgres.ts';
import { post, type Running, startService } from '../support/service.ts';

/**
 * A ledger that loses its database must not die with it: the request in
 * flight fails cleanly, nothing is half-written, other requests go on, and
 * the service comes back by itself when the database does.
 */
const onPostgres = backendNames.includes('postgres');

const START = `mutation { startRun(input: { configuration: "faults" }) { ... on StartRunSuccess { data { uuid } } } }`;
const RECORD_STEPS = `mutation ($input: RecordStepsInput!) {
  recordSteps(input: $input) { __typename ... on RecordedStepsSuccess { data { steps { sequence } } } }
}`;
const RUNS = '{ runs(first: 1) { edges { cursor } } }';

function batch(runUuid: string, count: number): Record<string, unknown> {
  return {
    runUuid,
    steps: Array.from({ length: count }, (_, index) => ({
      kind: 'TOOL',
      round: 1,
      durationMs: 1,
      toolName: 'read_file',
      server: 'filesystem',
      isError: index % 7 === 0,
      content: `output ${index}`,
    })),
  };
}

async function startRun(running: Running, key: string): Promise<string> {
  const started = await post(running.url, key, START);
  const uuid = (started.body.data as { startRun: { data: { uuid: string } } }).startRun.data.uuid;
  expect(uuid).toMatch(/^[0-9a-f-]{36}$/);
  return uuid;
}

async function stepCount(url: string, runUuid: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ count: number }>(
      'select count(*)::int as count from run_steps s join runs r on r.id = s.run_id where r.uuid = $1',
      [runUuid],
    );
    return rows[0]?.count ?? -1;
  } finally {
    await client.end();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe.runIf(onPostgres)('a backend terminated under the service (postgres)', () => {
  let database: TestDatabase;
  let running: Running;
  let key: string;

  beforeAll(async () => {
    database = await openTestDatabase('postgres', { migrateTo: 0 });
    running = await startService({ DATABASE_URL: database.url ?? '' });
    key = running.adminKey() ?? '';
  });
  afterAll(async () => {
    if (running?.child.exitCode === null) running.child.kill('SIGKILL');
    await database?.dispose();
  });

  it('fails the 1,000-step batch in flight with 503, writes none of it, lives, and takes the next one', async () => {
    const url = database.url ?? '';
    const runUuid = await startRun(running, key);
    // Hold the run's row so the batch waits inside its transaction, then cut its backend off there.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from runs where uuid = $1 for update', [runUuid]);
      const inFlight = post(running.url, key, RECORD_STEPS, { input: batch(runUuid, 1_000) });
      const waiting = await until('the batch to wait on the run lock', async () => {
        const { rows } = await holder.query<{ pid: number }>(
          `select pid from pg_stat_activity
            where datname = current_database() and pid <> pg_backend_pid() and wait_event_type = 'Lock'`,
        );
        return rows[0]?.pid;
      });
      await holder.query('select pg_terminate_backend($1)', [waiting]);
      await holder.query('rollback');

      const answer = await inFlight;
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(answer.body.errors?.map((error) => error.extensions?.code)).toEqual(['DATABASE_UNAVAILABLE']);
    } finally {
      await holder.end();
    }
    expect(running.child.exitCode).toBeNull();
    expect(await stepCount(url, runUuid)).toBe(0);

    const again = await post(running.url, key, RECORD_STEPS, { input: batch(runUuid, 1_000) });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ recordSteps: { __typename: 'RecordedStepsSuccess' } });
    expect(await stepCount(url, runUuid)).toBe(1_000);
  });

  it('survives every one of its connections being terminated while idle', async () => {
    const url = database.url ?? '';
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ count: number }>(
        `select count(pg_terminate_backend(pid))::int as count from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid()`,
      );
      expect(rows[0]?.count).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    await sleep(200);
    expect(running.child.exitCode).toBeNull();
    expect((await post(running.url, key, RUNS)).status).toBe(200);
  });
});

describe.runIf(onPostgres)('a transaction whose backend dies while idle (postgres)', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase('postgres');
  });
  afterAll(async () => database?.dispose());

  it('rejects the transaction, rolls it back, and the pool serves the next one', async () => {
    const { db } = database.handle;
    const admin = new pg.Client({ connectionString: database.url ?? '' });
    await admin.connect();
    try {
      const attempt = db.transaction(async (tx) => {
        await tx.execute(`insert into runs (uuid, owner, configuration, status) values
          ('00000000-0000-4000-8000-00000000fa17', 'alice', 'faults', 'running')`);
        const result = (await tx.execute('select pg_backend_pid() as pid')) as unknown as {
          rows: Array<{ pid: number }>;
        };
        // The backend dies while the transaction is idle: node-postgres emits `error` on the checked-out client.
        await admin.query('select pg_terminate_backend($1)', [result.rows[0]?.pid]);
        await sleep(300);
        await tx.execute('select 1');
      });
      await expect(attempt).rejects.toThrow();
      const { rows } = await admin.query(
        `select 1 from runs where uuid = '00000000-0000-4000-8000-00000000fa17'`,
      );
      expect(rows).toHaveLength(0);
    } finally {
      await admin.end();
    }
    const after = (await db.execute('select count(*)::int as count from runs')) as unknown as {
      rows: Array<{ count: number }>;
    };
    expect(after.rows[0]?.count).toBe(0);
  });
});

describe.runIf(onPostgres)('PostgreSQL down, restarted and hung (a private cluster)', () => {
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
  afterEach(() => {
    cluster?.resume();
  });
  afterAll(() => {
    if (running?.child.exitCode === null) running.child.kill('SIGKILL');
    cluster?.dispose();
  });

  async function expectUnavailable(service: Running): Promise<void> {
    const began = Date.now();
    const ready = await fetch(`${new URL(service.url).origin}/ready`);
    expect(ready.status).toBe(503);
    expect(Date.now() - began).toBeLessThan(2_000);
    const answer = await post(service.url, key, RUNS);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(answer.body.errors?.map((error) => error.extensions?.code)).toEqual(['DATABASE_UNAVAILABLE']);
    expect((await fetch(`${new URL(service.url).origin}/health`)).status).toBe(200);
    expect(service.child.exitCode).toBeNull();
  }

  async function expectRecovered(service: Running): Promise<void> {
    await until('the service to answer again', async () => {
      const answer = await post(service.url, key, RUNS);
      return answer.status === 200 ? true : undefined;
    });
    expect((await fetch(`${new URL(service.url).origin}/ready`)).status).toBe(200);
  }

  it('answers 503 DATABASE_UNAVAILABLE while PostgreSQL is down after a crash, and recovers by itself', async () => {
    if (!running) throw new Error('the service did not start');
    const runUuid = await startRun(running, key);
    cluster.stop('immediate');
    await expectUnavailable(running);
    cluster.start();
    await expectRecovered(running);
    const recorded = await post(running.url, key, RECORD_STEPS, { input: batch(runUuid, 10) });
    expect(recorded.body.data).toMatchObject({ recordSteps: { __typename: 'RecordedStepsSuccess' } });
  });

  it('answers 503 within its timeouts while PostgreSQL hangs, and recovers when it answers again', async () => {
    if (!running) throw new Error('the service did not start');
    expect((await post(running.url, key, RUNS)).status).toBe(200);
    cluster.pause();
    const began = Date.now();
    await expectUnavailable(running);
    // Connect 1 s, read 2 s: a hung database never holds a request for long.
    expect(Date.now() - began).toBeLessThan(8_000);
    cluster.resume();
    await expectRecovered(running);
  });
});
