// The GraphQL clients frontend teams reach for, with their default settings, against the service
// over HTTP: urql (which sends queries as GET), Apollo Client and graphql-request (POST, JSON).
// Each sends the key in the Authorization header, which no browser sends across origins without a
// CORS preflight: that header is what protects a GET from a forged cross-site request here, as
// keys never travel in cookies (docs/operating.md).
import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client/core';
import { Client, cacheExchange, fetchExchange } from '@urql/core';
import { GraphQLClient } from 'graphql-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestApi, type TestApi } from '../support/api.ts';
import { type Listening, listen } from '../support/http.ts';

const RUNS = `query Runs { runs(first: 1) { totalCount } }`;
const START = `mutation Start($configuration: String!) {
  startRun(input: { configuration: $configuration }) { __typename ... on StartRunSuccess { data { uuid } } }
}`;

let api: TestApi;
let http: Listening;
let key = '';
const url = () => `${http.base}/graphql`;

beforeAll(async () => {
  api = await openTestApi('pglite');
  http = await listen(api.server);
  key = await api.keyFor('frontend', ['record', 'read_own_runs']);
});

afterAll(async () => {
  await http?.close();
  await api?.dispose();
});

describe('the GraphQL clients of the ecosystem, as they come', () => {
  it('urql 6 (queries as GET within the URL limit, mutations as POST)', async () => {
    const sent: string[] = [];
    const client = new Client({
      url: url(),
      exchanges: [cacheExchange, fetchExchange],
      fetchOptions: { headers: { authorization: `Bearer ${key}` } },
      fetch: (input, init) => {
        sent.push(init?.method ?? 'GET');
        return fetch(input, init);
      },
    });
    const runs = await client.query(RUNS, {}).toPromise();
    expect(runs.error).toBeUndefined();
    expect(runs.data).toMatchObject({ runs: { totalCount: expect.any(Number) } });
    const started = await client.mutation(START, { configuration: 'urql' }).toPromise();
    expect(started.error).toBeUndefined();
    expect(started.data?.startRun.__typename).toBe('StartRunSuccess');
    expect(sent).toEqual(['GET', 'POST']);
  });

  it('Apollo Client 4 (HttpLink, POST)', async () => {
    const client = new ApolloClient({
      link: new HttpLink({ uri: url(), headers: { authorization: `Bearer ${key}` } }),
      cache: new InMemoryCache(),
    });
    const runs = await client.query<{ runs: { totalCount: number } }>({ query: gql(RUNS) });
    expect(runs.data?.runs.totalCount).toEqual(expect.any(Number));
    const started = await client.mutate<{ startRun: { __typename: string } }>({
      mutation: gql(START),
      variables: { configuration: 'apollo' },
    });
    expect(started.data?.startRun.__typename).toBe('StartRunSuccess');
  });

  it('graphql-request 7 (POST)', async () => {
    const client = new GraphQLClient(url(), { headers: { authorization: `Bearer ${key}` } });
    const runs = await client.request<{ runs: { totalCount: number } }>(RUNS);
    expect(runs.runs.totalCount).toEqual(expect.any(Number));
    const started = await client.request<{ startRun: { __typename: string } }>(START, {
      configuration: 'graphql-request',
    });
    expect(started.startRun.__typename).toBe('StartRunSuccess');
  });
});

describe('a forged cross-site request', () => {
  const get = (headers: Record<string, string>) =>
    fetch(`${url()}?query=${encodeURIComponent(RUNS)}`, { headers });

  it('a simple GET (no key, a cookie at most) is refused before anything is read: UNAUTHENTICATED', async () => {
    const response = await get({ cookie: `key=${key}` });
    expect(response.status).toBe(401);
    const body = (await response.json()) as { errors: Array<{ extensions: { code: string } }> };
    expect(body.errors[0]?.extensions.code).toBe('UNAUTHENTICATED');
  });

  it('a GET with the key in its Authorization header needs no other header (a browser preflights it)', async () => {
    const response = await get({ authorization: `Bearer ${key}` });
    expect(response.status).toBe(200);
  });

  it('a mutation is never run by GET', async () => {
    const response = await fetch(
      `${url()}?query=${encodeURIComponent(START)}&variables=${encodeURIComponent('{"configuration":"get"}')}`,
      { headers: { authorization: `Bearer ${key}` } },
    );
    expect(response.status).toBe(405);
    const runs = await api.query<{ runs: { totalCount: number } }>(
      `{ runs(first: 1, filter: { configurations: ["get"] }) { totalCount } }`,
      {},
      { actor: 'frontend', permissions: ['record', 'read_own_runs'] },
    );
    expect(runs.data?.runs.totalCount).toBe(0);
  });
});
