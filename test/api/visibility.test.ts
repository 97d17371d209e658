import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runs } from '../../drizzle/schema.ts';
import { revokeApiKey } from '../../src/db/api-keys.ts';
import type { Permission } from '../../src/domain/permissions.ts';
import { type AskAs, errorCodes, openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const OWN: Permission[] = ['read_own_runs', 'record', 'cancel_own_runs'];
const alice: AskAs = { actor: 'alice', permissions: OWN };
const bob: AskAs = { actor: 'bob', permissions: OWN };
const auditor: AskAs = { actor: 'auditor', permissions: ['read_all_runs'] };

describe.each(backendNames)('who sees what (%s)', (backend) => {
  let api: TestApi;
  let runA = '';
  let runB = '';
  let runAId = '';
  let stepAId = '';
  const missing = '0f0f0f0f-0000-4000-8000-000000000000';

  const start = async (as: AskAs) => {
    const result = await api.query<{ startRun: { data: { uuid: string; id: string } } }>(
      'mutation { startRun(input: { configuration: "vis" }) { ... on StartRunSuccess { data { uuid id } } } }',
      {},
      as,
    );
    return result.data?.startRun.data ?? { uuid: '', id: '' };
  };
  const recordInto = (uuid: string, as: AskAs) =>
    api.query<{ recordToolResult: { __typename: string; data?: { steps: Array<{ id: string }> } } }>(
      `mutation ($u: String!) { recordToolResult(input: { runUuid: $u, round: 1, durationMs: 5, toolName: "search", server: "github",
        arguments: { q: "secret query" }, result: { content: "secret output", outcome: CANCELLED } }) {
        __typename ... on RecordedStepsSuccess { data { steps { id } } } } }`,
      { u: uuid },
      as,
    );

  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());
  // Each test starts from the same two runs, in a transaction rolled back after it.
  rollbackEach(() => api);
  beforeEach(async () => {
    const a = await start(alice);
    runA = a.uuid;
    runAId = a.id;
    runB = (await start(bob)).uuid;
    stepAId = (await recordInto(runA, alice)).data?.recordToolResult.data?.steps[0]?.id ?? '';
    await recordInto(runB, bob);
  });

  /** The same request about a run the actor may not see and about one that does not exist. */
  async function sameAsMissing(
    query: string,
    as: AskAs,
    variables: (uuid: string, id: string) => Record<string, unknown>,
  ) {
    const hidden = await api.query(query, variables(runA, runAId), as);
    const missingId = Buffer.from(`Run:${missing}`).toString('base64url');
    const absent = await api.query(query, variables(missing, missingId), as);
    const normalise = (body: unknown) =>
      JSON.stringify(body)
        .replaceAll(runA, '<uuid>')
        .replaceAll(missing, '<uuid>')
        .replaceAll(runAId, '<id>');
    expect(normalise(hidden)).toBe(normalise(absent));
    return hidden;
  }

  it('hides the run, its steps, timeline and counts from another actor, like a run that does not exist', async () => {
    const detail = await sameAsMissing(
      `query ($u: String!, $id: ID!) { run(uuid: $u) { uuid steps { edges { node { id } } } timeline { detail } toolOutcomeCounts { total } }
        node(id: $id) { id } nodes(ids: [$id]) { id } }`,
      bob,
      (u, id) => ({ u, id }),
    );
    expect(detail.data).toEqual({ run: null, node: null, nodes: [null] });
    const step = await api.query<{ node: unknown }>(
      'query ($id: ID!) { node(id: $id) { id } }',
      { id: stepAId },
      bob,
    );
    expect(step.data?.node).toBeNull();
    expect(
      (
        await api.query<{ node: unknown }>(
          'query ($id: ID!) { node(id: $id) { id } }',
          { id: stepAId },
          alice,
        )
      ).data?.node,
    ).toEqual({
      id: stepAId,
    });
  });

  it('lists only the actor’s own runs, whatever the filter asks', async () => {
    const list = async (as: AskAs, filter: Record<string, unknown> = {}) =>
      (
        await api.query<{ runs: { edges: Array<{ node: { uuid: string } }> } }>(
          'query ($f: RunFilter) { runs(filter: $f) { edges { node { uuid } } } }',
          { f: filter },
          as,
        )
      ).data?.runs.edges.map((e) => e.node.uuid);
    expect(await list(bob)).toEqual([runB]);
    expect(await list(bob, { owners: ['alice'] })).toEqual([]);
    expect(await list(bob, { hasToolOutcome: 'CANCELLED' })).toEqual([runB]);
    expect((await list(auditor))?.sort()).toEqual([runA, runB].sort());
    expect(await list(auditor, { owners: ['alice'] })).toEqual([runA]);
  });

  it('counts only visible runs in toolOutcomeStats', async () => {
    const stats = async (as: AskAs) =>
      (
        await api.query<{
          toolOutcomeStats: { groups: Array<{ owner: string; counts: { cancelled: number } }> };
        }>('{ toolOutcomeStats(groupBy: [OWNER]) { groups { owner counts { cancelled } } } }', {}, as)
      ).data?.toolOutcomeStats.groups;
    expect(await stats(bob)).toEqual([{ owner: 'bob', counts: { cancelled: 1 } }]);
    expect(await stats(auditor)).toEqual([
      { owner: 'alice', counts: { cancelled: 1 } },
      { owner: 'bob', counts: { cancelled: 1 } },
    ]);
    const byServer = await api.query<{ toolOutcomeStats: { groups: Array<{ counts: { total: number } }> } }>(
      '{ toolOutcomeStats(groupBy: [SERVER]) { groups { counts { total } } } }',
      {},
      bob,
    );
    expect(byServer.data?.toolOutcomeStats.groups).toEqual([{ counts: { total: 1 } }]);
  });

  it('refuses every mutation on another actor’s run exactly as on a missing run, writing nothing', async () => {
    const before = await api.db.select().from(runs);
    const mutations = [
      `mutation ($u: String!) { r: recordStep(input: { runUuid: $u, kind: LLM, round: 1, durationMs: 1 }) { __typename ... on Error { code } } }`,
      `mutation ($u: String!) { r: recordToolExecution(input: { runUuid: $u, round: 1, durationMs: 1, toolName: "t", result: "", isError: false }) { __typename ... on Error { code } } }`,
      `mutation ($u: String!) { r: recordSteps(input: { runUuid: $u, steps: [{ kind: LLM, round: 1, durationMs: 1 }] }) { __typename ... on Error { code } } }`,
      `mutation ($u: String!) { r: finishRun(input: { uuid: $u, status: COMPLETED, terminationReason: COMPLETED }) { __typename ... on Error { code } } }`,
      `mutation ($u: String!) { r: cancelRun(input: { uuid: $u }) { __typename ... on Error { code } } }`,
    ];
    for (const mutation of mutations) {
      const result = await sameAsMissing(mutation, bob, (u, id) => ({ u, id }));
      expect(result.data).toEqual({ r: { __typename: 'RunNotFoundError', code: 'RUN_NOT_FOUND' } });
    }
    expect(await api.db.select().from(runs)).toEqual(before);
  });

  it('lets cancel_any_run cancel another actor’s run', async () => {
    const run = (await start(alice)).uuid;
    const cancel = await api.query<{ cancelRun: { __typename: string } }>(
      'mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename } }',
      { u: run },
      { actor: 'operator', permissions: ['cancel_any_run'] },
    );
    expect(cancel.data?.cancelRun.__typename).toBe('CancelRunSuccess');
  });

  it('shows payloads only with read_payloads, and metadata to everyone who sees the step', async () => {
    const query = `query ($u: String!) { run(uuid: $u) { steps { edges { node { metadata payload } } } } }`;
    const without = await api.query<{
      run: { steps: { edges: Array<{ node: { metadata: unknown; payload: unknown } }> } };
    }>(query, { u: runA }, alice);
    expect(errorCodes(without)).toEqual(['FORBIDDEN']);
    expect(JSON.stringify(without)).not.toContain('secret');
    const withMetadataOnly = await api.query<{
      run: { steps: { edges: Array<{ node: { metadata: Record<string, unknown> } }> } };
    }>('query ($u: String!) { run(uuid: $u) { steps { edges { node { metadata } } } } }', { u: runA }, alice);
    expect(withMetadataOnly.data?.run.steps.edges[0]?.node.metadata).toMatchObject({ contentBytes: 13 });
    expect(JSON.stringify(withMetadataOnly)).not.toContain('secret');
    const withPayloads = await api.query<{
      run: { steps: { edges: Array<{ node: { payload: Record<string, unknown> } }> } };
    }>(query, { u: runA }, { actor: 'alice', permissions: [...OWN, 'read_payloads'] });
    expect(withPayloads.errors).toBeUndefined();
    expect(withPayloads.data?.run.steps.edges[0]?.node.payload).toMatchObject({
      arguments: { q: 'secret query' },
      content: 'secret output',
    });
  });

  it('refuses a missing permission with a ForbiddenError in the result union, and writes nothing', async () => {
    const before = await api.db.select().from(runs);
    const refusal = '__typename ... on ForbiddenError { code permission }';
    const result = await api.query(
      `mutation { startRun(input: { configuration: "x" }) { ${refusal} } }`,
      {},
      auditor,
    );
    expect(result.errors).toBeUndefined();
    expect(result.data).toEqual({
      startRun: { __typename: 'ForbiddenError', code: 'FORBIDDEN', permission: 'RECORD' },
    });
    const cancel = await api.query(
      `mutation ($u: String!) { cancelRun(input: { uuid: $u }) { ${refusal} } }`,
      { u: runB },
      auditor,
    );
    expect(cancel.data).toEqual({
      cancelRun: { __typename: 'ForbiddenError', code: 'FORBIDDEN', permission: 'CANCEL_OWN_RUNS' },
    });
    expect(await api.db.select().from(runs)).toEqual(before);
  });

  it('answers 401 UNAUTHENTICATED without a key, with an unknown key, and with a revoked key from the next request on', async () => {
    const ask = async (authorization?: string) => {
      const response = await api.server.fetch('http://runledger.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ query: '{ runs { edges { cursor } } }' }),
      });
      const body = (await response.json()) as { errors?: Array<{ extensions?: { code?: string } }> };
      return [response.status, body.errors?.[0]?.extensions?.code];
    };
    expect(await ask()).toEqual([401, 'UNAUTHENTICATED']);
    expect(await ask('Bearer rl_not-a-real-key')).toEqual([401, 'UNAUTHENTICATED']);
    expect(await ask('Basic YWxpY2U6cHc=')).toEqual([401, 'UNAUTHENTICATED']);
    const key = await api.keyFor('temp', ['read_own_runs']);
    expect(await ask(`Bearer ${key}`)).toEqual([200, undefined]);
    await revokeApiKey(api.db, key.slice(0, 10));
    expect(await ask(`Bearer ${key}`)).toEqual([401, 'UNAUTHENTICATED']);
  });

  it('answers startRun with a taken uuid the same whoever took it: no owner, configuration or status is told', async () => {
    const startWith = (uuid: string, configuration: string, as: AskAs) =>
      api.query(
        `mutation ($u: String!, $c: String!) { startRun(input: { uuid: $u, configuration: $c }) {
          __typename ... on Error { code message } ... on StartRunSuccess { data { uuid owner } } } }`,
        { u: uuid, c: configuration },
        as,
      );
    const before = await api.db.select().from(runs);
    // bob asks for alice's run's uuid, with her configuration and with another one;
    // alice asks for her own uuid with another configuration.
    const takenByOther = await startWith(runA, 'vis', bob);
    const takenByOtherElsewise = await startWith(runA, 'other', bob);
    const takenByCaller = await startWith(runA, 'other', alice);
    expect(takenByOther.data).toEqual({
      startRun: {
        __typename: 'RunAlreadyExistsError',
        code: 'RUN_ALREADY_EXISTS',
        message: expect.any(String),
      },
    });
    expect(JSON.stringify(takenByOther)).toBe(JSON.stringify(takenByCaller));
    expect(JSON.stringify(takenByOtherElsewise)).toBe(JSON.stringify(takenByCaller));
    expect(JSON.stringify(takenByOther)).not.toMatch(/alice|vis"/);
    // Nothing written, and only the owner's retry with the same configuration returns the run.
    expect(await api.db.select().from(runs)).toEqual(before);
    const retry = await startWith(runA, 'vis', alice);
    expect(retry.data).toMatchObject({
      startRun: { __typename: 'StartRunSuccess', data: { uuid: runA } },
    });
  });
});
