import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeys, runSteps, runs } from '../../drizzle/schema.ts';
import { createApiKey } from '../../src/db/api-keys.ts';
import { type Notice, type NoticeChannel, openPostgresChannel } from '../../src/db/notifications.ts';
import { PERMISSIONS } from '../../src/domain/permissions.ts';
import { RunEvents } from '../../src/ledger/run-events.ts';
import { createServer, type Server } from '../../src/server.ts';
import { openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

const START = `mutation { startRun(input: { configuration: "write-path" }) {
  ... on StartRunSuccess { data { uuid } } } }`;
const RECORD = `mutation ($u: String!, $d: Int!) { recordToolExecution(input: { runUuid: $u, round: 2, durationMs: $d,
  toolName: "search", arguments: { q: "x" }, result: "found", isError: false }) {
  __typename ... on Error { code } ... on RecordedStepsSuccess { data { replayed run { rounds } steps { sequence } } } } }`;
const BATCH = `mutation ($u: String!, $k: String) { recordSteps(input: { runUuid: $u, idempotencyKey: $k, steps: [
  { kind: TOOL, round: 1, durationMs: 1, toolName: "a", isError: false, content: "x" },
  { kind: LLM, round: 3, durationMs: 1, model: { promptTokens: 10, completionTokens: 4, estimatedCost: 0.25 } }] }) {
  __typename ... on Error { code } ... on RecordedStepsSuccess { data { replayed steps { sequence kind } run { rounds } } } } }`;

type Recorded = {
  __typename: string;
  code?: string;
  data?: { replayed: boolean; run: { rounds: number }; steps: Array<{ sequence: number; kind?: string }> };
};

describe.each(backendNames)('the write path (%s)', (backend) => {
  let api: TestApi;
  const statements: string[] = [];
  rollbackEach(() => api);

  beforeAll(async () => {
    api = await openTestApi(backend, { onQuery: (text) => statements.push(text) });
  });
  afterAll(async () => api?.dispose());

  const start = async (actor = 'alice') => {
    const result = await api.query<{ startRun: { data: { uuid: string } } }>(START, {}, { actor });
    return result.data?.startRun.data.uuid ?? '';
  };
  const stepsOf = async (uuid: string) =>
    (
      await api.db
        .select({ sequence: runSteps.sequence })
        .from(runSteps)
        .innerJoin(runs, eq(runs.id, runSteps.runId))
        .where(eq(runs.uuid, uuid))
    ).length;

  it('appends a step in one statement once the key has been read, and keeps the run rollups', async () => {
    const uuid = await start();
    statements.length = 0;
    const first = await api.query<{ recordToolExecution: Recorded }>(RECORD, { u: uuid, d: 1 });
    // The first request of a key reads it; the next ones do not.
    statements.length = 0;
    const second = await api.query<{ recordToolExecution: Recorded }>(RECORD, { u: uuid, d: 2 });
    expect(first.data?.recordToolExecution.data?.steps).toEqual([{ sequence: 1 }]);
    expect(second.data?.recordToolExecution.data).toEqual({
      replayed: false,
      run: { rounds: 2 },
      steps: [{ sequence: 2 }],
    });
    expect(statements, statements.join('\n')).toHaveLength(1);
    expect(statements[0]).toContain('append_run_steps');
  });

  it('stores a batch with its rollups, and replays it for a retry with the same key', async () => {
    const uuid = await start();
    const first = await api.query<{ recordSteps: Recorded }>(BATCH, { u: uuid, k: 'retry-1' });
    const again = await api.query<{ recordSteps: Recorded }>(BATCH, { u: uuid, k: 'retry-1' });
    expect(first.data?.recordSteps.data).toEqual({
      replayed: false,
      run: { rounds: 3 },
      steps: [
        { sequence: 1, kind: 'TOOL' },
        { sequence: 2, kind: 'LLM' },
      ],
    });
    expect(again.data?.recordSteps.data).toEqual({ ...first.data?.recordSteps.data, replayed: true });
    const [run] = await api.db.select().from(runs).where(eq(runs.uuid, uuid));
    expect(run).toMatchObject({ rounds: 3, promptTokens: 10, completionTokens: 4, estimatedCost: 0.25 });
    expect(await stepsOf(uuid)).toBe(2);
  });

  it('refuses a remembered key revoked by another writer from the next request on, and writes nothing', async () => {
    const key = await api.keyFor('revoked-elsewhere', ['record', 'read_own_runs']);
    const as = { actor: 'revoked-elsewhere', permissions: ['record', 'read_own_runs'] as const };
    const started = await api.query<{ startRun: { data: { uuid: string } } }>(START, {}, as);
    const uuid = started.data?.startRun.data.uuid ?? '';
    const ok = await api.query<{ recordToolExecution: Recorded }>(RECORD, { u: uuid, d: 1 }, as);
    expect(ok.data?.recordToolExecution.__typename).toBe('RecordedStepsSuccess');

    // Revoked by SQL, as another process would: this process is not told.
    await api.db
      .update(apiKeys)
      .set({ revokedAt: sql`now()` })
      .where(eq(apiKeys.keyPrefix, key.slice(0, 10)));

    const refused = await api.query<{ recordToolExecution: Recorded }>(RECORD, { u: uuid, d: 1 }, as);
    expect(refused.status).toBe(401);
    expect(refused.errors?.map((e) => e.extensions?.code)).toEqual(['UNAUTHENTICATED']);
    // A request with bad input is refused for its key too, not for its input.
    const bad = await api.query<{ recordToolExecution: Recorded }>(RECORD, { u: 'not-a-uuid', d: 1 }, as);
    expect(bad.errors?.map((e) => e.extensions?.code)).toEqual(['UNAUTHENTICATED']);
    expect(await stepsOf(uuid)).toBe(1);
  });

  it('answers a run of another owner as not found and a finished run as terminal, writing nothing', async () => {
    const bobs = await start('bob');
    const mine = await start('alice');
    await api.query(
      `mutation ($u: String!) { finishRun(input: { uuid: $u, status: COMPLETED, terminationReason: COMPLETED }) { __typename } }`,
      { u: mine },
    );
    const other = await api.query<{ recordToolExecution: Recorded }>(RECORD, { u: bobs, d: 1 });
    const finished = await api.query<{ recordToolExecution: Recorded }>(RECORD, { u: mine, d: 1 });
    expect(other.data?.recordToolExecution.code).toBe('RUN_NOT_FOUND');
    expect(finished.data?.recordToolExecution.code).toBe('RUN_TERMINAL');
    expect(await stepsOf(bobs)).toBe(0);
    expect(await stepsOf(mine)).toBe(0);
  });
});

// Not in a rolled-back transaction: a notice is delivered only when its transaction commits.
describe.skipIf(!backendNames.includes('postgres'))(
  'the write path with live runs through PostgreSQL',
  () => {
    let database: TestDatabase;
    let channel: NoticeChannel;
    let server: Server;
    let key = '';
    const statements: string[] = [];
    const notices: Notice[] = [];

    beforeAll(async () => {
      database = await openTestDatabase('postgres', { onQuery: (text) => statements.push(text) });
      channel = await openPostgresChannel({ url: database.url ?? '', db: database.handle.db });
      channel.listen((notice) => notices.push(notice));
      server = createServer({ handle: database.handle, graphiql: false, events: new RunEvents(channel) });
      key = (await createApiKey(database.handle.db, 'alice', PERMISSIONS)).key;
    });
    afterAll(async () => {
      await channel?.close();
      await database?.dispose();
    });

    async function ask<T>(query: string, variables: Record<string, unknown>): Promise<T> {
      const response = await server.fetch('http://runledger.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables }),
      });
      return ((await response.json()) as { data: T }).data;
    }

    /** The notices of the run heard so far, after waiting for one with this sequence (or a short while). */
    async function heard(uuid: string, sequence: number | null): Promise<Notice[]> {
      const of = () => notices.filter((notice) => notice.runUuid === uuid);
      for (let waited = 0; waited < 3_000; waited += 20) {
        if (sequence !== null && of().some((n) => n.type === 'run' && n.sequence === sequence)) break;
        if (sequence === null && waited >= 300) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return of();
    }

    it("sends a step's notice from the append's own statement, on commit, and none for a replay", async () => {
      const started = await ask<{ startRun: { data: { uuid: string } } }>(START, {});
      const uuid = started.startRun.data.uuid;
      await ask(RECORD, { u: uuid, d: 1 });
      expect(await heard(uuid, 1)).toContainEqual({ type: 'run', runUuid: uuid, sequence: 1 });

      statements.length = 0;
      notices.length = 0;
      const second = await ask<{ recordToolExecution: Recorded }>(RECORD, { u: uuid, d: 2 });
      expect(second.recordToolExecution.data?.steps).toEqual([{ sequence: 2 }]);
      // One statement: the append and its notice, no pg_notify of its own.
      expect(statements, statements.join('\n')).toHaveLength(1);
      expect(statements[0]).toContain('append_run_steps');
      expect(statements[0]).toContain('pg_notify');
      expect(await heard(uuid, 2)).toEqual([{ type: 'run', runUuid: uuid, sequence: 2 }]);

      notices.length = 0;
      await ask(BATCH, { u: uuid, k: 'once' });
      expect(await heard(uuid, 4)).toEqual([{ type: 'run', runUuid: uuid, sequence: 4 }]);
      notices.length = 0;
      const again = await ask<{ recordSteps: Recorded }>(BATCH, { u: uuid, k: 'once' });
      expect(again.recordSteps.data?.replayed).toBe(true);
      expect(await heard(uuid, null)).toEqual([]);
    });
  },
);
