// The contract as a frontend uses it: one error shape per kind of failure (every refusal a client can act
// on in a mutation is a member of its result union), what a screen needs (viewer, totalCount, McpServer as
// a node), and cursors that belong to one filter.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpServers, runSteps, runs } from '../../drizzle/schema.ts';
import type { Permission } from '../../src/domain/permissions.ts';
import { type AskAs, openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const OWN: Permission[] = ['read_own_runs', 'record', 'cancel_own_runs'];
const alice: AskAs = { actor: 'alice', permissions: OWN };
const bob: AskAs = { actor: 'bob', permissions: OWN };
const auditor: AskAs = { actor: 'auditor', permissions: ['read_all_runs'] };
/** A key that may do nothing but read its own (no) runs. */
const reader: AskAs = { actor: 'reader', permissions: ['read_own_runs'] };
const REFUSAL =
  '__typename ... on Error { code } ... on ForbiddenError { permission } ... on InvalidInputError { field }';

describe.each(backendNames)('the contract a frontend relies on (%s)', (backend) => {
  let api: TestApi;

  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());
  rollbackEach(() => api);

  const start = async (as: AskAs, configuration = 'shape') => {
    const result = await api.query<{ startRun: { data?: { uuid: string } } }>(
      'mutation ($c: String!) { startRun(input: { configuration: $c }) { ... on StartRunSuccess { data { uuid } } } }',
      { c: configuration },
      as,
    );
    return result.data?.startRun.data?.uuid ?? '';
  };
  const written = async () => ({
    runs: await api.db.select().from(runs),
    steps: await api.db.select().from(runSteps),
    servers: await api.db.select().from(mcpServers),
  });

  describe('one error shape per kind of failure', () => {
    it('answers a missing permission in every mutation with a ForbiddenError member naming it, writing nothing', async () => {
      const run = await start(alice);
      const server = '{ identifier: "fs", transport: STDIO, command: "node" }';
      const call = `runUuid: "${run}", round: 1, durationMs: 1, toolName: "t"`;
      const mutations: Array<[string, string, string]> = [
        ['startRun', 'startRun(input: { configuration: "x" })', 'RECORD'],
        [
          'recordToolExecution',
          `recordToolExecution(input: { ${call}, result: "r", isError: false })`,
          'RECORD',
        ],
        [
          'recordToolResult',
          `recordToolResult(input: { ${call}, result: { content: "r", outcome: OK } })`,
          'RECORD',
        ],
        [
          'recordStep',
          `recordStep(input: { runUuid: "${run}", kind: LLM, round: 1, durationMs: 1 })`,
          'RECORD',
        ],
        [
          'recordSteps',
          `recordSteps(input: { runUuid: "${run}", steps: [{ kind: LLM, round: 1, durationMs: 1 }] })`,
          'RECORD',
        ],
        ['callTool', `callTool(input: { runUuid: "${run}", server: "fs", toolName: "t" })`, 'RECORD'],
        [
          'finishRun',
          `finishRun(input: { uuid: "${run}", status: COMPLETED, terminationReason: COMPLETED })`,
          'RECORD',
        ],
        ['cancelRun', `cancelRun(input: { uuid: "${run}" })`, 'CANCEL_OWN_RUNS'],
        ['registerMcpServer', `registerMcpServer(input: ${server})`, 'MANAGE_SERVERS'],
        ['updateMcpServer', `updateMcpServer(input: ${server})`, 'MANAGE_SERVERS'],
        ['removeMcpServer', 'removeMcpServer(identifier: "fs")', 'MANAGE_SERVERS'],
      ];
      const before = await written();
      for (const [name, field, permission] of mutations) {
        const result = await api.query(`mutation { ${field} { ${REFUSAL} } }`, {}, reader);
        expect(result.errors, name).toBeUndefined();
        expect(result.status).toBe(200);
        expect(result.data, name).toEqual({
          [name]: { __typename: 'ForbiddenError', code: 'FORBIDDEN', permission },
        });
      }
      expect(await written()).toEqual(before);
    });

    it('answers a malformed UUID in a mutation with an InvalidInputError member, and in a query with BAD_USER_INPUT', async () => {
      const before = await written();
      for (const [name, field, blamed] of [
        ['cancelRun', 'cancelRun(input: { uuid: "not-a-uuid" })', 'uuid'],
        [
          'finishRun',
          'finishRun(input: { uuid: "not-a-uuid", status: FAILED, terminationReason: PROVIDER_FAILED })',
          'uuid',
        ],
        [
          'recordStep',
          'recordStep(input: { runUuid: "not-a-uuid", kind: LLM, round: 1, durationMs: 1 })',
          'runUuid',
        ],
        ['startRun', 'startRun(input: { configuration: "x", uuid: "not-a-uuid" })', 'uuid'],
      ] as const) {
        const result = await api.query(`mutation { ${field} { ${REFUSAL} } }`, {}, alice);
        expect(result.errors, name).toBeUndefined();
        expect(result.data, name).toEqual({
          [name]: { __typename: 'InvalidInputError', code: 'VALUE_INVALID', field: blamed },
        });
      }
      expect(await written()).toEqual(before);
      // A query has no union: a malformed argument is a top-level BAD_USER_INPUT naming it.
      const read = await api.query('{ run(uuid: "not-a-uuid") { uuid } }', {}, alice);
      expect(read.errors?.map((e) => [e.extensions?.code, e.extensions?.field])).toEqual([
        ['BAD_USER_INPUT', 'uuid'],
      ]);
    });

    it('says a terminal run is terminal with its RunStatus, and changes nothing', async () => {
      const run = await start(alice);
      const cancel = `mutation ($u: String!) { cancelRun(input: { uuid: $u }) {
        __typename ... on RunTerminalError { code status runUuid } } }`;
      expect((await api.query(cancel, { u: run }, alice)).data).toEqual({
        cancelRun: { __typename: 'CancelRunSuccess' },
      });
      const before = await written();
      expect((await api.query(cancel, { u: run }, alice)).data).toEqual({
        cancelRun: {
          __typename: 'RunTerminalError',
          code: 'RUN_TERMINAL',
          status: 'CANCELLED',
          runUuid: run,
        },
      });
      expect(await written()).toEqual(before);
    });
  });

  describe('what a screen needs', () => {
    it('tells the viewer its actor and its permissions, as enum values in a fixed order', async () => {
      const viewer = '{ viewer { actor permissions } }';
      expect((await api.query(viewer, {}, alice)).data).toEqual({
        viewer: { actor: 'alice', permissions: ['READ_OWN_RUNS', 'RECORD', 'CANCEL_OWN_RUNS'] },
      });
      expect(
        (await api.query(viewer, {}, { actor: 'ops', permissions: ['manage_servers', 'read_all_runs'] }))
          .data,
      ).toEqual({
        viewer: { actor: 'ops', permissions: ['READ_ALL_RUNS', 'MANAGE_SERVERS'] },
      });
    });

    it('counts a run list under its filter and the caller’s visibility, the same on every page', async () => {
      for (let i = 0; i < 3; i += 1) await start(alice, 'counted');
      await start(alice, 'elsewhere');
      await start(bob, 'counted');
      const list = `query ($f: RunFilter, $after: String) {
        runs(first: 2, filter: $f, after: $after) { totalCount edges { node { uuid } } pageInfo { endCursor } } }`;
      type Page = { runs: { totalCount: number; edges: unknown[]; pageInfo: { endCursor: string } } };
      const counted = { configurations: ['counted'] };
      const first = await api.query<Page>(list, { f: counted }, alice);
      expect(first.data?.runs).toMatchObject({ totalCount: 3 });
      expect(first.data?.runs.edges).toHaveLength(2);
      const second = await api.query<Page>(
        list,
        { f: counted, after: first.data?.runs.pageInfo.endCursor },
        alice,
      );
      expect(second.data?.runs.totalCount).toBe(3);
      expect(second.data?.runs.edges).toHaveLength(1);
      expect((await api.query<Page>(list, { f: counted }, auditor)).data?.runs.totalCount).toBe(4);
      // Asking for another actor's runs counts none of them, as it lists none.
      expect((await api.query<Page>(list, { f: { owners: ['bob'] } }, alice)).data?.runs.totalCount).toBe(0);
      expect(
        (await api.query<Page>(list, {}, { actor: 'writer', permissions: ['record'] })).data?.runs,
      ).toMatchObject({
        totalCount: 0,
        edges: [],
      });
    });

    it('resolves an MCP server by its global id for whoever may list servers, and null for anyone else', async () => {
      const admin: AskAs = { actor: 'admin' };
      const registered = await api.query<{ registerMcpServer: { data: { id: string } } }>(
        'mutation { registerMcpServer(input: { identifier: "fs", transport: STREAMABLE_HTTP, url: "http://127.0.0.1:9/mcp" }) { __typename ... on RegisterMcpServerSuccess { data { id } } } }',
        {},
        admin,
      );
      const id = registered.data?.registerMcpServer.data.id ?? '';
      expect(Buffer.from(id, 'base64url').toString()).toBe('McpServer:fs');
      const node = `query ($id: ID!) { node(id: $id) { __typename id ... on McpServer { identifier transport } } }`;
      expect((await api.query(node, { id }, reader)).data).toEqual({
        node: { __typename: 'McpServer', id, identifier: 'fs', transport: 'STREAMABLE_HTTP' },
      });
      expect((await api.query(node, { id }, { actor: 'writer', permissions: ['record'] })).data).toEqual({
        node: null,
      });
      const unknown = Buffer.from('McpServer:nope').toString('base64url');
      expect((await api.query(node, { id: unknown }, reader)).data).toEqual({ node: null });
      // The configuration stays for manage_servers, through node(id) as through mcpServers.
      const config = await api.query(
        `query ($id: ID!) { node(id: $id) { ... on McpServer { url } } }`,
        { id },
        reader,
      );
      expect(config.errors?.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
    });
  });

  describe('a cursor belongs to the filter and order that made it', () => {
    const list = `query ($f: RunFilter, $after: String) {
      runs(first: 1, filter: $f, after: $after) { edges { node { uuid } } pageInfo { endCursor } } }`;
    type Page = { runs: { edges: Array<{ node: { uuid: string } }>; pageInfo: { endCursor: string } } };

    it('refuses a run cursor under another filter with BAD_USER_INPUT and reason CURSOR_FILTER_MISMATCH', async () => {
      for (let i = 0; i < 3; i += 1) await start(alice, i === 2 ? 'b' : 'a');
      const filter = { configurations: ['a', 'b'], statuses: ['RUNNING'] };
      const first = await api.query<Page>(list, { f: filter }, alice);
      const after = first.data?.runs.pageInfo.endCursor;
      expect(after).toBeTruthy();
      for (const other of [
        { configurations: ['a'], statuses: ['RUNNING'] },
        {},
        { ...filter, createdAfter: '2020-01-01T00:00:00Z' },
      ]) {
        const refused = await api.query(list, { f: other, after }, alice);
        expect(refused.data).toBeNull();
        expect(
          refused.errors?.map((e) => [e.extensions?.code, e.extensions?.field, e.extensions?.reason]),
        ).toEqual([['BAD_USER_INPUT', 'after', 'CURSOR_FILTER_MISMATCH']]);
      }
      // The same filter written in another order, with a repeat, is the same list.
      const same = await api.query<Page>(
        list,
        { f: { statuses: ['RUNNING'], configurations: ['b', 'a', 'b'] }, after },
        alice,
      );
      expect(same.errors).toBeUndefined();
      expect(same.data?.runs.edges).toHaveLength(1);
    });

    it('refuses a step cursor under another kind or outcome filter', async () => {
      const run = await start(alice);
      const steps = Array.from({ length: 3 }, () => ({ kind: 'LLM', round: 1, durationMs: 1 }));
      await api.query(
        'mutation ($u: String!, $s: [BatchStepInput!]!) { recordSteps(input: { runUuid: $u, steps: $s }) { __typename } }',
        { u: run, s: steps },
        alice,
      );
      const page = `query ($u: String!, $k: [StepKind!], $after: String) { run(uuid: $u) {
        steps(first: 1, kind: $k, after: $after) { edges { node { sequence } } pageInfo { endCursor } } } }`;
      type StepPage = {
        run: { steps: { edges: Array<{ node: { sequence: number } }>; pageInfo: { endCursor: string } } };
      };
      const first = await api.query<StepPage>(page, { u: run, k: ['LLM'] }, alice);
      const after = first.data?.run.steps.pageInfo.endCursor;
      const next = await api.query<StepPage>(page, { u: run, k: ['LLM'], after }, alice);
      expect(next.data?.run.steps.edges.map((e) => e.node.sequence)).toEqual([2]);
      const refused = await api.query(page, { u: run, after }, alice);
      expect(refused.errors?.map((e) => [e.extensions?.code, e.extensions?.reason])).toEqual([
        ['BAD_USER_INPUT', 'CURSOR_FILTER_MISMATCH'],
      ]);
    });
  });
});
