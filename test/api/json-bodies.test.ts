import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runs } from '../../drizzle/schema.ts';
import { isBearerRemembered } from '../../src/db/api-keys.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { codesIn, type Listening, listen, RawConnection } from '../support/http.ts';

/**
 * A GraphQL request posted as JSON with a declared length, with a key an earlier request read, is read and
 * parsed by the transport before the GraphQL server sees it; one sent chunked (no declared length) is read
 * by the GraphQL server itself, as before. Whatever the body, both framings get the same answer.
 */
describe.each(backendNames)('GraphQL bodies read by the transport (%s)', (backend) => {
  let api: TestApi;
  let server: Listening;
  let key = '';
  /** Whether each request reached the GraphQL server with its body read by the transport. */
  const readFirst: boolean[] = [];

  beforeAll(async () => {
    api = await openTestApi(backend);
    server = await listen(
      (request: IncomingMessage, response: ServerResponse) => {
        readFirst.push('body' in request);
        void api.server(request, response);
      },
      {},
      (authorization) => isBearerRemembered(api.database.handle.db, authorization),
    );
    key = await api.keyFor();
  });
  afterAll(async () => {
    await server?.close();
    await api?.dispose();
  });

  /** The answer to a body sent with Content-Length, or chunked (a stream of unknown length). */
  async function post(
    body: string | Uint8Array,
    framing: 'declared' | 'chunked',
    path = '/graphql',
    extra: Record<string, string> = {},
  ) {
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...extra };
    const response = await fetch(
      `${server.base}${path}`,
      framing === 'declared'
        ? { method: 'POST', headers, body: body as BodyInit }
        : ({
            method: 'POST',
            headers,
            body: new ReadableStream({
              start(controller) {
                controller.enqueue(typeof body === 'string' ? new TextEncoder().encode(body) : body);
                controller.close();
              },
            }),
            duplex: 'half',
          } as RequestInit),
    );
    return { status: response.status, body: await response.text() };
  }

  const QUERY = JSON.stringify({ query: '{ runs(first: 1) { edges { cursor } } }' });
  it.each([
    ['a query', QUERY],
    [
      'a mutation with variables',
      JSON.stringify({
        query: 'mutation ($c: String!) { startRun(input: { configuration: $c }) { __typename } }',
        variables: { c: 'json-bodies' },
      }),
    ],
    ['an empty object', '{}'],
    ['an array', '[]'],
    ['null', 'null'],
    ['a number', '42'],
    ['malformed JSON', '{"query": '],
    ['an empty body', ''],
    ['a query with an unknown field', JSON.stringify({ query: '{ nothing }' })],
    ['variables that are not an object', JSON.stringify({ query: '{ __typename }', variables: 'x' })],
  ])('answers %s the same, its length declared or not', async (_name, body) => {
    const declared = await post(body, 'declared');
    const chunked = await post(body, 'chunked');
    // A run started twice has two ids: compare what does not differ between them.
    const shape = (answer: { status: number; body: string }) => ({
      status: answer.status,
      body: answer.body.replace(/"[0-9a-f-]{36}"/g, '"<uuid>"'),
    });
    expect(shape(declared)).toEqual(shape(chunked));
  });

  it('reads first the body of a key an earlier request read, never that of a key not read or of none', async () => {
    await post(QUERY, 'declared');
    readFirst.length = 0;
    expect((await post(QUERY, 'declared')).status).toBe(200);
    expect((await post(QUERY, 'chunked')).status).toBe(200);
    const unknown = await post(QUERY, 'declared', '/graphql', { authorization: 'Bearer rl_not_a_key' });
    const none = await post(QUERY, 'declared', '/graphql', { authorization: '' });
    expect([unknown.status, none.status]).toEqual([401, 401]);
    expect(readFirst).toEqual([true, false, false, false]);
  });

  it('answers a request without a key before its body has come, and stores nothing', async () => {
    const before = await api.database.handle.db.$count(runs);
    const connection = await RawConnection.open(server.port);
    try {
      // A body of 10 MB declared, its first bytes sent, the rest never: the key is read first.
      await connection.write(
        `POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n{"query":"mutation { startRun(`,
      );
      await connection.waitAnswer(5_000);
      const [answer] = connection.answers();
      expect([answer?.status, ...codesIn(answer?.body ?? '')]).toEqual([401, 'UNAUTHENTICATED']);
    } finally {
      connection.destroy();
    }
    expect(await api.database.handle.db.$count(runs)).toBe(before);
  });

  it('stores what a recording request sent with a declared length says, as one sent chunked', async () => {
    const before = await api.database.handle.db.$count(runs);
    const start = JSON.stringify({
      query: 'mutation { startRun(input: { configuration: "json-bodies-count" }) { __typename } }',
    });
    expect((await post(start, 'declared')).body).toContain('StartRunSuccess');
    expect((await post(start, 'chunked')).body).toContain('StartRunSuccess');
    expect(await api.database.handle.db.$count(runs)).toBe(before + 2);
  });

  it('leaves a compressed body to the GraphQL server (which takes none), answered the same either way', async () => {
    const gzipped = gzipSync(QUERY);
    const declared = await post(gzipped, 'declared', '/graphql', { 'content-encoding': 'gzip' });
    expect(await post(gzipped, 'chunked', '/graphql', { 'content-encoding': 'gzip' })).toEqual(declared);
  });

  it('leaves a body posted elsewhere to its handler, answered the same either way', async () => {
    const empty = JSON.stringify({ resourceSpans: [] });
    const declared = await post(empty, 'declared', '/v1/traces');
    expect(declared.status).toBe(200);
    expect(await post(empty, 'chunked', '/v1/traces')).toEqual(declared);
  });
});
