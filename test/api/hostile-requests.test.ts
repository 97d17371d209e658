import { createHash } from 'node:crypto';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { createApiKey, revokeApiKey } from '../../src/db/api-keys.ts';
import { inProcessChannel } from '../../src/db/notifications.ts';
import { RequestLimits } from '../../src/domain/limits.ts';
import { boundedParseCaches } from '../../src/graphql/parse-cache.ts';
import { KeyWatch } from '../../src/ledger/key-watch.ts';
import { RunEvents } from '../../src/ledger/run-events.ts';
import { createServer, type Server } from '../../src/server.ts';
import { openTestApi, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { type Listening, listen } from '../support/http.ts';
import { agentTrace, exportSpans } from '../support/otel.ts';
import { SseReader, subscriptionRequest } from '../support/sse.ts';

/**
 * What a request can do to the service before and after its key is known:
 * memory bounded before authentication, streams and waits that end with
 * their key, and caps that keep one key from holding every connection.
 */

const START = `mutation ($c: String!) { startRun(input: { configuration: $c }) {
  __typename ... on StartRunSuccess { data { uuid } } } }`;
const RECORD = `mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename ... on Error { code } } }`;
const ASK = `mutation ($input: RequestApprovalInput!) { requestApproval(input: $input) {
  __typename ... on RequestRecordedSuccess { data { request { uuid } } } ... on Error { code } } }`;
const WAIT = `query ($r: String!, $q: String!, $t: Int!) {
  awaitDecision(runUuid: $r, request: $q, timeoutMs: $t) { __typename ... on HumanRequest { state } } }`;

async function post(server: Server, body: unknown, key?: string) {
  const response = await server.fetch('http://runledger.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as { errors?: Array<{ extensions?: { code?: string } }> };
  return { status: response.status, codes: (json.errors ?? []).map((e) => e.extensions?.code) };
}

/** A distinct text of about `bytes` bytes that is mostly a comment, as the attack sent. */
const commentQuery = (i: number, bytes: number, tail = '{ __typename }') =>
  `# ${i} ${'x'.repeat(Math.max(0, bytes - 40))}\n${tail}`;

describe('memory before a key is known (in-process)', () => {
  let api: TestApi;
  let server: Server;
  let caches: ReturnType<typeof boundedParseCaches>;

  beforeAll(async () => {
    api = await openTestApi('pglite');
    caches = boundedParseCaches();
    server = createServer({
      handle: api.database.handle,
      graphiql: false,
      mcp: TEST_MCP_SETTINGS,
      parseCaches: caches,
    });
  }, 60_000);
  afterAll(async () => {
    await api?.dispose();
  });

  it('parses nothing and keeps nothing for requests without a valid key, valid texts or syntax errors alike', async () => {
    const unknownKey = `rl_${'A'.repeat(43)}`;
    for (let i = 0; i < 40; i++) {
      const tail = i % 2 === 0 ? '{ __typename }' : '{ runs( }';
      const noKey = await post(server, { query: commentQuery(i, 90_000, tail) });
      expect(noKey).toEqual({ status: 401, codes: ['UNAUTHENTICATED'] });
      const wrongKey = await post(server, { query: commentQuery(i, 90_000, tail) }, unknownKey);
      expect(wrongKey).toEqual({ status: 401, codes: ['UNAUTHENTICATED'] });
    }
    expect(caches.documentCache.size).toBe(0);
    expect(caches.errorCache.size).toBe(0);
  });

  it('refuses a query text over its limit in bytes with 413 QUERY_TOO_LARGE before it is parsed (401 first without a key)', async () => {
    const key = await api.keyFor();
    const text = commentQuery(0, RequestLimits.maxQueryBytes + 100);
    expect(await post(server, { query: text })).toEqual({ status: 401, codes: ['UNAUTHENTICATED'] });
    expect(await post(server, { query: text }, key)).toEqual({ status: 413, codes: ['QUERY_TOO_LARGE'] });
    // Multi-byte characters count as the bytes they take.
    const wide = `# ${'é'.repeat(RequestLimits.maxQueryBytes / 2)}\n{ __typename }`;
    expect(await post(server, { query: wide }, key)).toEqual({ status: 413, codes: ['QUERY_TOO_LARGE'] });
    expect(caches.documentCache.size).toBe(0);
  });

  it('keeps the parse caches of a valid key under their bounds in bytes, however many distinct texts it sends', async () => {
    const key = await api.keyFor();
    for (let i = 0; i < 400; i++) {
      const result = await post(server, { query: commentQuery(i, 95_000) }, key);
      expect(result.status).toBe(200);
      await post(server, { query: commentQuery(i, 95_000, '{ runs( }') }, key);
    }
    expect(caches.documentCache.size).toBeGreaterThan(0);
    expect(caches.documentCache.bytes).toBeLessThanOrEqual(RequestLimits.parseCacheBytes);
    expect(caches.errorCache.bytes).toBeLessThanOrEqual(RequestLimits.parseErrorCacheBytes);
  });
});

describe.each(backendNames)('what a key holds open ends with it (%s)', (backend) => {
  let api: TestApi;
  let events: RunEvents;
  let keys: KeyWatch;
  let servers: Server[];

  const ask = async <T>(server: Server, query: string, variables: Record<string, unknown>, key: string) => {
    const response = await server.fetch('http://runledger.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
    return {
      status: response.status,
      ...((await response.json()) as { data?: T; errors?: Array<{ extensions?: { code?: string } }> }),
    };
  };
  const startRun = async (server: Server, key: string) =>
    (await ask<{ startRun: { data: { uuid: string } } }>(server, START, { c: 'hostile' }, key)).data?.startRun
      .data.uuid ?? '';
  const freshKey = async (actor: string) =>
    (await createApiKey(api.db, actor, ['record', 'read_own_runs', 'read_payloads'])).key;

  beforeAll(async () => {
    api = await openTestApi(backend);
    events = new RunEvents(inProcessChannel(), { maxWaitsPerActor: 2 });
    // Two instances on one database: a revocation is seen by both, whoever made it.
    keys = new KeyWatch(api.database.handle.db, 100);
    servers = [
      createServer({ handle: api.database.handle, graphiql: false, mcp: TEST_MCP_SETTINGS, events, keys }),
      createServer({
        handle: api.database.handle,
        graphiql: false,
        mcp: TEST_MCP_SETTINGS,
        events: new RunEvents(inProcessChannel()),
        keys: new KeyWatch(api.database.handle.db, 100),
      }),
    ];
  }, 60_000);
  afterAll(async () => {
    keys?.close();
    await events?.close();
    await api?.dispose();
  });

  it('ends a stream of a revoked key with UNAUTHENTICATED, on every instance, and sends nothing after', async () => {
    const key = await freshKey('revoked-streamer');
    const [first, second] = servers as [Server, Server];
    const run = await startRun(first, key);
    const streams = await Promise.all(
      [first, second].map(
        async (server) =>
          new SseReader(
            await server.fetch(subscriptionRequest('http://runledger.test/graphql', key, { uuid: run })),
          ),
      ),
    );
    await ask(first, RECORD, { input: { runUuid: run, kind: 'LLM', round: 1, durationMs: 1 } }, key);
    for (const stream of streams) expect((await stream.event()).step?.sequence).toBe(1);
    await revokeByKey(api, key);
    for (const stream of streams) {
      const message = await stream.next();
      expect(message?.event).toBe('next');
      if (message?.event === 'next') {
        expect(message.data.errors?.map((e) => e.extensions?.code)).toEqual(['UNAUTHENTICATED']);
        expect(message.data.data ?? null).toBeNull();
      }
      const end = await stream.next();
      expect(end === null || end.event === 'complete').toBe(true);
    }
    expect(events.openStreams()).toBe(0);
  });

  it('ends a wait of a revoked key with UNAUTHENTICATED', async () => {
    const key = await freshKey('revoked-waiter');
    const [server] = servers as [Server];
    const run = await startRun(server, key);
    const asked = await ask<{ requestApproval: { data: { request: { uuid: string } } } }>(
      server,
      ASK,
      { input: { runUuid: run, toolName: 'deploy', server: 'ops', arguments: {}, reason: 'ship' } },
      key,
    );
    const request = asked.data?.requestApproval.data.request.uuid ?? '';
    const waiting = ask(server, WAIT, { r: run, q: request, t: 60_000 }, key);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await revokeByKey(api, key);
    const answer = await waiting;
    expect(answer.status).toBe(401);
    expect(answer.errors?.map((e) => e.extensions?.code)).toEqual(['UNAUTHENTICATED']);
    expect(events.openWaits()).toBe(0);
  });

  it('caps the waits one actor holds (TOO_MANY_WAITS) while another actor still waits', async () => {
    const [server] = servers as [Server];
    const key = await freshKey('many-waits');
    const other = await freshKey('other-waiter');
    const run = await startRun(server, key);
    const asked = await ask<{ requestApproval: { data: { request: { uuid: string } } } }>(
      server,
      ASK,
      { input: { runUuid: run, toolName: 'deploy', server: 'ops', arguments: {}, reason: 'ship' } },
      key,
    );
    const request = asked.data?.requestApproval.data.request.uuid ?? '';
    const controller = new AbortController();
    const hold = () =>
      server.fetch('http://runledger.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query: WAIT, variables: { r: run, q: request, t: 30_000 } }),
        signal: controller.signal,
      });
    const held = [hold(), hold()];
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(events.openWaits()).toBe(2);
    const refused = await ask(server, WAIT, { r: run, q: request, t: 30_000 }, key);
    expect(refused.errors?.map((e) => e.extensions?.code)).toEqual(['TOO_MANY_WAITS']);
    // Another actor is not refused for it (its run is not visible to it: answered as missing, at once).
    const theirs = await ask<{ awaitDecision: { __typename: string } }>(
      server,
      WAIT,
      { r: run, q: request, t: 10 },
      other,
    );
    expect(theirs.errors).toBeUndefined();
    expect(theirs.data?.awaitDecision.__typename).toBe('RequestNotFoundError');
    controller.abort();
    await Promise.allSettled(held);
    await expect.poll(() => events.openWaits()).toBe(0);
  });
});

/** Revokes the key as `keys revoke` does, by its printed prefix. */
async function revokeByKey(api: TestApi, key: string): Promise<void> {
  const revoked = await revokeApiKey(api.db, key.slice(0, 10));
  expect(revoked).toHaveLength(1);
}

describe.each(backendNames)('runs derived from OTLP ids belong to their sender (%s)', (backend) => {
  let api: TestApi;
  let http: Listening;

  beforeAll(async () => {
    api = await openTestApi(backend);
    http = await listen(api.server);
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await api?.dispose();
  });

  /** What anyone could compute before: a hash of the owner's name, the kind and the trace id (both travel). */
  const guessable = (owner: string, traceId: string) => {
    const hex = createHash('sha256')
      .update(`runledger-otlp\u0000${owner}\u0000trace\u0000${traceId}`)
      .digest('hex');
    const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  };
  const START_AS = `mutation ($u: String!, $c: String!) { startRun(input: { uuid: $u, configuration: $c }) { __typename } }`;
  const RUNS = `query ($c: [String!]) { runs(first: 5, filter: { configurations: $c }) {
    edges { node { uuid owner steps(first: 50) { edges { node { sequence } } } } } } }`;

  it('another owner can neither claim the run of a trace first nor learn that it exists', async () => {
    const alice = { actor: 'otel-alice', permissions: ['record', 'read_own_runs'] as const };
    const mallory = { actor: 'otel-mallory', permissions: ['record', 'read_own_runs'] as const };
    const { spans, traceId } = await agentTrace('squat-target');
    const guessed = guessable(alice.actor, traceId);
    // Claimed first under the id anyone could compute: it is only mallory's own run.
    const squat = await api.query<{ startRun: { __typename: string } }>(
      START_AS,
      { u: guessed, c: 'squat' },
      mallory,
    );
    expect(squat.data?.startRun.__typename).toBe('StartRunSuccess');
    const key = await api.keyFor(alice.actor, alice.permissions);
    const sent = await exportSpans('json', spans, {
      url: `${http.base}/v1/traces`,
      headers: { authorization: `Bearer ${key}` },
    });
    expect(sent.code).toBe(0);
    type Runs = {
      runs: { edges: Array<{ node: { uuid: string; owner: string; steps: { edges: unknown[] } } }> };
    };
    const mine = await api.query<Runs>(RUNS, { c: ['squat-target'] }, alice);
    const runs = mine.data?.runs.edges.map((edge) => edge.node) ?? [];
    expect(runs).toHaveLength(1);
    expect(runs[0]?.owner).toBe(alice.actor);
    expect(runs[0]?.uuid).not.toBe(guessed);
    expect(runs[0]?.steps.edges.length).toBeGreaterThan(0);
    const theirs = await api.query<Runs>(RUNS, { c: ['squat'] }, mallory);
    expect(theirs.data?.runs.edges.map((edge) => edge.node.steps.edges.length)).toEqual([0]);
  });
});

describe.each(backendNames.filter((backend) => backend === 'postgres'))(
  'the largest OTLP export it accepts is stored whole (%s)',
  (backend) => {
    let api: TestApi;
    beforeAll(async () => {
      api = await openTestApi(backend);
    }, 60_000);
    afterAll(async () => {
      await api?.dispose();
    });

    it('stores 10,000 spans of one trace (9,999 tool calls under one agent) in one request', async () => {
      const key = await api.keyFor('otel-bulk', ['record', 'read_own_runs']);
      const traceId = 'cd'.repeat(16);
      const start = 1_750_000_000_000_000_000n;
      const spans = Array.from({ length: 10_000 }, (_, i) => ({
        traceId,
        spanId: (i + 1).toString(16).padStart(16, '0'),
        ...(i === 0 ? {} : { parentSpanId: '0000000000000001' }),
        name: i === 0 ? 'invoke_agent bulk' : 'execute_tool lookup',
        startTimeUnixNano: String(start + BigInt(i)),
        endTimeUnixNano: String(start + 1_000_000n + BigInt(i === 0 ? 20_000 : i)),
        attributes: [
          { key: 'gen_ai.operation.name', value: { stringValue: i === 0 ? 'invoke_agent' : 'execute_tool' } },
          ...(i === 0 ? [] : [{ key: 'gen_ai.tool.name', value: { stringValue: 'lookup' } }]),
        ],
      }));
      const response = await api.server.fetch('http://runledger.test/v1/traces', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans }] }] }),
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({});
      const [row] = await api.db
        .select({ n: count() })
        .from(runSteps)
        .innerJoin(runs, eq(runs.id, runSteps.runId))
        .where(eq(runs.owner, 'otel-bulk'));
      expect(row?.n).toBe(9_999);
    }, 60_000);
  },
);
