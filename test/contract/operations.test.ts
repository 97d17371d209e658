// The client operations in test/contract/operations/ run against the real API, as a frontend sends them:
// first as text, then as trusted documents by hash from the manifest `npm run documents:manifest` writes
// (GraphQL Code Generator's client preset, persistedDocuments). One of them pages a run list to its end.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ExecutionResult, type OperationDefinitionNode, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runs } from '../../drizzle/schema.ts';
import { writeTrustedDocuments } from '../../scripts/trusted-documents.ts';
import type { Permission } from '../../src/domain/permissions.ts';
import { readTrustedDocuments } from '../../src/graphql/trusted-documents.ts';
import { createServer, type Server } from '../../src/server.ts';
import { type AskAs, openTestApi, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const operationsDir = join(import.meta.dirname, 'operations');

interface Registered {
  hash: string;
  document: string;
}

/** The manifest the npm script writes, by operation name. */
async function manifest(dir: string): Promise<Map<string, Registered>> {
  const file = join(dir, 'trusted-documents.json');
  await writeTrustedDocuments([join(operationsDir, '*.graphql')], file);
  const byName = new Map<string, Registered>();
  for (const [hash, document] of readTrustedDocuments(file)) {
    const operation = parse(document).definitions.find(
      (d): d is OperationDefinitionNode => d.kind === 'OperationDefinition',
    );
    if (operation?.name) byName.set(operation.name.value, { hash: `sha256:${hash}`, document });
  }
  return byName;
}

type Data = Record<string, Record<string, unknown> & { __typename?: string }>;

describe.each(backendNames)('the client operations, run as a frontend runs them (%s)', (backend) => {
  let api: TestApi;
  let dir = '';
  let documents = new Map<string, Registered>();
  let trusted: Server;

  beforeAll(async () => {
    api = await openTestApi(backend);
    dir = mkdtempSync(join(tmpdir(), 'runledger-trusted-'));
    documents = await manifest(dir);
    trusted = createServer({
      handle: api.database.handle,
      graphiql: false,
      mcp: TEST_MCP_SETTINGS,
      trustedDocuments: readTrustedDocuments(join(dir, 'trusted-documents.json')),
    });
  }, 120_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await api?.dispose();
  });

  /** Sends an operation of test/contract/operations as text (with the fragments it uses). */
  async function send(name: string, variables: Record<string, unknown> = {}, as?: AskAs) {
    const registered = documents.get(name);
    if (!registered) throw new Error(`no operation ${name}`);
    return api.query<Data>(registered.document, variables, as);
  }

  /** Sends a registered operation by its hash only, as a trusted-documents client does. */
  async function sendById(
    id: string,
    variables: Record<string, unknown>,
    permissions?: readonly Permission[],
  ) {
    const key = await api.keyFor('alice', permissions);
    const response = await trusted.fetch('http://runledger.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ documentId: id, variables }),
    });
    return { status: response.status, ...((await response.json()) as ExecutionResult<Data>) };
  }

  const start = async (configuration: string, as?: AskAs) => {
    const result = await send('StartRun', { input: { configuration } }, as);
    expect(result.data?.startRun?.__typename).toBe('StartRunSuccess');
    return (result.data?.startRun?.data as { uuid: string } | undefined)?.uuid ?? '';
  };

  it('covers every query and mutation of the schema', async () => {
    const { schema } = await import('../../src/graphql/schema.ts');
    const asked = new Set<string>();
    for (const { document } of documents.values()) {
      for (const definition of parse(document).definitions) {
        if (definition.kind !== 'OperationDefinition') continue;
        for (const selection of definition.selectionSet.selections) {
          if (selection.kind === 'Field') asked.add(`${definition.operation}.${selection.name.value}`);
        }
      }
    }
    const fields = [
      ...Object.keys(schema.getQueryType()?.getFields() ?? {}).map((f) => `query.${f}`),
      ...Object.keys(schema.getMutationType()?.getFields() ?? {}).map((f) => `mutation.${f}`),
    ];
    expect(fields.filter((field) => !asked.has(field))).toEqual([]);
  });

  it('a human in the loop with the client documents: ask, wait without polling, decide, answer, refuse', async () => {
    const run = await start(`hitl-${backend}`);
    const carol: AskAs = { actor: 'carol', permissions: ['approve_runs', 'read_all_runs'] };
    type Recorded = {
      __typename: string;
      code?: string;
      data?: { request: { uuid: string; state: string } };
    };
    const asked = (
      await send('RequestApproval', {
        input: { runUuid: run, toolName: 'deploy', arguments: { env: 'prod' } },
      })
    ).data?.requestApproval as Recorded;
    expect(asked.__typename).toBe('RequestRecordedSuccess');
    const id = asked.data?.request.uuid ?? '';
    const inbox = (await send('OpenRequests', { first: 50 }, carol)).data?.openRequests as unknown as Array<{
      uuid: string;
      arguments: unknown;
    }>;
    expect(inbox.find((request) => request.uuid === id)?.arguments).toEqual({ env: 'prod' });
    // The agent waits; carol decides meanwhile.
    const waiting = send('AwaitDecision', { runUuid: run, request: id, timeoutMs: 10_000 });
    const own = (await send('DecideApproval', { input: { runUuid: run, request: id, decision: 'APPROVE' } }))
      .data?.decideApproval as Recorded;
    expect(own.code).toBe('FOUR_EYES_REQUIRED');
    const decided = (
      await send('DecideApproval', { input: { runUuid: run, request: id, decision: 'APPROVE' } }, carol)
    ).data?.decideApproval as Recorded;
    expect(decided.data?.request.state).toBe('APPROVED');
    const answered = await waiting;
    expect((answered.data?.awaitDecision as { state: string } | undefined)?.state).toBe('APPROVED');

    const input = (
      await send('RequestInput', {
        input: {
          runUuid: run,
          prompt: 'Branch?',
          schema: { type: 'object', properties: { branch: { type: 'string' } }, required: ['branch'] },
        },
      })
    ).data?.requestInput as Recorded;
    const request = input.data?.request.uuid ?? '';
    const wrong = (
      await send('ProvideInput', { input: { runUuid: run, request, values: { branch: 7 } } }, carol)
    ).data?.provideInput as Recorded;
    expect(wrong.code).toBe('INPUT_VALUES_INVALID');
    await send('ProvideInput', { input: { runUuid: run, request, values: { branch: 'main' } } }, carol);
    const read = (await send('HumanRequest', { uuid: request })).data?.humanRequest as {
      state: string;
      values: unknown;
    };
    expect(read).toMatchObject({ state: 'ANSWERED', values: { branch: 'main' } });
  });

  it('manages keys with the client documents: make, list, revoke; a key without manage_keys is FORBIDDEN', async () => {
    const admin: AskAs = { actor: 'key-admin', permissions: ['manage_keys'] };
    const made = await send(
      'CreateApiKey',
      { input: { actor: `bot-${backend}`, permissions: ['RECORD'] } },
      admin,
    );
    const answer = made.data?.createApiKey as {
      __typename: string;
      data: { key: string; apiKey: { id: string } };
    };
    expect(answer.__typename).toBe('CreateApiKeySuccess');
    const listed = (await send('ApiKeys', {}, admin)).data?.apiKeys as unknown as Array<{ id: string }>;
    expect(listed.map((k) => k.id)).toContain(answer.data.apiKey.id);
    expect(
      (await send('RevokeApiKey', { id: answer.data.apiKey.id }, admin)).data?.revokeApiKey,
    ).toMatchObject({
      __typename: 'RevokeApiKeySuccess',
      data: { id: answer.data.apiKey.id },
    });
    const refused = await send(
      'CreateApiKey',
      { input: { actor: 'x', permissions: ['RECORD'] } },
      { actor: 'reader', permissions: ['read_all_runs'] },
    );
    expect(refused.data?.createApiKey).toMatchObject({
      __typename: 'ForbiddenError',
      permission: 'MANAGE_KEYS',
    });
  });

  it('pages a run list to its end with RunListPage, using totalCount and pageInfo', async () => {
    const configuration = `paging-${backend}`;
    const made: string[] = [];
    for (let i = 0; i < 7; i += 1) made.push(await start(configuration));
    // Neither another configuration nor another actor's run is counted or listed.
    await start(`${configuration}-other`);
    await start(configuration, { actor: 'bob', permissions: ['record', 'read_own_runs'] });
    const seen: string[] = [];
    const totals = new Set<unknown>();
    let after: unknown = null;
    let pages = 0;
    for (;;) {
      const page = await send(
        'RunListPage',
        { first: 3, after, filter: { configurations: [configuration] } },
        { permissions: ['read_own_runs'] },
      );
      expect(page.errors).toBeUndefined();
      const connection = page.data?.runs as unknown as {
        edges: Array<{ node: { uuid: string } }>;
        pageInfo: { hasNextPage: boolean; endCursor: string | null };
        totalCount: number;
      };
      pages += 1;
      totals.add(connection.totalCount);
      seen.push(...connection.edges.map((edge) => edge.node.uuid));
      if (!connection.pageInfo.hasNextPage) break;
      expect(seen.length).toBeLessThan(connection.totalCount);
      after = connection.pageInfo.endCursor;
    }
    expect([...totals]).toEqual([7]);
    expect(pages).toBe(3);
    // Newest first, none missing, none twice.
    expect(seen).toEqual([...made].reverse());
  });

  it('runs every mutation and query document and narrows each answer on __typename', async () => {
    const run = await start('operations');
    const recorded = async (name: string, input: Record<string, unknown>) => {
      const result = await send(name, { input: { runUuid: run, ...input } });
      expect(result.errors).toBeUndefined();
      const answer = Object.values(result.data ?? {})[0];
      expect(answer?.__typename, JSON.stringify(answer)).toBe('RecordedStepsSuccess');
      return answer?.data as { steps: Array<{ id: string; sequence: number; outcome: string | null }> };
    };
    const call = { round: 1, durationMs: 5, toolName: 'search', server: 'github' };
    await recorded('RecordToolExecution', { ...call, result: 'ok', isError: false });
    await recorded('RecordToolResult', { ...call, result: { content: 'x', outcome: 'CANCELLED' } });
    await recorded('RecordStep', {
      kind: 'LLM',
      round: 1,
      durationMs: 9,
      model: { model: 'm', promptTokens: 3 },
    });
    const batch = await recorded('RecordSteps', {
      steps: [{ kind: 'TOOL', ...call, isError: true, content: 'no' }],
    });
    expect(batch.steps.map((s) => s.outcome)).toEqual(['FAILED']);
    const called = await send('CallTool', { input: { runUuid: run, server: 'nowhere', toolName: 'echo' } });
    expect(called.data?.callTool).toMatchObject({
      __typename: 'InvalidInputError',
      code: 'SERVER_NOT_FOUND',
    });

    const detail = await send('RunDetail', { uuid: run, locale: 'DE' });
    const steps =
      (detail.data?.run as { steps: { edges: Array<{ node: { id: string } }> } } | undefined)?.steps.edges ??
      [];
    expect(steps).toHaveLength(4);
    const nodes = await send('NodesByIds', { ids: [steps[0]?.node.id] });
    expect((nodes.data as unknown as { nodes: Array<{ __typename: string }> }).nodes).toMatchObject([
      { __typename: 'RunStep', sequence: 1, outcome: 'OK' },
    ]);
    expect((await send('NodeById', { id: steps[1]?.node.id })).data?.node).toMatchObject({
      __typename: 'RunStep',
      outcome: 'CANCELLED',
    });
    expect((await send('RunsWithCancelledCalls')).errors).toBeUndefined();
    expect(
      (await send('FlakyServers', { since: '2026-01-01T00:00:00Z', minCalls: 1 })).errors,
    ).toBeUndefined();
    expect((await send('Viewer')).data?.viewer).toMatchObject({ actor: 'alice' });

    const finished = await send('FinishRun', {
      input: { uuid: run, status: 'COMPLETED', terminationReason: 'COMPLETED' },
    });
    expect(finished.data?.finishRun).toMatchObject({ __typename: 'FinishRunSuccess' });
    const stats = await send('RunStats', {
      groupBy: ['STATUS', 'TERMINATION_REASON'],
      bucket: 'DAY',
      filter: { configurations: ['operations'] },
      utcOffsetMinutes: 60,
    });
    expect(stats.errors).toBeUndefined();
    const series = (stats.data?.runStats as { groups: Array<{ runs: number }> } | undefined)?.groups ?? [];
    expect(series.filter((group) => group.runs > 0)).toEqual([
      expect.objectContaining({ status: 'COMPLETED', terminationReason: 'COMPLETED', runs: 1 }),
    ]);
    const cancelled = await send('CancelRun', { input: { uuid: run } });
    expect(cancelled.data?.cancelRun).toEqual({
      __typename: 'RunTerminalError',
      code: 'RUN_TERMINAL',
      message: expect.any(String),
      status: 'COMPLETED',
    });

    const server = {
      identifier: `ops-${backend}`,
      transport: 'STREAMABLE_HTTP',
      url: 'http://127.0.0.1:9/mcp',
    };
    expect((await send('RegisterMcpServer', { input: server })).data?.registerMcpServer).toMatchObject({
      __typename: 'RegisterMcpServerSuccess',
    });
    const updated = await send('UpdateMcpServer', { input: { ...server, url: 'http://127.0.0.1:10/mcp' } });
    expect(updated.data?.updateMcpServer).toMatchObject({
      __typename: 'UpdateMcpServerSuccess',
      data: { identifier: server.identifier, url: 'http://127.0.0.1:10/mcp' },
    });
    const listed = await send('McpServers');
    expect(JSON.stringify(listed.data)).toContain(server.identifier);
    expect((await send('RemoveMcpServer', { identifier: server.identifier })).data?.removeMcpServer).toEqual({
      __typename: 'RemoveMcpServerSuccess',
      data: { identifier: server.identifier },
    });
  });

  describe('as trusted documents', () => {
    it('answers a registered operation by its hash, a query and a mutation alike', async () => {
      const viewer = documents.get('Viewer');
      const startRun = documents.get('StartRun');
      expect(viewer && startRun).toBeTruthy();
      const asked = await sendById(viewer?.hash ?? '', {});
      expect(asked.status).toBe(200);
      expect(asked.data?.viewer).toMatchObject({ actor: 'alice' });
      const started = await sendById(startRun?.hash ?? '', { input: { configuration: 'trusted' } }, [
        'record',
      ]);
      expect(started.data?.startRun).toMatchObject({
        __typename: 'StartRunSuccess',
        data: { status: 'RUNNING' },
      });
    });

    it('refuses an unknown hash with TRUSTED_DOCUMENT_NOT_FOUND, running nothing', async () => {
      const before = await api.db.$count(runs);
      const result = await sendById(`sha256:${'0'.repeat(64)}`, { input: { configuration: 'x' } });
      expect(result.status).toBe(400);
      expect(result.errors?.map((e) => e.extensions?.code)).toEqual(['TRUSTED_DOCUMENT_NOT_FOUND']);
      expect(result.data).toBeUndefined();
      expect(await api.db.$count(runs)).toBe(before);
    });

    it('refuses a query sent as text without manage_keys (TRUSTED_DOCUMENTS_ONLY), writing nothing', async () => {
      const before = await api.db.$count(runs);
      const refused = await api.query(
        'mutation { startRun(input: { configuration: "ad-hoc" }) { __typename } }',
        {},
        { permissions: ['record', 'read_own_runs'], server: trusted },
      );
      expect(refused.status).toBe(403);
      expect(refused.errors?.map((e) => e.extensions?.code)).toEqual(['TRUSTED_DOCUMENTS_ONLY']);
      expect(refused.data).toBeUndefined();
      expect(await api.db.$count(runs)).toBe(before);
      // Even the registered text, sent as text: only its hash is trusted.
      const asText = await api.query(
        documents.get('Viewer')?.document ?? '',
        {},
        {
          permissions: ['read_own_runs'],
          server: trusted,
        },
      );
      expect(asText.errors?.map((e) => e.extensions?.code)).toEqual(['TRUSTED_DOCUMENTS_ONLY']);
    });

    it('lets a key with manage_keys send queries as text', async () => {
      const result = await api.query(
        '{ viewer { actor permissions } }',
        {},
        {
          permissions: ['manage_keys'],
          server: trusted,
        },
      );
      expect(result.errors).toBeUndefined();
      expect(result.data).toEqual({ viewer: { actor: 'alice', permissions: ['MANAGE_KEYS'] } });
    });

    it("reads Apollo's persistedQuery hash too, and refuses a request with neither (TRUSTED_DOCUMENT_ID_MISSING)", async () => {
      const key = await api.keyFor('alice', ['read_own_runs']);
      const post = async (body: Record<string, unknown>) => {
        const response = await trusted.fetch('http://runledger.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify(body),
        });
        return { status: response.status, ...((await response.json()) as ExecutionResult<Data>) };
      };
      const hash = (documents.get('Viewer')?.hash ?? '').replace('sha256:', '');
      const apollo = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: hash } } });
      expect(apollo.data?.viewer).toEqual({ actor: 'alice', permissions: ['READ_OWN_RUNS'] });
      const neither = await post({ variables: {} });
      expect(neither.status).toBe(400);
      expect(neither.errors?.map((e) => e.extensions?.code)).toEqual(['TRUSTED_DOCUMENT_ID_MISSING']);
    });

    it('refuses a manifest that is not a JSON object of hash -> document, naming the variable', () => {
      const write = (name: string, text: string) => {
        const file = join(dir, name);
        writeFileSync(file, text);
        return file;
      };
      for (const [name, text] of [
        ['not-json.json', '{'],
        ['a-list.json', '["query { viewer { actor } }"]'],
        ['not-a-hash.json', '{ "viewer": "query { viewer { actor } }" }'],
        ['not-a-document.json', `{ "${'a'.repeat(64)}": 1 }`],
      ] as const) {
        expect(() => readTrustedDocuments(write(name, text))).toThrow(/^RUNLEDGER_TRUSTED_DOCUMENTS: /);
      }
    });

    it('still asks for a key first: no key is 401 UNAUTHENTICATED, by hash or as text', async () => {
      const ask = async (body: Record<string, unknown>) => {
        const response = await trusted.fetch('http://runledger.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const answer = (await response.json()) as ExecutionResult;
        return [response.status, answer.errors?.[0]?.extensions?.code];
      };
      expect(await ask({ query: '{ viewer { actor } }' })).toEqual([401, 'UNAUTHENTICATED']);
      expect(await ask({ documentId: documents.get('Viewer')?.hash })).toEqual([401, 'UNAUTHENTICATED']);
    });
  });
});
