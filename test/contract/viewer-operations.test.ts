// The web viewer's own operations (web/src/operations.ts), as its build registers them: typed and hashed
// by GraphQL Code Generator, answered by hash by the service that serves the viewer, with trusted
// documents on (beside the manifest the environment names) and off.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type OperationDefinitionNode, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTrustedDocuments } from '../../scripts/trusted-documents.ts';
import type { Permission } from '../../src/domain/permissions.ts';
import { readTrustedDocuments } from '../../src/graphql/trusted-documents.ts';
import { createServer, type Server } from '../../src/server.ts';
import { VIEWER_DOCUMENTS_FILE } from '../../src/viewer.ts';
import { openTestApi, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const root = join(import.meta.dirname, '..', '..');
const VIEWER_SOURCES = [
  join(root, 'web/src/**/*.ts'),
  join(root, 'web/src/**/*.tsx'),
  `!${join(root, 'web/src/gql/**')}`,
];

interface Answer {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

describe.each(backendNames)("the viewer's operations, by hash (%s)", (backend) => {
  let api: TestApi;
  let dir = '';
  /** Hash by operation name, as the viewer sends them. */
  const hashes = new Map<string, string>();
  let trusted: Server;
  let open: Server;

  beforeAll(async () => {
    api = await openTestApi(backend);
    dir = mkdtempSync(join(tmpdir(), 'runledger-viewer-'));
    // The viewer's manifest where the build puts it: beside its files.
    const count = await writeTrustedDocuments(VIEWER_SOURCES, join(dir, VIEWER_DOCUMENTS_FILE));
    expect(count).toBeGreaterThanOrEqual(9);
    for (const [hash, document] of readTrustedDocuments(join(dir, VIEWER_DOCUMENTS_FILE))) {
      const operation = parse(document).definitions.find(
        (d): d is OperationDefinitionNode => d.kind === 'OperationDefinition',
      );
      if (operation?.name) hashes.set(operation.name.value, `sha256:${hash}`);
    }
    const base = { handle: api.database.handle, graphiql: false, mcp: TEST_MCP_SETTINGS, viewer: dir };
    // Trusted documents on, with a manifest that holds none of the viewer's operations.
    trusted = createServer({
      ...base,
      trustedDocuments: new Map([['0'.repeat(64), '{ viewer { actor } }']]),
    });
    open = createServer({ ...base, trustedDocuments: null });
  }, 120_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await api?.dispose();
  });

  async function byHash(
    server: Server,
    name: string,
    variables: Record<string, unknown>,
    permissions?: readonly Permission[],
  ): Promise<Answer & { status: number }> {
    const id = hashes.get(name);
    if (!id) throw new Error(`the viewer has no operation ${name}`);
    const key = await api.keyFor('alice', permissions);
    const response = await server.fetch('http://runledger.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      // As the viewer's client sends them: Apollo's persistedQuery extension, no text.
      body: JSON.stringify({ variables, extensions: { persistedQuery: { version: 1, sha256Hash: id } } }),
    });
    return { status: response.status, ...((await response.json()) as Answer) };
  }

  async function startRun(): Promise<string> {
    const result = await api.query<{ startRun: { data: { uuid: string } } }>(
      'mutation { startRun(input: { configuration: "viewer-ops" }) { ... on StartRunSuccess { data { uuid } } } }',
    );
    return result.data?.startRun.data.uuid ?? '';
  }

  it('answers every query and mutation of the viewer by hash, with trusted documents on and off', async () => {
    const run = await startRun();
    await api.query('mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename } }', {
      input: { runUuid: run, kind: 'LLM', round: 1, durationMs: 5 },
    });
    const since = new Date(Date.now() - 7 * 86_400_000).toISOString();
    const calls: [string, Record<string, unknown>][] = [
      ['ViewerSession', {}],
      [
        'ViewerRunsPage',
        { first: 20, filter: { statuses: ['RUNNING'] }, waiting: { statuses: ['WAITING_FOR_INPUT'] } },
      ],
      ['ViewerRunPage', { uuid: run, locale: 'DE' }],
      ['ViewerTimelineAfter', { uuid: run, locale: 'EN', after: null }],
      ['ViewerServersPage', { since, minCalls: 20, utcOffsetMinutes: 60 }],
      ['ViewerServerTools', { server: 'github', since, utcOffsetMinutes: 0 }],
      ['ViewerRunStats', { since, utcOffsetMinutes: -180 }],
      ['ViewerRunHeaderNow', { uuid: run }],
      ['ViewerRunFilterNames', { since }],
      ['ViewerInbox', {}],
    ];
    for (const server of [trusted, open]) {
      for (const [name, variables] of calls) {
        const answer = await byHash(server, name, variables);
        expect({ name, status: answer.status, errors: answer.errors }).toEqual({
          name,
          status: 200,
          errors: undefined,
        });
      }
    }
    const page = await byHash(trusted, 'ViewerRunPage', { uuid: run, locale: 'DE' });
    expect(page.data?.run).toMatchObject({
      uuid: run,
      timelinePage: { edges: [{ node: { sequence: 1, kind: 'LLM', step: { failureCode: null } } }] },
    });
    // A step in full, its payload asked only of a key that may read it.
    const shown = page.data?.run as
      | { timelinePage: { edges: { node: { step: { id: string } } }[] } }
      | undefined;
    const stepId = shown?.timelinePage.edges[0]?.node.step.id ?? '';
    const step = await byHash(trusted, 'ViewerStepDetail', { id: stepId, payloads: true });
    expect(step).toMatchObject({
      status: 200,
      data: { node: { id: stepId, failureCode: null, payload: {} } },
    });
    expect(step.errors).toBeUndefined();
    // The one mutation: an operator's cancel.
    const cancelled = await byHash(trusted, 'ViewerCancelRun', { uuid: run });
    expect(cancelled.data?.cancelRun).toMatchObject({
      __typename: 'CancelRunSuccess',
      data: { uuid: run, status: 'CANCELLED' },
    });
  });

  it('streams a run by hash (the subscription, over server-sent events)', async () => {
    const run = await startRun();
    const key = await api.keyFor('alice');
    const response = await trusted.fetch('http://runledger.test/graphql', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${key}`,
      },
      body: JSON.stringify({
        variables: { uuid: run, afterSequence: null },
        extensions: { persistedQuery: { version: 1, sha256Hash: hashes.get('ViewerRunEvents') } },
      }),
    });
    expect(response.status).toBe(200);
    const reader = response.body?.getReader();
    let text = '';
    while (!text.includes('"runEvents"')) {
      const chunk = await reader?.read();
      if (!chunk || chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    await reader?.cancel();
    expect(text).toContain(`"uuid":"${run}"`);
  });

  it("keeps the viewer's hashes only: an unknown hash is TRUSTED_DOCUMENT_NOT_FOUND, and text needs manage_keys when trusted documents are on", async () => {
    const key = await api.keyFor('alice', ['read_own_runs']);
    const unknown = await open.fetch('http://runledger.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ extensions: { persistedQuery: { version: 1, sha256Hash: '1'.repeat(64) } } }),
    });
    expect(((await unknown.json()) as Answer).errors?.[0]?.extensions?.code).toBe(
      'TRUSTED_DOCUMENT_NOT_FOUND',
    );
    const asText = (server: Server) =>
      server.fetch('http://runledger.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query: '{ viewer { actor } }' }),
      });
    // Without trusted documents, text is answered as it always was.
    expect(await (await asText(open)).json()).toEqual({ data: { viewer: { actor: 'alice' } } });
    const refused = await asText(trusted);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Answer).errors?.[0]?.extensions?.code).toBe('TRUSTED_DOCUMENTS_ONLY');
  });
});
