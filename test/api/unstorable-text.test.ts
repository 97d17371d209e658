// Text PostgreSQL cannot hold (U+0000, lone surrogates): repaired in what a step stores, refused in
// names, keys and filters, never an INTERNAL_SERVER_ERROR.
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpServers, runSteps, runs, stepRequests } from '../../drizzle/schema.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const R = '\uFFFD';

interface Payload {
  __typename: string;
  code?: string;
  field?: string | null;
  data?: { replayed: boolean; steps: Array<{ sequence: number; kind: string; outcome: string | null }> };
}

const RESULT = `__typename ... on Error { code } ... on InvalidInputError { field }`;
/** Every step mutation answers the same success type. */
const RECORDED = `${RESULT} ... on RecordedStepsSuccess { data { replayed steps { sequence kind outcome } } }`;
const mutation = (name: string, inputType: string) =>
  `mutation ($input: ${inputType}!) { r: ${name}(input: $input) { ${RECORDED} } }`;

const M = {
  execution: mutation('recordToolExecution', 'RecordToolExecutionInput'),
  result: mutation('recordToolResult', 'RecordToolResultInput'),
  step: mutation('recordStep', 'RecordStepInput'),
  steps: mutation('recordSteps', 'RecordStepsInput'),
  start: `mutation ($input: StartRunInput!) { r: startRun(input: $input) { ${RESULT} } }`,
  register: `mutation ($input: McpServerInput!) { r: registerMcpServer(input: $input) { ${RESULT} } }`,
  remove: `mutation ($id: String!) { r: removeMcpServer(identifier: $id) { ${RESULT} } }`,
  callTool: `mutation ($input: CallToolInput!) { r: callTool(input: $input) { ${RESULT} } }`,
};

