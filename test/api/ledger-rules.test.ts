// Rules of the use cases that every entry point shares: one round rule for every tool call, and
// the owners whose runs the domain lets an actor see, record into and cancel.
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpServers, runSteps, runs } from '../../drizzle/schema.ts';
import type { Database } from '../../src/db/connection.ts';
import { InvalidInputError, RunNotFoundError } from '../../src/domain/errors.ts';
import {
  type Actor,
  cancellableOwners,
  type Permission,
  recordableOwners,
  visibleOwners,
} from '../../src/domain/permissions.ts';
import { cancelRun, finishRun } from '../../src/ledger/end-run.ts';
import { registerServer } from '../../src/ledger/mcp-servers.ts';
import { type OutcomeStatsRequest, toolOutcomeStats } from '../../src/ledger/outcome-stats.ts';
import { recordBatch, recordToolExecution, recordToolResult } from '../../src/ledger/record-steps.ts';
import { type RunStatsRequest, runStats } from '../../src/ledger/run-stats.ts';
import { createRun, startRun as startRunOf } from '../../src/ledger/start-run.ts';
import { McpPolicy } from '../../src/mcp/outbound-policy.ts';
import { DEFAULT_MCP_SETTINGS } from '../../src/mcp/settings.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { type HttpToolServer, startHttpToolServer } from '../support/mcp-tool-server.ts';

const actor = (name: string, permissions: Permission[]): Actor => ({
  name,
  permissions: new Set(permissions),
});

describe('the owners an actor may act on', () => {
  it('lets cancel_own_runs cancel its own runs only, and cancel_any_run every run', () => {
    expect(cancellableOwners(actor('ann', ['cancel_own_runs']))).toEqual(['ann']);
    expect(cancellableOwners(actor('ann', ['cancel_any_run']))).toBeNull();
    expect(cancellableOwners(actor('ann', ['cancel_own_runs', 'cancel_any_run']))).toBeNull();
    expect(cancellableOwners(actor('ann', ['record', 'read_all_runs']))).toEqual([]);
  });

  it('lets record write into its own runs only, and the read permissions see own or all runs', () => {
    expect(recordableOwners(actor('ann', ['record', 'read_all_runs', 'cancel_any_run']))).toEqual(['ann']);
    expect(recordableOwners(actor('ann', ['read_own_runs']))).toEqual([]);
    expect(visibleOwners(actor('ann', ['read_own_runs']))).toEqual(['ann']);
    expect(visibleOwners(actor('ann', ['read_own_runs', 'read_all_runs']))).toBeNull();
    expect(visibleOwners(actor('ann', ['record']))).toEqual([]);
  });
});

describe('statistics refuse words outside their sets', () => {
  // The use cases are typed, but an entry point may hand them anything (a cast, a client without a
  // schema): a word outside its set is refused with a code before any statement. This database
  // throws at the first use, so a refusal that came from it would not read VALUE_INVALID.
  const reached = new Error('the database was reached');
  const db = new Proxy({} as Database, {
    get: () => {
      throw reached;
    },
  });
  const scope = { db, actor: actor('ann', ['read_all_runs']) };
  const outcomeRequest: OutcomeStatsRequest = {
    groupBy: ['server'],
    utcOffsetMinutes: 0,
    minCalls: 0,
    first: 10,
    durations: false,
  };
  const runRequest: RunStatsRequest = { groupBy: ['status'], utcOffsetMinutes: 0, first: 10 };
  const refusal = (field: string) =>
    expect.objectContaining({ constructor: InvalidInputError, code: 'VALUE_INVALID', field });

  it('lets a request of known words through to the database', async () => {
    await expect(toolOutcomeStats(scope, { ...outcomeRequest, bucket: 'hour' })).rejects.toBe(reached);
    await expect(runStats(scope, { ...runRequest, bucket: 'week' })).rejects.toBe(reached);
  });

  it.each([
    ['bucket', { bucket: 'HOUR' }],
    ['bucket', { bucket: 'month' }],
    ['groupBy', { groupBy: ['server', 'SERVER'] }],
    ['groupBy', { groupBy: ['mcpServer'] }],
    ['orderBy.field', { orderBy: { field: 'TOTAL', direction: 'desc' } }],
    ['orderBy.direction', { orderBy: { field: 'total', direction: 'DESC' } }],
    ['filter.outcomes', { filter: { outcomes: ['ok', 'error'] } }],
  ])('toolOutcomeStats refuses %s %j with VALUE_INVALID', async (field, change) => {
    const request = { ...outcomeRequest, ...change } as OutcomeStatsRequest;
    await expect(toolOutcomeStats(scope, request)).rejects.toEqual(refusal(field));
  });

  it.each([
    ['bucket', { bucket: 'DAY' }],
    ['groupBy', { groupBy: ['status', 'server'] }],
    ['filter.statuses', { filter: { statuses: ['completed', 'done'] } }],
  ])('runStats refuses %s %j with VALUE_INVALID', async (field, change) => {
    const request = { ...runRequest, ...change } as RunStatsRequest;
    await expect(runStats(scope, request)).rejects.toEqual(refusal(field));
  });
});

