import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeys, runSteps, runs } from '../../drizzle/schema.ts';
import { openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

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