describe.each(backendNames)('text PostgreSQL cannot hold (%s)', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());

  const db = () => api.database.handle.db;

  async function send(query: string, variables: Record<string, unknown>): Promise<Payload> {
    const result = await api.query<{ r: Payload }>(query, variables);
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data?.r as Payload;
  }

  async function startRun(): Promise<string> {
    const result = await api.query<{ startRun: { data: { uuid: string } } }>(
      'mutation { startRun(input: { configuration: "text" }) { ... on StartRunSuccess { data { uuid } } } }',
    );
    return result.data?.startRun.data.uuid ?? '';
  }

  async function storedSteps(runUuid: string) {
    const [run] = await db().select().from(runs).where(eq(runs.uuid, runUuid));
    return db()
      .select()
      .from(runSteps)
      .where(eq(runSteps.runId, run?.id ?? 0))
      .orderBy(runSteps.sequence);
  }

  /** Everything a refusal must leave untouched. */
  const written = async () => ({
    runs: await db().$count(runs),
    steps: await db().$count(runSteps),
    requests: await db().$count(stepRequests),
    servers: await db().$count(mcpServers),
  });

  const call = (runUuid: string) => ({
    runUuid,
    round: 1,
    durationMs: 5,
    toolName: 'read_file',
    server: 'fs',
    arguments: { 'path\u0000': 'a\uD800.bin', list: ['\u0000', { '\uDC00': 1 }] },
  });
  const repairedArguments = { [`path${R}`]: `a${R}.bin`, list: [R, { [R]: 1 }] };

  it('repairs tool output, arguments and artifacts of recordToolResult, keeping the outcome', async () => {
    const run = await startRun();
    for (const outcome of ['OK', 'FAILED', 'CANCELLED']) {
      const answer = await send(M.result, {
        input: {
          ...call(run),
          result: {
            content: '\u0000PNG\uD800 end',
            outcome,
            artifacts: [{ title: 'raw', type: 'JSON', content: { 'k\u0000': ['v\uDFFF', 2] } }],
          },
        },
      });
      expect(answer.__typename).toBe('RecordedStepsSuccess');
      expect(answer.data?.steps.map((s) => s.outcome)).toEqual([outcome]);
    }
    const steps = await storedSteps(run);
    expect(steps.map((s) => s.toolOutcome)).toEqual(['ok', 'failed', 'cancelled']);
    for (const step of steps) {
      expect(step.payload.content).toBe(`${R}PNG${R} end`);
      expect(step.payload.arguments).toEqual(repairedArguments);
    }
    expect(steps[0]?.payload.artifacts).toEqual([
      { title: 'raw', type: 'json', content: { [`k${R}`]: [`v${R}`, 2] } },
    ]);
    // content 2 + arguments 4 (+ artifacts 2 when they are kept: ok only).
    expect(steps.map((s) => s.metadata.repairedCharacters)).toEqual([8, 6, 6]);
  });

  it('repairs recordToolExecution output and a recordStep payload, and marks only repaired steps', async () => {
    const run = await startRun();
    const failed = await send(M.execution, {
      input: { ...call(run), result: 'bin\u0000ary', isError: true },
    });
    expect(failed.data?.steps.map((s) => s.outcome)).toEqual(['FAILED']);
    const plain = await send(M.step, {
      input: {
        runUuid: run,
        kind: 'CONTEXT',
        round: 1,
        durationMs: 0,
        payload: { 'note\u0000': 'x\uD83D', nested: [{ deep: 'ok' }] },
      },
    });
    expect(plain.__typename).toBe('RecordedStepsSuccess');
    const clean = await send(M.step, {
      input: { runUuid: run, kind: 'CONTEXT', round: 1, durationMs: 0, payload: { note: 'fine' } },
    });
    expect(clean.__typename).toBe('RecordedStepsSuccess');
    const [tool, context, untouched] = await storedSteps(run);
    expect(tool?.payload.content).toBe(`bin${R}ary`);
    expect(tool?.metadata.repairedCharacters).toBe(5);
    expect(context?.payload).toEqual({ [`note${R}`]: `x${R}`, nested: [{ deep: 'ok' }] });
    expect(context?.metadata.repairedCharacters).toBe(2);
    expect(untouched?.metadata).toEqual({});
  });

  it('repairs every step of a recordSteps batch', async () => {
    const run = await startRun();
    const answer = await send(M.steps, {
      input: {
        runUuid: run,
        steps: [
          { kind: 'TOOL', round: 1, durationMs: 1, toolName: 't', isError: false, content: '\u0000' },
          {
            kind: 'TOOL',
            round: 1,
            durationMs: 1,
            toolName: 't',
            arguments: { '\uD800': null },
            result: { content: 'x', outcome: 'CANCELLED' },
          },
          { kind: 'REQUEST', round: 0, durationMs: 0, payload: { prompt: 'hello\u0000' } },
        ],
      },
    });
    expect(answer.data?.steps.map((s) => s.outcome)).toEqual(['OK', 'CANCELLED', null]);
    const steps = await storedSteps(run);
    expect(steps.map((s) => s.metadata.repairedCharacters)).toEqual([1, 1, 1]);
    expect(steps[0]?.payload.content).toBe(R);
    expect(steps[1]?.payload.arguments).toEqual({ [R]: null });
    expect(steps[2]?.payload).toEqual({ prompt: `hello${R}` });
  });

  it.each([
    ['a tool name with U+0000', M.result, 'toolName', 'a\u0000b'],
    ['a tool name with a lone surrogate', M.result, 'toolName', 'a\uD800b'],
    ['a server with a lone surrogate', M.result, 'server', '\uDC00'],
    ['an idempotency key with U+0000', M.result, 'idempotencyKey', 'k\u0000'],
    ['an idempotency key with a lone surrogate', M.result, 'idempotencyKey', 'x\uD800y'],
  ])('refuses %s with VALUE_INVALID, writing nothing', async (_name, query, field, value) => {
    const run = await startRun();
    const before = await written();
    const answer = await send(query, {
      input: { ...call(run), [field]: value, result: { content: 'x', outcome: 'OK' } },
    });
    expect(answer).toMatchObject({ __typename: 'InvalidInputError', code: 'VALUE_INVALID', field });
    expect(await written()).toEqual(before);
  });

  it.each([
    [
      'an artifact title',
      { artifacts: [{ title: 't\uD800', type: 'TEXT', content: 'x' }] },
      'result.artifacts.0.title',
    ],
    [
      'a write target uid',
      { writeTarget: { table: 'pages', uid: '\u0000', kind: 'CREATED' } },
      'result.writeTarget.uid',
    ],
  ])('refuses %s PostgreSQL cannot hold, writing nothing', async (_name, extra, field) => {
    const run = await startRun();
    const before = await written();
    const answer = await send(M.result, {
      input: { ...call(run), result: { content: 'x', outcome: 'OK', ...extra } },
    });
    expect(answer).toMatchObject({ __typename: 'InvalidInputError', code: 'VALUE_INVALID', field });
    expect(await written()).toEqual(before);
  });

  it('refuses a model name and a batch tool name with a lone surrogate', async () => {
    const run = await startRun();
    const before = await written();
    const model = await send(M.step, {
      input: { runUuid: run, kind: 'LLM', round: 1, durationMs: 1, model: { model: 'gpt\uD800' } },
    });
    expect(model).toMatchObject({ code: 'VALUE_INVALID', field: 'model.model' });
    const batch = await send(M.steps, {
      input: {
        runUuid: run,
        steps: [
          { kind: 'CONTEXT', round: 0, durationMs: 0 },
          { kind: 'TOOL', round: 1, durationMs: 1, toolName: '\uDBFF', isError: false },
        ],
      },
    });
    expect(batch).toMatchObject({ code: 'VALUE_INVALID', field: 'steps.1.toolName' });
    expect(await written()).toEqual(before);
  });

  it('keeps idempotency keys that differ only in lone surrogates apart: both are refused', async () => {
    const run = await startRun();
    const before = await written();
    for (const key of ['x\uD800y', 'x\uDC00y']) {
      const answer = await send(M.result, {
        input: { ...call(run), idempotencyKey: key, result: { content: 'x', outcome: 'OK' } },
      });
      expect(answer).toMatchObject({ code: 'VALUE_INVALID', field: 'idempotencyKey' });
    }
    expect(await written()).toEqual(before);
    // A well-formed key still works, and its repeat is a replay.
    const first = await send(M.result, {
      input: { ...call(run), idempotencyKey: 'x\uFFFDy', result: { content: 'x', outcome: 'OK' } },
    });
    const again = await send(M.result, {
      input: { ...call(run), idempotencyKey: 'x\uFFFDy', result: { content: 'x', outcome: 'OK' } },
    });
    expect([first.data?.replayed, again.data?.replayed]).toEqual([false, true]);
  });

  it.each(['conf\u0000', 'conf\uD800'])('refuses a run configuration %j', async (configuration) => {
    const before = await written();
    const answer = await send(M.start, { input: { configuration } });
    expect(answer).toMatchObject({ code: 'VALUE_INVALID', field: 'configuration' });
    expect(await written()).toEqual(before);
  });

  it.each([
    ['identifier', { identifier: 'x\u0000', transport: 'STDIO', command: 'node' }, 'identifier'],
    ['command', { identifier: 'x', transport: 'STDIO', command: 'node\uD800' }, 'command'],
    ['an argument', { identifier: 'x', transport: 'STDIO', command: 'node', args: ['\uDC00'] }, 'args.0'],
    ['url', { identifier: 'x', transport: 'STREAMABLE_HTTP', url: 'http://h/\u0000' }, 'url'],
  ])('refuses an MCP server %s PostgreSQL cannot hold', async (_name, input, field) => {
    const before = await written();
    const answer = await send(M.register, { input });
    expect(answer).toMatchObject({ code: 'VALUE_INVALID', field });
    expect(await written()).toEqual(before);
  });

  it('refuses removeMcpServer and callTool with a server or tool PostgreSQL cannot hold', async () => {
    const run = await startRun();
    const before = await written();
    expect(await send(M.remove, { id: 'a\u0000' })).toMatchObject({
      code: 'VALUE_INVALID',
      field: 'identifier',
    });
    expect(await send(M.remove, { id: 'a\uD800' })).toMatchObject({
      code: 'VALUE_INVALID',
      field: 'identifier',
    });
    expect(
      await send(M.callTool, { input: { runUuid: run, server: 'a\u0000', toolName: 'echo' } }),
    ).toMatchObject({ code: 'VALUE_INVALID', field: 'server' });
    expect(
      await send(M.callTool, { input: { runUuid: run, server: 'fs', toolName: 'echo\uD800' } }),
    ).toMatchObject({ code: 'VALUE_INVALID', field: 'toolName' });
    expect(await written()).toEqual(before);
  });

  it.each([
    [
      'runs: configuration',
      'query ($v: String!) { runs(filter: { configurations: [$v] }) { edges { cursor } } }',
      'filter.configurations',
    ],
    [
      'runs: owner',
      'query ($v: String!) { runs(filter: { owners: ["alice", $v] }) { edges { cursor } } }',
      'filter.owners',
    ],
    [
      'stats: servers',
      'query ($v: String!) { toolOutcomeStats(groupBy: [SERVER], filter: { servers: [$v] }) { groups { server } } }',
      'filter.servers',
    ],
    [
      'stats: tools',
      'query ($v: String!) { toolOutcomeStats(groupBy: [TOOL], filter: { tools: [$v] }) { groups { server } } }',
      'filter.tools',
    ],
    [
      'stats: configurations',
      'query ($v: String!) { toolOutcomeStats(groupBy: [SERVER], filter: { configurations: [$v] }) { groups { server } } }',
      'filter.configurations',
    ],
    [
      'stats: owners',
      'query ($v: String!) { toolOutcomeStats(groupBy: [SERVER], filter: { owners: [$v] }) { groups { server } } }',
      'filter.owners',
    ],
    [
      'run stats: configurations',
      'query ($v: String!) { runStats(groupBy: [STATUS], filter: { configurations: [$v] }) { truncated } }',
      'filter.configurations',
    ],
    [
      'run stats: owners',
      'query ($v: String!) { runStats(groupBy: [STATUS], filter: { owners: ["alice", $v] }) { truncated } }',
      'filter.owners',
    ],
    ['run(uuid)', 'query ($v: String!) { run(uuid: $v) { id } }', 'uuid'],
    ['runs(after)', 'query ($v: String!) { runs(after: $v) { edges { cursor } } }', 'after'],
  ])(
    'refuses a filter value PostgreSQL cannot hold in %s with BAD_USER_INPUT',
    async (_name, query, field) => {
      for (const value of ['a\u0000', 'a\uD800']) {
        const result = await api.query(query, { v: value });
        expect(result.errors?.map((e) => [e.extensions?.code, e.extensions?.field])).toEqual([
          ['BAD_USER_INPUT', field],
        ]);
      }
    },
  );
});
