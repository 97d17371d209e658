import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
import { checkFourEyes } from '../../src/domain/human-request.ts';
import { expireRequests } from '../../src/ledger/human-requests.ts';
import { type AskAs, openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const agent: AskAs = { actor: 'agent', permissions: ['read_own_runs', 'record', 'read_payloads'] };
const approver: AskAs = { actor: 'carol', permissions: ['read_all_runs', 'approve_runs'] };
// Owns runs and may approve: four eyes still keeps it off its own.
const selfApprover: AskAs = { actor: 'agent', permissions: ['read_own_runs', 'record', 'approve_runs'] };
const reader: AskAs = { actor: 'dave', permissions: ['read_all_runs'] };

const SCHEMA = {
  type: 'object',
  properties: {
    branch: { type: 'string', title: 'Branch', minLength: 1 },
    force: { type: 'boolean' },
    replicas: { type: 'integer', minimum: 1, maximum: 9 },
    region: { type: 'string', enum: ['eu', 'us'] },
  },
  required: ['branch', 'region'],
};

const RECORDED = `__typename ... on Error { code } ... on RequestRecordedSuccess { data { replayed
  run { status } step { sequence kind metadata } request { uuid kind state decidedBy requestedBy } } }`;

interface Recorded {
  __typename: string;
  code?: string;
  data?: {
    replayed: boolean;
    run: { status: string };
    step: { sequence: number; kind: string; metadata: Record<string, unknown> } | null;
    request: { uuid: string; kind: string; state: string; decidedBy: string | null; requestedBy: string };
  };
}

describe.each(backendNames)('a human in the loop (%s)', (backend) => {
  let api: TestApi;
  let run = '';

  const ask = async <T = Recorded>(
    field: string,
    query: string,
    variables: Record<string, unknown>,
    as: AskAs,
  ) => {
    const result = await api.query<Record<string, T>>(query, variables, as);
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data?.[field] as T;
  };
  const requestApproval = (extra: Record<string, unknown> = {}, as = agent) =>
    ask(
      'requestApproval',
      `mutation ($input: RequestApprovalInput!) { requestApproval(input: $input) { ${RECORDED} } }`,
      {
        input: {
          runUuid: run,
          toolName: 'deploy',
          server: 'ops',
          arguments: { env: 'prod' },
          reason: 'ship it',
          ...extra,
        },
      },
      as,
    );
  const decide = (
    request: string,
    decision: 'APPROVE' | 'DENY',
    as = approver,
    comment: string | null = null,
  ) =>
    ask(
      'decideApproval',
      `mutation ($input: DecideApprovalInput!) { decideApproval(input: $input) { ${RECORDED} } }`,
      { input: { runUuid: run, request, decision, comment } },
      as,
    );
  const requestInput = (extra: Record<string, unknown> = {}) =>
    ask(
      'requestInput',
      `mutation ($input: RequestInputInput!) { requestInput(input: $input) { ${RECORDED} } }`,
      { input: { runUuid: run, prompt: 'Which branch?', schema: SCHEMA, ...extra } },
      agent,
    );
  const provide = (request: string, values: unknown, as = approver, decline = false) =>
    ask(
      'provideInput',
      `mutation ($input: ProvideInputInput!) { provideInput(input: $input) { ${RECORDED} } }`,
      { input: { runUuid: run, request, values, decline } },
      as,
    );
  const written = async () => {
    const [row] = await selectRows<{ requests: number; steps: number; decided: number }>(
      api.db,
      sql`select (select count(*)::int from human_requests) as requests,
                 (select count(*)::int from run_steps where kind in ('approval', 'input')) as steps,
                 (select count(*)::int from human_requests where state <> 'open') as decided`,
    );
    return row;
  };
  const status = async () =>
    (
      await api.query<{ run: { status: string } }>(
        'query ($u: String!) { run(uuid: $u) { status } }',
        { u: run },
        agent,
      )
    ).data?.run.status;

  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());
  rollbackEach(() => api);
  beforeEach(async () => {
    const started = await api.query<{ startRun: { data: { uuid: string } } }>(
      'mutation { startRun(input: { configuration: "hitl" }) { ... on StartRunSuccess { data { uuid } } } }',
      {},
      agent,
    );
    run = started.data?.startRun.data.uuid ?? '';
  });

  it('an approval: the run waits, another person approves, the decision is a step, the run runs again', async () => {
    const asked = await requestApproval();
    expect(asked.__typename).toBe('RequestRecordedSuccess');
    expect(asked.data?.run.status).toBe('WAITING_FOR_APPROVAL');
    expect(asked.data?.step).toMatchObject({
      kind: 'APPROVAL',
      metadata: { phase: 'requested', toolName: 'deploy' },
    });
    expect(asked.data?.request).toMatchObject({ kind: 'APPROVAL', state: 'OPEN', requestedBy: 'agent' });
    const id = asked.data?.request.uuid ?? '';

    const inbox = await api.query<{
      openRequests: Array<{ uuid: string; arguments: unknown; reason: string }>;
    }>('{ openRequests { uuid arguments reason } }', {}, approver);
    expect(inbox.data?.openRequests).toEqual([{ uuid: id, arguments: { env: 'prod' }, reason: 'ship it' }]);

    const approved = await decide(id, 'APPROVE', approver, 'looks fine');
    expect(approved.data?.run.status).toBe('RUNNING');
    expect(approved.data?.request).toMatchObject({ state: 'APPROVED', decidedBy: 'carol' });
    expect(approved.data?.step).toMatchObject({
      kind: 'APPROVAL',
      sequence: 2,
      metadata: { request: id, phase: 'decided', decision: 'approved', decidedBy: 'carol' },
    });
    // The same decision again is a replay; a different one is refused. Neither writes.
    const before = await written();
    expect((await decide(id, 'APPROVE', approver, 'looks fine')).data?.replayed).toBe(true);
    expect((await decide(id, 'DENY')).code).toBe('REQUEST_NOT_OPEN');
    expect(await written()).toEqual(before);
    const timeline = await api.query<{
      run: { steps: { edges: Array<{ node: { kind: string; humanRequest: { state: string } } }> } };
    }>(
      'query ($u: String!) { run(uuid: $u) { steps { edges { node { kind humanRequest { state } } } } } }',
      { u: run },
      agent,
    );
    expect(timeline.data?.run.steps.edges.map((e) => e.node)).toEqual([
      { kind: 'APPROVAL', humanRequest: { state: 'APPROVED' } },
      { kind: 'APPROVAL', humanRequest: { state: 'APPROVED' } },
    ]);
  });

  it('four eyes, permissions and hidden runs: refused with a stable code, nothing written', async () => {
    const id = (await requestApproval()).data?.request.uuid ?? '';
    const before = await written();
    expect((await decide(id, 'APPROVE', selfApprover)).code).toBe('FOUR_EYES_REQUIRED');
    expect((await decide(id, 'APPROVE', reader)).code).toBe('FORBIDDEN');
    expect((await decide('0f0f0f0f-0000-4000-8000-000000000000', 'APPROVE')).code).toBe('REQUEST_NOT_FOUND');
    // Another owner cannot ask in this run, and one without record cannot ask at all.
    expect((await requestApproval({}, { actor: 'mallory', permissions: ['record'] })).code).toBe(
      'RUN_NOT_FOUND',
    );
    expect((await requestApproval({}, reader)).code).toBe('FORBIDDEN');
    expect(await written()).toEqual(before);
    // The self-approver's inbox leaves out its own runs.
    const inbox = await api.query<{ openRequests: unknown[] }>('{ openRequests { uuid } }', {}, selfApprover);
    expect(inbox.data?.openRequests).toEqual([]);
    expect(await status()).toBe('WAITING_FOR_APPROVAL');
  });

  it('a denial is never a failed tool call and never in a failure rate', async () => {
    const id = (await requestApproval()).data?.request.uuid ?? '';
    const denied = await decide(id, 'DENY');
    expect(denied.data?.request.state).toBe('DENIED');
    expect(denied.data?.run.status).toBe('RUNNING');
    const stats = await api.query<{
      toolOutcomeStats: { groups: Array<{ counts: { failed: number; total: number } }> };
    }>('{ toolOutcomeStats(groupBy: [TOOL]) { groups { counts { failed total } } } }', {}, agent);
    expect(stats.errors).toBeUndefined();
    expect(stats.data?.toolOutcomeStats.groups).toEqual([]);
    const [row] = await selectRows<{ tools: number }>(
      api.db,
      sql`select count(*)::int as tools from run_steps where kind = 'tool'`,
    );
    expect(row?.tools).toBe(0);
  });

  it('retries with one key answer the first request; the same key for another request is refused', async () => {
    const first = await requestApproval({ idempotencyKey: 'ask-1' });
    const again = await requestApproval({ idempotencyKey: 'ask-1' });
    expect(again.data?.replayed).toBe(true);
    expect(again.data?.request.uuid).toBe(first.data?.request.uuid);
    const before = await written();
    expect((await requestApproval({ idempotencyKey: 'ask-1', reason: 'other' })).code).toBe(
      'IDEMPOTENCY_KEY_REUSED',
    );
    expect(await written()).toEqual(before);
  });

  it('expiry: an undecided request reads EXPIRED, is closed with its own step, and cannot be decided', async () => {
    const asked = await requestApproval({ expiresAt: new Date(Date.now() + 300).toISOString() });
    const id = asked.data?.request.uuid ?? '';
    await new Promise((resolve) => setTimeout(resolve, 400));
    const read = await api.query<{ humanRequest: { state: string } }>(
      'query ($u: String!) { humanRequest(uuid: $u) { state } }',
      { u: id },
      approver,
    );
    expect(read.data?.humanRequest.state).toBe('EXPIRED');
    const before = await written();
    expect((await decide(id, 'APPROVE')).code).toBe('REQUEST_EXPIRED');
    expect(await written()).toEqual(before);
    expect(await expireRequests({ db: api.db })).toBe(1);
    expect(await status()).toBe('RUNNING');
    expect((await written())?.steps).toBe(2);
    // Out of range expiries are refused.
    expect((await requestApproval({ expiresAt: new Date(Date.now() - 1000).toISOString() })).code).toBe(
      'VALUE_OUT_OF_RANGE',
    );
  });

  it('a request for input: values are checked against its schema, nothing stored on a mismatch', async () => {
    const asked = await requestInput();
    expect(asked.data?.run.status).toBe('WAITING_FOR_INPUT');
    const id = asked.data?.request.uuid ?? '';
    const before = await written();
    for (const values of [
      { region: 'eu' },
      { branch: 'main', region: 'mars' },
      { branch: 'main', region: 'eu', extra: 1 },
      'main',
    ]) {
      expect((await provide(id, values)).code).toBe('INPUT_VALUES_INVALID');
    }
    expect(await written()).toEqual(before);
    const answered = await provide(id, { branch: 'main', region: 'eu', replicas: 3 });
    expect(answered.data?.request.state).toBe('ANSWERED');
    expect(answered.data?.run.status).toBe('RUNNING');
    const read = await api.query<{ humanRequest: { values: unknown; prompt: string } }>(
      'query ($u: String!) { humanRequest(uuid: $u) { values prompt } }',
      { u: id },
      agent,
    );
    expect(read.data?.humanRequest).toEqual({
      values: { branch: 'main', region: 'eu', replicas: 3 },
      prompt: 'Which branch?',
    });
  });

  it("a request's schema and a proposed call's arguments read back in the order they were sent", async () => {
    const schema = {
      type: 'object',
      properties: {
        zone: { type: 'string' },
        a: { type: 'integer' },
        replicas: { type: 'integer' },
        ok: { type: 'boolean' },
      },
      required: ['zone'],
    };
    const asked = await requestInput({ schema });
    const approval = await ask(
      'requestApproval',
      `mutation ($input: RequestApprovalInput!) { requestApproval(input: $input) { ${RECORDED} } }`,
      { input: { runUuid: run, toolName: 'deploy', arguments: { where: 'eu', at: 1, replicas: 2 } } },
      agent,
    );
    const read = async (uuid: string | undefined) =>
      (
        await api.query<{ humanRequest: { schema: typeof schema | null; arguments: object | null } }>(
          'query ($u: String!) { humanRequest(uuid: $u) { schema arguments } }',
          { u: uuid },
          agent,
        )
      ).data?.humanRequest;
    expect(Object.keys((await read(asked.data?.request.uuid))?.schema?.properties ?? {})).toEqual([
      'zone',
      'a',
      'replicas',
      'ok',
    ]);
    expect(Object.keys((await read(approval.data?.request.uuid))?.arguments ?? {})).toEqual([
      'where',
      'at',
      'replicas',
    ]);
  });

  it('a schema a form cannot ask is refused; a decline is its own state', async () => {
    for (const schema of [
      { type: 'string' },
      { type: 'object', properties: { a: { type: 'object' } } },
      { type: 'object', properties: { a: { type: 'string' } }, required: ['b'] },
    ]) {
      expect((await requestInput({ schema })).code).toBe('INPUT_SCHEMA_INVALID');
    }
    expect((await written())?.requests).toBe(0);
    const id = (await requestInput()).data?.request.uuid ?? '';
    const declined = await provide(id, null, approver, true);
    expect(declined.data?.request.state).toBe('DECLINED');
  });

  it('a run that ends with a request open reads it CANCELLED; an ended run asks nobody', async () => {
    const id = (await requestApproval()).data?.request.uuid ?? '';
    await api.query(
      'mutation ($u: String!) { finishRun(input: { uuid: $u, status: COMPLETED, terminationReason: COMPLETED }) { __typename } }',
      { u: run },
      agent,
    );
    expect((await decide(id, 'APPROVE')).code).toBe('REQUEST_NOT_OPEN');
    expect((await requestApproval()).code).toBe('RUN_TERMINAL');
  });

  it('awaitDecision blocks until the decision, and answers OPEN when its time runs out', async () => {
    const id = (await requestApproval()).data?.request.uuid ?? '';
    const query =
      'query ($r: String!, $q: String!, $t: Int!) { awaitDecision(runUuid: $r, request: $q, timeoutMs: $t) { ... on HumanRequest { state decidedBy } } }';
    const timedOut = await api.query<{ awaitDecision: { state: string } }>(
      query,
      { r: run, q: id, t: 50 },
      agent,
    );
    expect(timedOut.data?.awaitDecision.state).toBe('OPEN');
    const began = Date.now();
    const waiting = api.query<{ awaitDecision: { state: string; decidedBy: string } }>(
      query,
      { r: run, q: id, t: 10_000 },
      agent,
    );
    setTimeout(() => void decide(id, 'DENY'), 200);
    expect((await waiting).data?.awaitDecision).toEqual({ state: 'DENIED', decidedBy: 'carol' });
    expect(Date.now() - began).toBeLessThan(5_000);
  });

  it('runStats counts how runs waited (approved, denied, expired, answered) and for how long', async () => {
    const approved = (await requestApproval()).data?.request.uuid ?? '';
    await decide(approved, 'APPROVE');
    const denied = (await requestApproval()).data?.request.uuid ?? '';
    await new Promise((resolve) => setTimeout(resolve, 30));
    await decide(denied, 'DENY');
    await requestApproval({ expiresAt: new Date(Date.now() + 50).toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 80));
    const input = (await requestInput()).data?.request.uuid ?? '';
    await provide(input, { branch: 'main', region: 'us' });
    const stats = await api.query<{ runStats: { waited: Array<Record<string, unknown>> } }>(
      'query ($c: [String!]) { runStats(groupBy: [STATUS], filter: { configurations: $c }) { waited { kind state runs requests waitMs longestWaitMs } } }',
      { c: ['hitl'] },
      approver,
    );
    expect(stats.errors).toBeUndefined();
    const waited = stats.data?.runStats.waited ?? [];
    expect(waited.map(({ kind, state, runs, requests }) => ({ kind, state, runs, requests }))).toEqual([
      { kind: 'APPROVAL', state: 'APPROVED', runs: 1, requests: 1 },
      { kind: 'APPROVAL', state: 'DENIED', runs: 1, requests: 1 },
      // Not closed yet by the sweep: read as expired all the same.
      { kind: 'APPROVAL', state: 'EXPIRED', runs: 1, requests: 1 },
      { kind: 'INPUT', state: 'ANSWERED', runs: 1, requests: 1 },
    ]);
    // An expired request waited until its expiry, not until the sweep or this read.
    expect(Number(waited.find((row) => row.state === 'EXPIRED')?.longestWaitMs)).toBeLessThanOrEqual(60);
    const deniedWait = waited.find((row) => row.state === 'DENIED');
    expect(Number(deniedWait?.waitMs)).toBeGreaterThanOrEqual(25);
    // What plain SQL says the denied request waited.
    const [row] = await selectRows<{ ms: number }>(
      api.db,
      sql`select round(extract(epoch from (decided_at - requested_at)) * 1000)::int as ms from human_requests where state = 'denied'`,
    );
    expect(Math.abs(Number(deniedWait?.waitMs) - (row?.ms ?? 0))).toBeLessThanOrEqual(1);
  });

  it('a request left open when its run ends waits until the end, not until the read', async () => {
    await requestApproval();
    const cancelled = await api.query(
      'mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename } }',
      { u: run },
      { actor: 'agent', permissions: ['cancel_own_runs'] },
    );
    expect(cancelled.data).toEqual({ cancelRun: { __typename: 'CancelRunSuccess' } });
    await new Promise((resolve) => setTimeout(resolve, 120));
    const stats = await api.query<{ runStats: { waited: Array<{ state: string; longestWaitMs: number }> } }>(
      'query ($c: [String!]) { runStats(groupBy: [STATUS], filter: { configurations: $c }) { waited { state longestWaitMs } } }',
      { c: ['hitl'] },
      approver,
    );
    const [row] = await selectRows<{ ms: number }>(
      api.db,
      sql`select round(extract(epoch from (r.finished_at - h.requested_at)) * 1000)::int as ms
            from human_requests h join runs r on r.id = h.run_id where r.uuid = ${run}`,
    );
    const [waited] = stats.data?.runStats.waited ?? [];
    expect(waited?.state).toBe('CANCELLED');
    expect(Math.abs(Number(waited?.longestWaitMs) - (row?.ms ?? -1000))).toBeLessThanOrEqual(1);
  });

  it('the inbox leaves out what four eyes forbids before it counts first, as checkFourEyes decides', async () => {
    // The self-approver's own request is the oldest; erin's, in a run of hers, comes after.
    const own = (await requestApproval()).data?.request.uuid ?? '';
    const erin: AskAs = { actor: 'erin', permissions: ['read_own_runs', 'record', 'approve_runs'] };
    const hers = await api.query<{ startRun: { data: { uuid: string } } }>(
      'mutation { startRun(input: { configuration: "hitl" }) { ... on StartRunSuccess { data { uuid } } } }',
      {},
      erin,
    );
    const herRun = hers.data?.startRun.data.uuid ?? '';
    const other = (
      await api.query<{ requestApproval: { data: { request: { uuid: string } } } }>(
        'mutation ($input: RequestApprovalInput!) { requestApproval(input: $input) { ... on RequestRecordedSuccess { data { request { uuid } } } } }',
        { input: { runUuid: herRun, toolName: 'deploy' } },
        erin,
      )
    ).data?.requestApproval.data.request.uuid;
    const requests = [
      { uuid: own, run: { owner: 'agent' }, requestedBy: 'agent' },
      { uuid: other ?? '', run: { owner: 'erin' }, requestedBy: 'erin' },
    ];
    for (const [who, as] of [
      ['agent', selfApprover],
      ['erin', erin],
      ['carol', approver],
    ] as const) {
      const inbox = await api.query<{ openRequests: Array<{ uuid: string }> }>(
        '{ openRequests(first: 1) { uuid } }',
        {},
        as,
      );
      const decidable = requests.filter((request) => {
        try {
          checkFourEyes({ name: who, permissions: new Set(['approve_runs'] as const) }, request.run, request);
          return true;
        } catch {
          return false;
        }
      });
      expect(
        inbox.data?.openRequests.map((entry) => entry.uuid),
        who,
      ).toEqual(decidable.slice(0, 1).map((request) => request.uuid));
    }
  });
});
