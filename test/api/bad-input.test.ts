import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { TRUNCATION_MARKER } from '../../src/domain/bounding.ts';
import { encodeCursor, stepListHash } from '../../src/graphql/ids.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { internals, type Listening, listen } from '../support/http.ts';

interface Answer {
  status: number;
  codes: unknown[];
  body: {
    data?: Record<string, unknown> | null;
    errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
  };
  text: string;
}

describe.each(backendNames)('bad input over HTTP, against the real server (%s)', (backend) => {
  let api: TestApi;
  let http: Listening;
  let base = '';
  let key = '';
  let runUuid = '';

  beforeAll(async () => {
    api = await openTestApi(backend);
    http = await listen(api.server);
    base = http.base;
    key = await api.keyFor();
    const started = await post(
      JSON.stringify({
        query:
          'mutation { startRun(input: { configuration: "bad-input" }) { ... on StartRunSuccess { data { uuid } } } }',
      }),
    );
    const startRun = started.body.data?.startRun as { data: { uuid: string } } | undefined;
    runUuid = String(startRun?.data.uuid);
  });
  afterAll(async () => {
    await http?.close();
    await api?.dispose();
  });

  async function post(body: string, contentType = 'application/json'): Promise<Answer> {
    const response = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': contentType, authorization: `Bearer ${key}` },
      body,
    });
    const text = await response.text();
    let parsed: Answer['body'] = {};
    try {
      parsed = JSON.parse(text) as Answer['body'];
    } catch {
      // not JSON: the assertions on codes will say so
    }
    return {
      status: response.status,
      codes: (parsed.errors ?? []).map((e) => e.extensions?.code),
      body: parsed,
      text,
    };
  }

  const written = async () => ({
    runs: await api.database.handle.db.$count(runs),
    steps: await api.database.handle.db.$count(runSteps),
  });

  async function healthy() {
    expect((await fetch(`${base}/health`)).status).toBe(200);
  }

  const query = (text: string, variables?: Record<string, unknown>) =>
    JSON.stringify({ query: text, variables });

  it.each([
    ['malformed JSON', () => '{"query": ', 400, 'BAD_REQUEST'],
    ['an empty query', () => query(''), 200, 'GRAPHQL_PARSE_FAILED'],
    ['no query at all', () => '{}', 200, 'BAD_REQUEST'],
    [
      'a 5 MB query (refused by its bytes, before it is parsed)',
      () => query(`{ ${'runs { edges { cursor } } '.repeat(200_000)} }`),
      413,
      'QUERY_TOO_LARGE',
    ],
    [
      'a depth-50 query',
      () =>
        query(
          `{ ${'node(id: "x") { ... on Run { steps { edges { node { run { '.repeat(10)} id ${'} } } } } }'.repeat(10)} }`,
        ),
      200,
      'QUERY_TOO_DEEP',
    ],
    [
      '1,000 aliases (the token limit catches it first)',
      () =>
        query(`{ ${Array.from({ length: 1000 }, (_, i) => `a${i}: runs { edges { cursor } }`).join(' ')} }`),
      200,
      'QUERY_TOO_LARGE',
    ],
    [
      '20 aliases',
      () =>
        query(`{ ${Array.from({ length: 20 }, (_, i) => `a${i}: runs { edges { cursor } }`).join(' ')} }`),
      200,
      'TOO_MANY_ALIASES',
    ],
    [
      'a query costing over 50,000 (100 runs × 100 steps each)',
      () =>
        query('{ runs(first: 100) { edges { node { steps(first: 100) { edges { node { id kind } } } } } } }'),
      200,
      'QUERY_TOO_COSTLY',
    ],
    [
      'an invalid enum value',
      () => query('{ runs(filter: { statuses: [PAUSED] }) { edges { cursor } } }'),
      200,
      'GRAPHQL_VALIDATION_FAILED',
    ],
    ['an invalid UUID', () => query('{ run(uuid: "12345") { id } }'), 200, 'BAD_USER_INPUT'],
    [
      'a DateTime in year 0',
      () => query('{ runs(filter: { createdAfter: "0000-01-01T00:00:00Z" }) { edges { cursor } } }'),
      200,
      'BAD_USER_INPUT',
    ],
    [
      'a date that does not exist',
      () =>
        query('query ($d: DateTime) { runs(filter: { createdBefore: $d }) { edges { cursor } } }', {
          d: '2026-02-30T00:00:00Z',
        }),
      400,
      'BAD_USER_INPUT',
    ],
    [
      'a step cursor past the last sequence',
      () =>
        query(
          'query ($u: String!, $a: String!) { run(uuid: $u) { steps(after: $a) { edges { cursor } } } }',
          {
            u: runUuid,
            a: encodeCursor('step', Number.MAX_SAFE_INTEGER, stepListHash({})),
          },
        ),
      200,
      'BAD_USER_INPUT',
    ],
    [
      'the global id of a type that is not a node',
      () => query(`{ node(id: "${Buffer.from('OutcomeCounts:x').toString('base64url')}") { id } }`),
      200,
      'BAD_USER_INPUT',
    ],
    [
      'a filter value holding U+0000',
      () =>
        query('query ($v: String!) { runs(filter: { owners: [$v] }) { edges { cursor } } }', {
          v: 'a\u0000',
        }),
      200,
      'BAD_USER_INPUT',
    ],
    [
      'wrong variable types',
      () => query('query ($n: Int) { runs(first: $n) { edges { cursor } } }', { n: 'ten' }),
      400,
      'BAD_USER_INPUT',
    ],
  ])('answers %s with a clear error and writes nothing', async (_name, body, status, code) => {
    const before = await written();
    const answer = await post(body());
    expect([answer.status, ...answer.codes.slice(0, 1)]).toEqual([status, code]);
    expect(answer.text).not.toMatch(internals);
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('costs a selection the same whether its fields are written out or spread from a fragment', async () => {
    // 500 timeline entries with the fields a screen shows: under the cost limit written out, and so through a
    // fragment, as generated clients write it (a fragment is not a level of nesting).
    const fields = 'sequence occurredAt kind round durationMs outcome detail step { id failureCode }';
    const inline = await post(
      query(
        `query ($u: String!) { run(uuid: $u) { timelinePage(first: 500) { edges { node { ${fields} } } } } }`,
        {
          u: runUuid,
        },
      ),
    );
    const spread = await post(
      query(
        `query ($u: String!) { run(uuid: $u) { timelinePage(first: 500) { edges { node { ...Line } } } } } fragment Line on TimelineEntry { ${fields} }`,
        { u: runUuid },
      ),
    );
    expect(inline.codes).toEqual([]);
    expect(spread.codes).toEqual([]);
    expect(spread.body).toEqual(inline.body);
  });

  it('refuses a non-JSON body a page of another site could post (no key header): nothing read, nothing written', async () => {
    const before = await written();
    const response = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({
        query: 'mutation { startRun(input: { configuration: "forged" }) { __typename } }',
      }),
    });
    expect([401, 403]).toContain(response.status);
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('refuses a body over 16 MB with 413 REQUEST_TOO_LARGE', async () => {
    const before = await written();
    const answer = await post(query('{ __typename }', { padding: 'x'.repeat(17 * 1024 * 1024) }));
    expect([answer.status, ...answer.codes]).toEqual([413, 'REQUEST_TOO_LARGE']);
    expect(await written()).toEqual(before);
    await healthy();
  });

  /** Records one tool result over HTTP; the answer, and the step stored for that tool name. */
  async function recordToolOutput(toolName: string, extra: Record<string, unknown>) {
    const answer = await post(
      query(
        `mutation ($input: RecordToolResultInput!) { recordToolResult(input: $input) {
          __typename ... on RecordedStepsSuccess { data { steps { sequence outcome } } } } }`,
        { input: { runUuid, round: 1, durationMs: 10, toolName, server: 'fs', ...extra } },
      ),
    );
    const [stored] = await api.database.handle.db
      .select({ payload: runSteps.payload, metadata: runSteps.metadata })
      .from(runSteps)
      .where(eq(runSteps.toolName, toolName));
    return { answer, stored };
  }

  it('stores a 10 MB tool result, bounded, and does not refuse it', async () => {
    const { answer, stored } = await recordToolOutput('dump', {
      result: { content: 'y'.repeat(10 * 1024 * 1024), outcome: 'OK' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.data?.recordToolResult).toMatchObject({
      __typename: 'RecordedStepsSuccess',
    });
    const content = String(stored?.payload.content);
    expect(content.length).toBe(50_000 + TRUNCATION_MARKER.length);
    expect(content.endsWith(TRUNCATION_MARKER)).toBe(true);
    await healthy();
  });

  it('stores tool output holding U+0000 and lone surrogates, repaired, and keeps its outcome', async () => {
    const { answer, stored } = await recordToolOutput('cat', {
      arguments: { 'file\u0000': 'a.png' },
      result: { content: '\u0000PNG\uDC00', outcome: 'CANCELLED' },
    });
    expect(answer.status).toBe(200);
    const recorded = answer.body.data?.recordToolResult as {
      data: { steps: Array<{ sequence: number; outcome: string }> };
    };
    expect(recorded.data.steps[0]?.outcome).toBe('CANCELLED');
    expect(stored?.payload.content).toBe('\uFFFDPNG\uFFFD');
    expect(stored?.payload.arguments).toEqual({ 'file\uFFFD': 'a.png' });
    expect(stored?.metadata.repairedCharacters).toBe(3);
    await healthy();
  });

  it('refuses a tool name holding a lone surrogate with VALUE_INVALID, writing nothing', async () => {
    const before = await written();
    const answer = await post(
      query(
        'mutation ($input: RecordToolResultInput!) { recordToolResult(input: $input) { __typename ... on InvalidInputError { code field } } }',
        {
          input: {
            runUuid,
            round: 1,
            durationMs: 1,
            toolName: 'read\uD800',
            result: { content: 'x', outcome: 'OK' },
          },
        },
      ),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.data?.recordToolResult).toEqual({
      __typename: 'InvalidInputError',
      code: 'VALUE_INVALID',
      field: 'toolName',
    });
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('refuses a batch of 1,001 steps whole', async () => {
    const before = await written();
    const answer = await post(
      query(
        `mutation ($input: RecordStepsInput!) { recordSteps(input: $input) { __typename ... on Error { code } } }`,
        {
          input: {
            runUuid,
            steps: Array.from({ length: 1_001 }, () => ({ kind: 'CONTEXT', round: 0, durationMs: 0 })),
          },
        },
      ),
    );
    expect(answer.body.data?.recordSteps).toEqual({
      __typename: 'InvalidInputError',
      code: 'BATCH_TOO_LARGE',
    });
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('keeps answering /health while bad requests are in flight', async () => {
    const storm = Array.from({ length: 20 }, (_, i) =>
      post(i % 2 ? '{"query": ' : query(`{ ${'runs { edges { cursor } } '.repeat(50_000)} }`)),
    );
    await healthy();
    const answers = await Promise.all(storm);
    expect(answers.every((a) => a.codes.length === 1)).toBe(true);
    await healthy();
  });
});
