import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type {
  ReadContractRunListQueryVariables,
  ReadContractStepPageQuery,
} from '../.generated/operations/graphql.ts';
import { graphql } from '../.generated/operations/index.ts';
import { errorCodes, openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { recordFixtureRuns } from '../support/fixtures.ts';

type Fixture = Awaited<ReturnType<typeof recordFixtureRuns>>;

describe.each(backendNames)('the read contract (%s)', (backend) => {
  let api: TestApi;
  let fixture: Fixture;

  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());
  // Each test reads its own copy of the fixture, in a transaction rolled back after it.
  rollbackEach(() => api);
  beforeEach(async () => {
    fixture = await recordFixtureRuns(api.db);
  });

  const runDetail = graphql(`query ReadContractRunDetail($uuid: String!) {
    run(uuid: $uuid) {
      id uuid status terminationReason configuration owner createdAt startedAt finishedAt
      rounds promptTokens completionTokens totalTokens estimatedCost
      toolOutcomeCounts { ok failed cancelled total failureRate }
      steps(first: 100) {
        edges { cursor node {
          id sequence kind round durationMs occurredAt toolName server toolIsError outcome
          en: outcomeLabel de: outcomeLabel(locale: DE) writeTarget { table uid kind }
          run { uuid }
        } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
      timeline(locale: DE) { sequence kind occurredAt round durationMs outcome outcomeLabel detail step { id sequence } }
      en: timeline(locale: EN) { detail }
    }
  }`);

  it('resolves every field of a run, its steps and its timeline', async () => {
    const result = await api.query(runDetail, { uuid: fixture.runA.uuid });
    expect(result.errors).toBeUndefined();
    const run = result.data?.run;
    expect(run).toMatchObject({
      uuid: fixture.runA.uuid,
      status: 'CANCELLED',
      terminationReason: 'CANCELLED',
      configuration: 'triage',
      owner: 'alice',
      createdAt: '2026-11-20T10:00:00.000Z',
      startedAt: '2026-11-20T10:00:00.000Z',
      finishedAt: '2026-11-20T10:00:10.000Z',
      rounds: 2,
      promptTokens: 100,
      completionTokens: 20,
      totalTokens: 120,
      estimatedCost: 0.0015,
      // ok: 3, 6, legacy 9; failed: 4, legacy 8; cancelled: 5. Cancels never raise the rate.
      toolOutcomeCounts: { ok: 3, failed: 2, cancelled: 1, total: 6, failureRate: 0.4 },
    });
    const steps = run?.steps.edges.map((e) => e.node) ?? [];
    expect(steps.map((s) => [s.sequence, s.kind, s.toolIsError, s.outcome, s.en, s.de])).toEqual([
      [1, 'REQUEST', null, null, null, null],
      [2, 'LLM', null, null, null, null],
      [3, 'TOOL', false, 'OK', 'ok', 'ok'],
      [4, 'TOOL', true, 'FAILED', 'failed', 'fehlgeschlagen'],
      [5, 'TOOL', true, 'CANCELLED', 'cancelled', 'abgebrochen'],
      [6, 'TOOL', false, 'OK', 'ok', 'ok'],
      [7, 'TOOL_WRITE', null, null, null, null],
      [8, 'TOOL', true, 'FAILED', 'failed', 'fehlgeschlagen'],
      [9, 'TOOL', false, 'OK', 'ok', 'ok'],
    ]);
    expect(steps[4]).toMatchObject({
      toolName: 'fetch',
      server: 'web',
      round: 1,
      durationMs: 45,
      writeTarget: null,
    });
    expect(steps[4]?.occurredAt).toBe('2026-11-20T10:00:05.000Z');
    expect(steps[6]?.writeTarget).toEqual({ table: 'documents', uid: '42', kind: 'CREATED' });
    expect(steps[0]?.run).toEqual({ uuid: fixture.runA.uuid });
    const timeline = run?.timeline ?? [];
    expect(timeline.map((e) => [e.sequence, e.kind, e.outcome, e.outcomeLabel])).toEqual(
      steps.map((s) => [s.sequence, s.kind, s.outcome, s.de]),
    );
    // Each entry names its step: the same node as in steps.
    expect(timeline.map((e) => e.step)).toEqual(steps.map((s) => ({ id: s.id, sequence: s.sequence })));
    // Detail lines in the locale's words: German for DE, English for EN.
    expect(timeline[0]?.detail).toBe('Anfrage');
    expect(timeline[1]?.detail).toBe('gpt-x · 100 ein / 20 aus Tokens · 0,0015 $ · Ende: tool_calls');
    expect(timeline[4]?.detail).toBe('web/fetch · Argumente 26 B · Ergebnis 7 B');
    expect(timeline[6]?.detail).toBe('fs/write_file · angelegt documents#42');
    const english = run?.en ?? [];
    expect(english[0]?.detail).toBe('request');
    expect(english[1]?.detail).toBe('gpt-x · 100 in / 20 out tokens · $0.0015 · finish: tool_calls');
    expect(english[4]?.detail).toBe('web/fetch · args 26 B · result 7 B');
    expect(english[6]?.detail).toBe('fs/write_file · created documents#42');
    // The timeline shows metadata only: no prompt, argument or output text.
    expect(JSON.stringify(timeline)).not.toMatch(/secret|cut off|written/);
  });

  it('pages through steps by cursor and filters them by kind and outcome', async () => {
    const page =
      graphql(`query ReadContractStepPage($uuid: String!, $after: String, $kind: [StepKind!], $outcome: [ToolOutcome!]) {
      run(uuid: $uuid) { steps(first: 4, after: $after, kind: $kind, outcome: $outcome) {
        edges { node { sequence } } pageInfo { hasNextPage hasPreviousPage endCursor } } } }`);
    const sequences = (r: { data?: ReadContractStepPageQuery | null }) =>
      r.data?.run?.steps.edges.map((e) => e.node.sequence);
    const first = await api.query(page, { uuid: fixture.runA.uuid });
    expect(sequences(first)).toEqual([1, 2, 3, 4]);
    expect(first.data?.run?.steps.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const second = await api.query(page, {
      uuid: fixture.runA.uuid,
      after: first.data?.run?.steps.pageInfo.endCursor,
    });
    expect(sequences(second)).toEqual([5, 6, 7, 8]);
    const third = await api.query(page, {
      uuid: fixture.runA.uuid,
      after: second.data?.run?.steps.pageInfo.endCursor,
    });
    expect(sequences(third)).toEqual([9]);
    expect(third.data?.run?.steps.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });

    const failed = await api.query(page, { uuid: fixture.runA.uuid, outcome: ['FAILED'] });
    expect(sequences(failed)).toEqual([4, 8]);
    const answered = await api.query(page, { uuid: fixture.runA.uuid, outcome: ['OK', 'CANCELLED'] });
    expect(sequences(answered)).toEqual([3, 5, 6, 9]);
    const kinds = await api.query(page, { uuid: fixture.runA.uuid, kind: ['LLM', 'TOOL_WRITE'] });
    expect(sequences(kinds)).toEqual([2, 7]);
  });

  it('lists runs newest first, pages them without gaps or repeats, and filters them', async () => {
    const list = graphql(`query ReadContractRunList($first: Int, $after: String, $filter: RunFilter) {
      runs(first: $first, after: $after, filter: $filter) {
        edges { node { uuid } } pageInfo { hasNextPage endCursor } } }`);
    const uuids = async (variables: ReadContractRunListQueryVariables) => {
      const result = await api.query(list, variables);
      expect(result.errors).toBeUndefined();
      return result.data?.runs.edges.map((e) => e.node.uuid);
    };
    const { runA, runB, runC } = fixture;
    expect(await uuids({})).toEqual([runC.uuid, runB.uuid, runA.uuid]);

    const firstPage = await api.query(list, { first: 2 });
    expect(firstPage.data?.runs.pageInfo.hasNextPage).toBe(true);
    expect(await uuids({ first: 2, after: firstPage.data?.runs.pageInfo.endCursor })).toEqual([runA.uuid]);

    expect(await uuids({ filter: { statuses: ['COMPLETED', 'RUNNING'] } })).toEqual([runC.uuid, runB.uuid]);
    expect(await uuids({ filter: { owners: ['alice'] } })).toEqual([runC.uuid, runA.uuid]);
    expect(await uuids({ filter: { configurations: ['docs'], owners: ['bob'] } })).toEqual([runB.uuid]);
    expect(
      await uuids({
        filter: { createdAfter: '2026-11-20T11:00:00Z', createdBefore: '2026-11-20T12:00:00Z' },
      }),
    ).toEqual([runB.uuid]);
    expect(await uuids({ filter: { hasToolOutcome: 'CANCELLED' } })).toEqual([runA.uuid]);
    // Ranges are half-open: run B at 11:00 is in [11:00, 12:00), run C at 12:00 is not.
    // Run A's only failures are one new and one legacy row; run B has none.
    expect(await uuids({ filter: { hasToolOutcome: 'FAILED' } })).toEqual([runA.uuid]);
    expect(await uuids({ filter: { hasToolOutcome: 'OK' } })).toEqual([runB.uuid, runA.uuid]);
  });

  it('pages runs created in the same microsecond by id', async () => {
    const list =
      graphql(`query ReadContractSameInstant($after: String) { runs(first: 1, after: $after, filter: { configurations: ["same-instant"] }) {
      edges { node { uuid } } pageInfo { endCursor hasNextPage } } }`);
    const db = api.db;
    const { createRun } = await import('../../src/ledger/start-run.ts');
    const instant = new Date('2026-10-01T00:00:00.123Z');
    const made = [];
    for (let i = 0; i < 3; i += 1)
      made.push(await createRun(db, { owner: 'x', configuration: 'same-instant', createdAt: instant }));
    const seen: string[] = [];
    let after: string | null | undefined;
    for (let i = 0; i < 3; i += 1) {
      const r = await api.query(list, { after });
      seen.push(...(r.data?.runs.edges.map((e) => e.node.uuid) ?? []));
      after = r.data?.runs.pageInfo.endCursor;
    }
    expect(seen).toEqual(made.map((r) => r.uuid).reverse());
  });

  it('resolves Run and RunStep global ids through node and nodes', async () => {
    const detail = await api.query(
      graphql(
        `query ReadContractIds($uuid: String!) { run(uuid: $uuid) { id steps(first: 5) { edges { node { id } } } } }`,
      ),
      { uuid: fixture.runA.uuid },
    );
    const runId = detail.data?.run?.id ?? '';
    const stepId = detail.data?.run?.steps.edges[4]?.node.id ?? '';
    const nodes = await api.query(
      graphql(`query ReadContractNodes($run: ID!, $step: ID!) {
        node(id: $run) { __typename id ... on Run { uuid } }
        nodes(ids: [$run, $step]) { __typename ... on RunStep { sequence outcome } ... on Run { status } }
      }`),
      { run: runId, step: stepId },
    );
    expect(nodes.errors).toBeUndefined();
    expect(nodes.data?.node).toEqual({ __typename: 'Run', id: runId, uuid: fixture.runA.uuid });
    expect(nodes.data?.nodes).toEqual([
      { __typename: 'Run', status: 'CANCELLED' },
      { __typename: 'RunStep', sequence: 5, outcome: 'CANCELLED' },
    ]);
  });

  it('answers null for a run that does not exist, by uuid and by global id', async () => {
    const missing = '7b0e8a59-9a55-4c3e-9d0f-000000000000';
    const missingId = Buffer.from(`Run:${missing}`).toString('base64url');
    const missingStep = Buffer.from('RunStep:999999999').toString('base64url');
    const result = await api.query(
      `query ($uuid: String!, $id: ID!, $step: ID!) { run(uuid: $uuid) { id } node(id: $id) { id } step: node(id: $step) { id } }`,
      { uuid: missing, id: missingId, step: missingStep },
    );
    expect(result.errors).toBeUndefined();
    expect(result.data).toEqual({ run: null, node: null, step: null });
  });

  it.each([
    ['a malformed uuid', '{ run(uuid: "not-a-uuid") { id } }'],
    ['a malformed global id', '{ node(id: "%%%") { id } }'],
    ['a global id without a type', `{ node(id: "${Buffer.from('nothing').toString('base64url')}") { id } }`],
    ['a bad runs cursor', '{ runs(after: "bm9wZQ") { edges { cursor } } }'],
    [
      'a steps cursor used on runs',
      `{ runs(after: "${Buffer.from('["step",3]').toString('base64url')}") { edges { cursor } } }`,
    ],
    ['first over 100', '{ runs(first: 101) { edges { cursor } } }'],
    ['a negative first', '{ runs(first: -1) { edges { cursor } } }'],
    ['a malformed DateTime', '{ runs(filter: { createdAfter: "yesterday" }) { edges { cursor } } }'],
  ])('refuses %s with BAD_USER_INPUT', async (_name, query) => {
    const result = await api.query(query);
    expect(errorCodes(result)).toEqual(['BAD_USER_INPUT']);
  });

  it.each([
    ['a bad steps cursor', 'steps(after: "xyz")'],
    ['an oversized steps page', 'steps(first: 1000)'],
  ])('refuses %s with BAD_USER_INPUT', async (_name, field) => {
    const result = await api.query(
      `query ($uuid: String!) { run(uuid: $uuid) { ${field} { edges { cursor } } } }`,
      {
        uuid: fixture.runA.uuid,
      },
    );
    expect(errorCodes(result)).toEqual(['BAD_USER_INPUT']);
  });

  it('masks unexpected errors', async () => {
    const broken = await openTestApi(backend);
    await broken.keyFor();
    // A database that answers, but not as the code expects: a fault of ours, not an outage.
    await broken.database.handle.withSession((s) => s.exec('ALTER TABLE runs RENAME TO runs_elsewhere'));
    const result = await broken.query('{ runs { edges { cursor } } }');
    await broken.dispose();
    // A field error under application/json: 200 with data null, as GraphQL over HTTP has it.
    expect(result.data).toBeNull();
    expect(result.errors?.[0]?.message).toBe('Unexpected error.');
    expect(errorCodes(result)).toEqual(['INTERNAL_SERVER_ERROR']);
    expect(JSON.stringify(result.errors)).not.toMatch(/stack|pglite|pool|ECONN/i);
  });
});
