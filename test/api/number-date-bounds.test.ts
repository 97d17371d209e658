// Numbers and dates a client may legally send, or that legal input adds up to, never end in an
// INTERNAL_SERVER_ERROR: counters past 2^31 are SafeInt, sums fit their columns, dates outside
// 1970-01-01..9999-12-31 and impossible calendar dates are BAD_USER_INPUT, cursors and global ids
// that point nowhere are refused or null.
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs, stepRequests } from '../../drizzle/schema.ts';
import { outcomeStatsCells } from '../../src/db/outcome-stats.ts';
import { DURATION_BUCKETS } from '../../src/domain/duration-histogram.ts';
import { encodeCursor, runListHash, stepListHash } from '../../src/graphql/ids.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const INT4_MAX = 2_147_483_647;
const b64 = (text: string) => Buffer.from(text).toString('base64url');

describe.each(backendNames)('numbers and dates at their bounds (%s)', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());

  const db = () => api.database.handle.db;

  async function startRun(): Promise<string> {
    const result = await api.query<{ startRun: { data: { uuid: string } } }>(
      'mutation { startRun(input: { configuration: "bounds" }) { ... on StartRunSuccess { data { uuid } } } }',
    );
    return result.data?.startRun.data.uuid ?? '';
  }

  const written = async () => ({
    runs: await db().$count(runs),
    steps: await db().$count(runSteps),
    requests: await db().$count(stepRequests),
  });

  const llm = (promptTokens: number, estimatedCost = 0) => ({
    kind: 'LLM',
    round: 1,
    durationMs: 10,
    model: { model: 'm', promptTokens, completionTokens: promptTokens, estimatedCost },
  });
  const RECORD_STEPS = `mutation ($input: RecordStepsInput!) { recordSteps(input: $input) {
    __typename ... on Error { code } ... on InvalidInputError { field }
    ... on RecordedStepsSuccess { data { run { promptTokens completionTokens totalTokens estimatedCost } } } } }`;

  it('sums 25 llm steps of 100,000,000 prompt tokens past 2^31, in run and in a runs page', async () => {
    const run = await startRun();
    const recorded = await api.query<{ recordSteps: { data: { run: Record<string, number> } } }>(
      RECORD_STEPS,
      { input: { runUuid: run, steps: Array.from({ length: 25 }, () => llm(100_000_000)) } },
    );
    expect(recorded.errors).toBeUndefined();
    expect(recorded.data?.recordSteps.data.run).toMatchObject({
      promptTokens: 2_500_000_000,
      completionTokens: 2_500_000_000,
      totalTokens: 5_000_000_000,
    });
    const page = await api.query<{
      runs: { edges: Array<{ node: { uuid: string; promptTokens: number } }> };
    }>('{ runs(first: 100) { edges { node { uuid promptTokens totalTokens } } } }');
    expect(page.errors).toBeUndefined();
    expect(page.data?.runs.edges.find((e) => e.node.uuid === run)?.node.promptTokens).toBe(2_500_000_000);
  });

  it('refuses a step that would take a run past 2^53 - 1 tokens, writing nothing', async () => {
    const run = await startRun();
    await db()
      .update(runs)
      .set({ promptTokens: Number.MAX_SAFE_INTEGER - 10 })
      .where(eq(runs.uuid, run));
    const before = await written();
    const refused = await api.query<{ recordSteps: { code: string; field: string } }>(RECORD_STEPS, {
      input: { runUuid: run, steps: [llm(100)] },
    });
    expect(refused.errors).toBeUndefined();
    expect(refused.data?.recordSteps).toMatchObject({
      code: 'VALUE_OUT_OF_RANGE',
      field: 'model.promptTokens',
    });
    expect(await written()).toEqual(before);
    const read = await api.query<{ run: { promptTokens: number } }>(
      'query ($u: String!) { run(uuid: $u) { promptTokens } }',
      { u: run },
    );
    expect(read.data?.run.promptTokens).toBe(Number.MAX_SAFE_INTEGER - 10);
  });

  it('adds a legal cost to a run that already cost more than numeric(18,6) holds', async () => {
    const run = await startRun();
    // What 1,000,000 steps of the largest legal cost add up to.
    await db().update(runs).set({ estimatedCost: 1e12 }).where(eq(runs.uuid, run));
    const recorded = await api.query<{ recordSteps: { data: { run: { estimatedCost: number } } } }>(
      RECORD_STEPS,
      { input: { runUuid: run, steps: [llm(1, 1_000_000), llm(1, 0.25)] } },
    );
    expect(recorded.errors).toBeUndefined();
    expect(recorded.data?.recordSteps.data.run.estimatedCost).toBe(1_000_001_000_000.25);
  });

  it('refuses a step past the last sequence a run can hold, writing nothing', async () => {
    const run = await startRun();
    const first = await api.query(RECORD_STEPS, { input: { runUuid: run, steps: [llm(1)] } });
    expect(first.errors).toBeUndefined();
    const [row] = await db().select().from(runs).where(eq(runs.uuid, run));
    await db()
      .update(runSteps)
      .set({ sequence: INT4_MAX })
      .where(eq(runSteps.runId, row?.id ?? 0));
    const before = await written();
    const refused = await api.query<{ recordSteps: { code: string } }>(RECORD_STEPS, {
      input: { runUuid: run, steps: [llm(1)] },
    });
    expect(refused.errors).toBeUndefined();
    expect(refused.data?.recordSteps).toMatchObject({ code: 'STEP_INVALID_SEQUENCE' });
    expect(await written()).toEqual(before);
  });

  it('counts more than 2^31 tool calls in statistics, from each rollup that answers them', async () => {
    const calls = { server: 'busy', ok: 2_000_000_000, failed: 0, cancelled: 0 };
    const days = [
      { ...calls, day: '2026-01-01' },
      { ...calls, day: '2026-01-02', ok: 2_500_000_000, cancelled: 2_200_000_000 },
    ];
    // By server from the (day, server) rollup; by server and tool from the (day, server, tool) one.
    for (const day of days) {
      await db().execute(
        sql`insert into stats_server_daily (day, server, ok, failed, cancelled) values (${day.day}, ${day.server}, ${day.ok}, ${day.failed}, ${day.cancelled})`,
      );
      await db().execute(
        sql`insert into stats_server_tool_daily (day, server, tool_name, ok, failed, cancelled) values (${day.day}, ${day.server}, 'ping', ${day.ok}, ${day.failed}, ${day.cancelled})`,
      );
    }
    for (const groupBy of ['SERVER', 'SERVER, TOOL']) {
      const stats = await api.query<{
        toolOutcomeStats: { groups: Array<{ counts: Record<string, number> }> };
      }>(
        `{ toolOutcomeStats(groupBy: [${groupBy}], filter: { servers: ["busy"], occurredAfter: "2026-01-01T00:00:00Z", occurredBefore: "2026-01-03T00:00:00Z" }) {
          groups { counts { ok failed cancelled total } } } }`,
      );
      expect(stats.errors).toBeUndefined();
      expect([groupBy, stats.data?.toolOutcomeStats.groups[0]?.counts]).toEqual([
        groupBy,
        { ok: 4_500_000_000, failed: 0, cancelled: 2_200_000_000, total: 6_700_000_000 },
      ]);
    }
  });

  it('sums duration histograms across rollup rows exactly, up to 2^53 - 1 calls in a bucket', async () => {
    const histogram = (first: number, sixth: number) =>
      Array.from({ length: DURATION_BUCKETS }, (_, bucket) =>
        bucket === 0 ? first : bucket === 5 ? sixth : 0,
      );
    // Stored trimmed to the buckets with calls (bucket 0 to bucket 5: elements 1 to 6).
    for (const [day, durations] of [
      ['2026-02-01', histogram(2 ** 52 + 1, 3)],
      ['2026-02-02', histogram(2 ** 52 - 2, 4)],
    ] as const) {
      await db().execute(
        sql`insert into stats_server_daily (day, server, ok, durations) values (${day}, 'heavy', 1, ${`[1:6]={${durations.slice(0, 6).join(',')}}`}::bigint[])`,
      );
    }
    const cells = await outcomeStatsCells(db(), {
      groupBy: ['server'],
      range: { from: new Date('2026-02-01T00:00:00Z'), to: new Date('2026-02-03T00:00:00Z') },
      spec: null,
      servers: ['heavy'],
    });
    expect(cells.map((cell) => cell.histogram)).toEqual([histogram(Number.MAX_SAFE_INTEGER, 7)]);
  });

  const RUNS = 'query ($d: DateTime) { runs(filter: { createdAfter: $d }) { edges { cursor } } }';

  it.each([
    '0000-01-01T00:00:00Z',
    '+275760-09-13T00:00:00Z',
    '-000001-01-01T00:00:00Z',
    '1969-12-31T23:59:59Z',
    '10000-01-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2025-02-29T12:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T23:60:00Z',
    '2026-01-01T23:59:60Z',
    '2026-01-01T00:00:00+24:00',
    '2026-01-01T00:00:00+05:60',
  ])('refuses the DateTime %s with BAD_USER_INPUT, as a variable and as a literal', async (date) => {
    const asVariable = await api.query(RUNS, { d: date });
    expect(asVariable.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    const asLiteral = await api.query(`{ runs(filter: { createdAfter: "${date}" }) { edges { cursor } } }`);
    expect(asLiteral.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
  });

  it.each([
    '1970-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999Z',
    '2024-02-29T00:00:00Z',
    '2026-01-01T01:00:00+01:00',
  ])('takes the DateTime %s', async (date) => {
    const result = await api.query(RUNS, { d: date });
    expect(result.errors).toBeUndefined();
  });

  it('refuses a step dated outside the range, writing nothing', async () => {
    const run = await startRun();
    const before = await written();
    for (const occurredAt of ['0000-01-01T00:00:00Z', '2026-02-30T00:00:00Z']) {
      const result = await api.query(
        'mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename } }',
        { input: { runUuid: run, kind: 'CONTEXT', round: 0, durationMs: 0, occurredAt } },
      );
      expect(result.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    }
    expect(await written()).toEqual(before);
  });

  it('answers statistics at both ends of the date range', async () => {
    for (const filter of [
      '{ occurredAfter: "1970-01-01T00:00:00Z", occurredBefore: "1970-02-01T00:00:00Z" }',
      '{ occurredAfter: "9999-12-01T00:00:00Z", occurredBefore: "9999-12-31T23:59:59.999Z" }',
    ]) {
      const result = await api.query(
        `{ toolOutcomeStats(groupBy: [SERVER], bucket: WEEK, utcOffsetMinutes: -840, filter: ${filter}) { groups { bucketStart } } }`,
      );
      expect(result.errors).toBeUndefined();
      const runStats = await api.query(
        `{ runStats(groupBy: [STATUS], bucket: WEEK, utcOffsetMinutes: -840, filter: ${filter.replace(/occurred/g, 'created')}) { groups { bucketStart } } }`,
      );
      expect(runStats.errors).toBeUndefined();
    }
  });

  it.each([
    [
      'a run cursor in year 0',
      encodeCursor('run', { createdAt: '0000-01-01T00:00:00.000000Z', id: 1 }, runListHash({})),
    ],
    [
      'a run cursor in year 275760',
      encodeCursor('run', { createdAt: '+275760-09-13T00:00:00.000Z', id: 1 }, runListHash({})),
    ],
    [
      'a run cursor on 2026-02-30',
      encodeCursor('run', { createdAt: '2026-02-30T00:00:00.000000Z', id: 1 }, runListHash({})),
    ],
    [
      'a run cursor with an id past bigint',
      encodeCursor('run', { createdAt: '2026-01-01T00:00:00.000000Z', id: 2 ** 70 }, runListHash({})),
    ],
  ])('refuses %s with BAD_USER_INPUT', async (_name, cursor) => {
    const result = await api.query('query ($a: String!) { runs(after: $a) { edges { cursor } } }', {
      a: cursor,
    });
    expect(result.errors?.map((e) => [e.extensions?.code, e.extensions?.field])).toEqual([
      ['BAD_USER_INPUT', 'after'],
    ]);
  });

  it('refuses a step cursor past the last sequence, and takes the last one', async () => {
    const run = await startRun();
    const steps = (cursor: string) =>
      api.query(
        'query ($u: String!, $a: String!) { run(uuid: $u) { steps(after: $a) { edges { cursor } } } }',
        {
          u: run,
          a: cursor,
        },
      );
    for (const sequence of [Number.MAX_SAFE_INTEGER, INT4_MAX + 1]) {
      const result = await steps(encodeCursor('step', sequence, stepListHash({})));
      expect(result.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    }
    const last = await steps(encodeCursor('step', INT4_MAX, stepListHash({})));
    expect(last.errors).toBeUndefined();
  });

  it.each([
    ['McpServer:x', b64('McpServer:x')],
    ['Query:1', b64('Query:1')],
    ['OutcomeCounts:1', b64('OutcomeCounts:1')],
    ['Mutation:1', b64('Mutation:1')],
    ['RunStep:x', b64('RunStep:x')],
    ['RunStep past bigint', b64(`RunStep:${'9'.repeat(30)}`)],
    ['Run:not-a-uuid', b64('Run:not-a-uuid')],
    ['the raw text McpServer:x', 'McpServer:x'],
    ['the raw text Query:1', 'Query:1'],
  ])(
    'answers node(id) and nodes(ids) of %s with BAD_USER_INPUT or null, never an internal error',
    async (_name, id) => {
      const result = await api.query<{ node: unknown; nodes: unknown[] }>(
        'query ($id: ID!) { node(id: $id) { id } nodes(ids: [$id]) { id } }',
        { id },
      );
      const codes = (result.errors ?? []).map((e) => e.extensions?.code);
      expect(codes.every((code) => code === 'BAD_USER_INPUT')).toBe(true);
      if (codes.length === 0) expect(result.data).toEqual({ node: null, nodes: [null] });
    },
  );
});