describe.each(backendNames)('rules every entry point shares (%s)', (backend) => {
  let api: TestApi;
  let http: HttpToolServer;
  const SERVER = 'round-tools';

  const startRun = async (owner = 'alice') =>
    (
      await api.query<{ startRun: { data: { uuid: string } } }>(
        'mutation { startRun(input: { configuration: "rules" }) { ... on StartRunSuccess { data { uuid } } } }',
        {},
        { actor: owner },
      )
    ).data?.startRun.data.uuid ?? '';
  const stepsOf = async (uuid: string) => {
    const [run] = await api.database.handle.db.select().from(runs).where(eq(runs.uuid, uuid));
    return api.database.handle.db
      .select()
      .from(runSteps)
      .where(eq(runSteps.runId, run?.id ?? 0));
  };
  const runRow = async (uuid: string) =>
    (await api.database.handle.db.select().from(runs).where(eq(runs.uuid, uuid)))[0];
  const lastContact = async () =>
    (await api.database.handle.db.select().from(mcpServers).where(eq(mcpServers.identifier, SERVER)))[0]
      ?.lastContactAt ?? null;
  const refusal = `__typename ... on Error { code } ... on InvalidInputError { field }`;

  beforeAll(async () => {
    api = await openTestApi(backend);
    http = await startHttpToolServer();
    await api.query(
      'mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename } }',
      {
        input: { identifier: SERVER, transport: 'STREAMABLE_HTTP', url: http.url },
      },
    );
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await api?.dispose();
  });

  it.each([-1, 100_001])(
    'refuses round %d with VALUE_OUT_OF_RANGE on round through callTool, before any call, writing nothing',
    async (round) => {
      const run = await startRun();
      const contactBefore = await lastContact();
      const result = await api.query<{ callTool: Record<string, unknown> }>(
        `mutation ($input: CallToolInput!) { callTool(input: $input) { ${refusal} } }`,
        { input: { runUuid: run, server: SERVER, toolName: 'echo', arguments: { text: 'x' }, round } },
      );
      expect(result.data?.callTool).toEqual({
        __typename: 'InvalidInputError',
        code: 'VALUE_OUT_OF_RANGE',
        field: 'round',
      });
      expect(await stepsOf(run)).toEqual([]);
      expect((await runRow(run))?.rounds).toBe(0);
      // Refused before the wire: the server was not reached.
      expect(await lastContact()).toEqual(contactBefore);
    },
  );

  it.each([-1, 100_001])(
    'refuses round %d with the same code and field through recordToolResult, writing nothing',
    async (round) => {
      const run = await startRun();
      const result = await api.query<{ recordToolResult: Record<string, unknown> }>(
        `mutation ($input: RecordToolResultInput!) { recordToolResult(input: $input) { ${refusal} } }`,
        {
          input: {
            runUuid: run,
            round,
            durationMs: 1,
            toolName: 'echo',
            result: { content: 'x', outcome: 'OK' },
          },
        },
      );
      expect(result.data?.recordToolResult).toEqual({
        __typename: 'InvalidInputError',
        code: 'VALUE_OUT_OF_RANGE',
        field: 'round',
      });
      expect(await stepsOf(run)).toEqual([]);
    },
  );

  describe('recording refuses words and values outside their types, whatever the entry point', () => {
    // The GraphQL schema holds these types; another entry point hands the use cases what it has.
    const call = { round: 1, durationMs: 1, toolName: 'echo', server: SERVER, arguments: {} };
    const ok = { content: 'x', outcome: 'ok' };
    type Recording = (scope: { db: Database; actor: Actor }, runUuid: string) => Promise<unknown>;
    const cases: Array<[string, Recording]> = [
      [
        'result.outcome',
        (scope, runUuid) =>
          recordToolResult(scope, { ...call, runUuid, result: { content: 'x', outcome: 'error' } } as never),
      ],
      [
        'result.content',
        (scope, runUuid) =>
          recordToolResult(scope, { ...call, runUuid, result: { content: 42, outcome: 'ok' } } as never),
      ],
      [
        'result.artifacts.0.type',
        (scope, runUuid) =>
          recordToolResult(scope, {
            ...call,
            runUuid,
            result: { ...ok, artifacts: [{ title: 'a', type: 'xml' }] },
          } as never),
      ],
      [
        'result.writeTarget.kind',
        (scope, runUuid) =>
          recordToolResult(scope, {
            ...call,
            runUuid,
            result: { ...ok, writeTarget: { table: 'notes', uid: 'n1', kind: 'deleted' } },
          } as never),
      ],
      [
        'isError',
        (scope, runUuid) =>
          recordToolExecution(scope, { ...call, runUuid, result: 'x', isError: 'yes' } as never),
      ],
      [
        'result',
        (scope, runUuid) =>
          recordToolExecution(scope, { ...call, runUuid, result: 42, isError: false } as never),
      ],
      [
        'toolName',
        (scope, runUuid) =>
          recordToolExecution(scope, {
            ...call,
            toolName: 42,
            runUuid,
            result: 'x',
            isError: false,
          } as never),
      ],
      // All or nothing: the first step is valid and is not written either.
      [
        'steps.1.isError',
        (scope, runUuid) =>
          recordBatch(scope, {
            runUuid,
            steps: [
              { ...call, kind: 'tool', isError: false, content: 'x' },
              { ...call, kind: 'tool', isError: 1, content: 'x' },
            ],
          } as never),
      ],
      [
        'steps.0.result.outcome',
        (scope, runUuid) =>
          recordBatch(scope, {
            runUuid,
            steps: [{ ...call, kind: 'tool', result: { content: 'x', outcome: 'OK' } }],
          } as never),
      ],
    ];

    it.each(cases)('refuses %s with VALUE_INVALID, writing nothing', async (field, record) => {
      const run = await startRun();
      const scope = { db: api.database.handle.db, actor: actor('alice', ['record']) };
      await expect(record(scope, run)).rejects.toEqual(
        expect.objectContaining({ constructor: InvalidInputError, code: 'VALUE_INVALID', field }),
      );
      expect(await stepsOf(run)).toEqual([]);
      expect((await runRow(run))?.rounds).toBe(0);
    });

    it('records the same calls when every value is of its type', async () => {
      const run = await startRun();
      const scope = { db: api.database.handle.db, actor: actor('alice', ['record']) };
      await recordToolResult(scope, {
        ...call,
        runUuid: run,
        result: { ...ok, artifacts: [{ title: 'a', type: 'json', content: { a: 1 } }] },
      } as never);
      await recordToolExecution(scope, { ...call, runUuid: run, result: 'x', isError: true } as never);
      const steps = (await stepsOf(run)).sort((a, b) => a.sequence - b.sequence);
      expect(steps.map((step) => step.toolOutcome)).toEqual(['ok', 'failed']);
    });
  });

  describe('runs and servers refuse words outside their sets, writing nothing', () => {
    const scopeOf = (permissions: Permission[]) => ({
      db: api.database.handle.db,
      actor: actor('ursula', permissions),
    });
    const runsOf = async (owner: string) =>
      api.database.handle.db.select().from(runs).where(eq(runs.owner, owner));

    it.each(['completed', 'bogus'])(
      'startRun refuses status %s: a run starts queued or running',
      async (status) => {
        await expect(
          startRunOf(scopeOf(['record']), { configuration: 'rules', status } as never),
        ).rejects.toEqual(expect.objectContaining({ code: 'VALUE_INVALID', field: 'status' }));
        expect(await runsOf('ursula')).toEqual([]);
      },
    );

    it('finishRun refuses a termination reason outside its set, leaving the run running', async () => {
      const scope = scopeOf(['record']);
      const run = await startRunOf(scope, { configuration: 'rules', status: 'running' });
      await expect(
        finishRun(scope, { uuid: run.uuid, status: 'completed', terminationReason: 'bogus' } as never),
      ).rejects.toEqual(expect.objectContaining({ code: 'VALUE_INVALID', field: 'terminationReason' }));
      expect(await runRow(run.uuid)).toMatchObject({
        status: 'running',
        terminationReason: null,
        finishedAt: null,
      });
    });

    it('registerServer refuses a transport outside its set, registering nothing', async () => {
      const policy = new McpPolicy(DEFAULT_MCP_SETTINGS);
      await expect(
        registerServer(
          scopeOf(['manage_servers']),
          { identifier: 'rules-ws', transport: 'ws', url: 'http://127.0.0.1:1/' } as never,
          policy,
        ),
      ).rejects.toEqual(expect.objectContaining({ code: 'VALUE_INVALID', field: 'transport' }));
      const registered = await api.database.handle.db
        .select()
        .from(mcpServers)
        .where(eq(mcpServers.identifier, 'rules-ws'));
      expect(registered).toEqual([]);
    });
  });

  it('records a call at the highest round allowed through callTool', async () => {
    const run = await startRun();
    const result = await api.query<{ callTool: { __typename: string } }>(
      'mutation ($input: CallToolInput!) { callTool(input: $input) { __typename } }',
      { input: { runUuid: run, server: SERVER, toolName: 'echo', arguments: { text: 'x' }, round: 100_000 } },
    );
    expect(result.data?.callTool.__typename).toBe('RecordedStepsSuccess');
    expect((await runRow(run))?.rounds).toBe(100_000);
  });

  describe('cancel', () => {
    const CANCEL = `mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename ... on Error { code } } }`;

    it('refuses cancel_own_runs on another actor’s run as not found, changing nothing; its own run it cancels', async () => {
      const others = await startRun('alice');
      const refused = await api.query<{ cancelRun: unknown }>(
        CANCEL,
        { u: others },
        { actor: 'olga', permissions: ['cancel_own_runs'] },
      );
      expect(refused.data?.cancelRun).toEqual({ __typename: 'RunNotFoundError', code: 'RUN_NOT_FOUND' });
      expect(await runRow(others)).toMatchObject({ status: 'running', finishedAt: null });

      const own = await startRun('olga');
      const cancelled = await api.query<{ cancelRun: { __typename: string } }>(
        CANCEL,
        { u: own },
        { actor: 'olga', permissions: ['cancel_own_runs'] },
      );
      expect(cancelled.data?.cancelRun.__typename).toBe('CancelRunSuccess');
      expect((await runRow(own))?.status).toBe('cancelled');
    });

    it('lets cancel_any_run cancel another actor’s run', async () => {
      const others = await startRun('alice');
      const cancelled = await api.query<{ cancelRun: { __typename: string } }>(
        CANCEL,
        { u: others },
        { actor: 'olga', permissions: ['cancel_any_run'] },
      );
      expect(cancelled.data?.cancelRun.__typename).toBe('CancelRunSuccess');
      expect((await runRow(others))?.status).toBe('cancelled');
    });

    it('decides in the use case, whatever the entry point: cut-off calls only for runs the actor may cancel', async () => {
      const db = api.database.handle.db;
      const run = await createRun(db, { owner: 'alice', configuration: 'rules' });
      const aborted: string[] = [];
      const inFlight = { abortCallsOf: (uuid: string) => aborted.push(uuid) };
      await expect(
        cancelRun({ db, actor: actor('olga', ['cancel_own_runs']) }, { uuid: run.uuid }, inFlight),
      ).rejects.toBeInstanceOf(RunNotFoundError);
      expect(aborted).toEqual([]);
      const cancelled = await cancelRun(
        { db, actor: actor('olga', ['cancel_any_run']) },
        { uuid: run.uuid },
        inFlight,
      );
      expect(cancelled.status).toBe('cancelled');
      expect(aborted).toEqual([run.uuid]);
    });
  });
});
