import { and, eq } from 'drizzle-orm';
import { print } from 'graphql';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runSteps, runs, stepRequests } from '../../drizzle/schema.ts';
import { TRUNCATION_MARKER } from '../../src/domain/bounding.ts';
import type { Permission } from '../../src/domain/permissions.ts';
import type { RecordedFragment } from '../.generated/operations/graphql.ts';
import { graphql } from '../.generated/operations/index.ts';
import { openTestApi, rollbackEach, type TestApi, type TypedDocument } from '../support/api.ts';
import { type BackendName, backendNames } from '../support/databases.ts';

const OWN_RUNS_ONLY: Permission[] = ['read_own_runs', 'record', 'cancel_own_runs'];

graphql(`fragment Recorded on RecordedSteps {
  replayed
  steps { id sequence kind outcome toolIsError writeTarget { table uid kind } }
  run { rounds promptTokens completionTokens estimatedCost toolOutcomeCounts { ok failed cancelled total failureRate } }
}`);

/** The four ways to record steps; each answers the recorded steps or a typed refusal. */
const M = {
  execution:
    graphql(`mutation RecordingExecution($input: RecordToolExecutionInput!) { r: recordToolExecution(input: $input) {
    __typename ... on Error { code message } ... on InvalidInputError { field }
    ... on RecordedStepsSuccess { data { ...Recorded } } } }`),
  result:
    graphql(`mutation RecordingResult($input: RecordToolResultInput!) { r: recordToolResult(input: $input) {
    __typename ... on Error { code message } ... on InvalidInputError { field }
    ... on RecordedStepsSuccess { data { ...Recorded } } } }`),
  step: graphql(`mutation RecordingStep($input: RecordStepInput!) { r: recordStep(input: $input) {
    __typename ... on Error { code message } ... on InvalidInputError { field }
    ... on RecordedStepsSuccess { data { ...Recorded } } } }`),
  steps: graphql(`mutation RecordingSteps($input: RecordStepsInput!) { r: recordSteps(input: $input) {
    __typename ... on Error { code message } ... on InvalidInputError { field }
    ... on RecordedStepsSuccess { data { ...Recorded } } } }`),
};

const START_RUN = graphql(`mutation RecordingStartRun($c: String!) { startRun(input: { configuration: $c }) {
  __typename ... on StartRunSuccess { data { uuid owner status } } } }`);

const FINISH_RUN =
  graphql(`mutation RecordingFinishRun($u: String!, $status: RunStatus!, $reason: TerminationReason!) {
  finishRun(input: { uuid: $u, status: $status, terminationReason: $reason }) {
    __typename ... on Error { code } ... on FinishRunSuccess { data { status terminationReason } } } }`);

const CANCEL_RUN = graphql(`mutation RecordingCancelRun($u: String!) { cancelRun(input: { uuid: $u }) {
  __typename ... on Error { code } ... on CancelRunSuccess { data { status terminationReason finishedAt } } } }`);

const START_RUN_AT = graphql(`mutation RecordingStartRunAt($u: String!, $c: String!) {
  startRun(input: { uuid: $u, configuration: $c }) {
    __typename ... on Error { code } ... on StartRunSuccess { data { uuid } } } }`);

/** The recorded steps of a success; undefined for a refusal. */
function recorded(answer: { __typename: string }): RecordedFragment | undefined {
  return 'data' in answer ? (answer as { data: RecordedFragment }).data : undefined;
}

/** What every suite below needs: a test API, and ways to start runs, record into them and read them back. */
function recordingApi(backend: BackendName) {
  let api: TestApi;

  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());

  const db = () => api.db;

  async function startRun(actor = 'alice', configuration = 'triage'): Promise<string> {
    const result = await api.query(START_RUN, { c: configuration }, { actor });
    const started = result.data?.startRun;
    expect(started).toMatchObject({ data: { owner: actor, status: 'RUNNING' } });
    return started?.__typename === 'StartRunSuccess' ? started.data.uuid : '';
  }

  /** Sends any input, refusals' included; the answer is typed by the document. */
  async function send<Data extends { r: { __typename: string } }>(
    mutation: TypedDocument<Data, never>,
    input: Record<string, unknown>,
    actor = 'alice',
    permissions?: readonly Permission[],
  ): Promise<Data['r']> {
    const result = await api.query<Data>(print(mutation), { input }, { actor, permissions });
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    if (!result.data) throw new Error('no data');
    return result.data.r;
  }

  /** Everything a refusal must leave untouched. */
  async function snapshot(runUuid: string) {
    const [run] = await db().select().from(runs).where(eq(runs.uuid, runUuid));
    const steps = run ? await db().select().from(runSteps).where(eq(runSteps.runId, run.id)) : [];
    const requests = run ? await db().select().from(stepRequests).where(eq(stepRequests.runId, run.id)) : [];
    return { run, steps: steps.length, requests: requests.length };
  }

  const call = (runUuid: string, extra: Record<string, unknown> = {}) => ({
    runUuid,
    round: 1,
    durationMs: 120,
    toolName: 'search',
    server: 'github',
    arguments: { q: 'flaky' },
    ...extra,
  });
  return { api: () => api, db, startRun, send, snapshot, call };
}

describe.each(backendNames)('recording runs (%s)', (backend) => {
  const { api, db, startRun, send, snapshot, call } = recordingApi(backend);
  // Every test here runs in its own transaction, rolled back after it.
  rollbackEach(api);

  it('reads a recorded execution back as OK / FAILED, and a cancelled result as CANCELLED, fail-closed', async () => {
    const run = await startRun();
    const ok = await send(M.execution, { ...call(run), result: 'found 3', isError: false });
    const failed = await send(M.execution, { ...call(run), result: 'HTTP 502', isError: true });
    expect(recorded(ok)?.steps).toMatchObject([
      { sequence: 1, kind: 'TOOL', outcome: 'OK', toolIsError: false },
    ]);
    expect(recorded(failed)?.steps).toMatchObject([
      { sequence: 2, kind: 'TOOL', outcome: 'FAILED', toolIsError: true },
    ]);
    const rateBefore = recorded(failed)?.run.toolOutcomeCounts.failureRate;
    expect(rateBefore).toBe(0.5);

    const cancelled = await send(M.result, {
      ...call(run),
      result: {
        content: 'cut off',
        outcome: 'CANCELLED',
        artifacts: [{ title: 'partial', type: 'TEXT', content: 'half' }],
        writeTarget: { table: 'pages', uid: '7', kind: 'UPDATED' },
      },
    });
    expect(recorded(cancelled)?.steps).toEqual([
      expect.objectContaining({
        sequence: 3,
        kind: 'TOOL',
        outcome: 'CANCELLED',
        toolIsError: true,
        writeTarget: null,
      }),
    ]);
    expect(recorded(cancelled)?.run.toolOutcomeCounts).toEqual({
      ok: 1,
      failed: 1,
      cancelled: 1,
      total: 3,
      failureRate: rateBefore,
    });
    const { run: row } = await snapshot(run);
    const [stored] = await db()
      .select()
      .from(runSteps)
      .where(and(eq(runSteps.runId, row?.id ?? 0), eq(runSteps.sequence, 3)));
    expect(stored?.toolOutcome).toBe('cancelled');
    expect(stored?.payload.artifacts).toEqual([]);
    expect(stored?.metadata.writeTarget).toBeUndefined();
  });

  it('records a write target of an ok result as a tool_write step, and bounds large content before storing it', async () => {
    const run = await startRun();
    const content = 'é'.repeat(60_000);
    const written = await send(M.result, {
      ...call(run),
      result: {
        content,
        outcome: 'OK',
        artifacts: [{ title: 'diff', type: 'JSON', content: { lines: 3 } }],
        writeTarget: { table: 'pages', uid: '7', kind: 'CREATED' },
      },
    });
    expect(recorded(written)?.steps.map((s) => [s.sequence, s.kind, s.outcome, s.writeTarget])).toEqual([
      [1, 'TOOL', 'OK', null],
      [2, 'TOOL_WRITE', null, { table: 'pages', uid: '7', kind: 'CREATED' }],
    ]);
    const { run: row } = await snapshot(run);
    const [tool] = await db()
      .select()
      .from(runSteps)
      .where(eq(runSteps.runId, row?.id ?? 0))
      .orderBy(runSteps.sequence);
    const stored = String(tool?.payload.content);
    expect(stored.endsWith(TRUNCATION_MARKER)).toBe(true);
    expect(new TextEncoder().encode(stored.slice(0, -TRUNCATION_MARKER.length)).length).toBe(50_000);
    expect(tool?.payload.artifacts).toEqual([{ title: 'diff', type: 'json', content: { lines: 3 } }]);
  });

  it('keeps rounds, tokens and cost in step with the steps', async () => {
    const run = await startRun();
    const llm = (round: number, prompt: number, completion: number, cost: number) => ({
      runUuid: run,
      kind: 'LLM',
      round,
      durationMs: 800,
      payload: { messages: ['hi'] },
      model: {
        model: 'gpt-x',
        promptTokens: prompt,
        completionTokens: completion,
        estimatedCost: cost,
        finishReason: 'stop',
      },
    });
    await send(M.step, llm(1, 100, 10, 0.25));
    const second = await send(M.step, llm(3, 50, 5, 0.5));
    expect(recorded(second)?.run).toMatchObject({
      rounds: 3,
      promptTokens: 150,
      completionTokens: 15,
      estimatedCost: 0.75,
    });
    const { run: row } = await snapshot(run);
    expect(row).toMatchObject({ rounds: 3, promptTokens: 150, completionTokens: 15, estimatedCost: 0.75 });
  });

  it('stores a finite JSON payload as sent', async () => {
    const run = await startRun();
    const stored = await send(M.step, {
      runUuid: run,
      kind: 'LLM',
      round: 1,
      durationMs: 1,
      payload: { deep: [1, 2, { x: -0.5 }] },
    });
    expect(stored.__typename).toBe('RecordedStepsSuccess');
    const { run: row } = await snapshot(run);
    const [step] = await db()
      .select()
      .from(runSteps)
      .where(eq(runSteps.runId, row?.id ?? 0));
    expect(step?.payload).toEqual({ deep: [1, 2, { x: -0.5 }] });
  });

  it('stores a batch in order, all or nothing', async () => {
    const run = await startRun();
    const good = [
      { kind: 'REQUEST', round: 0, durationMs: 0, payload: { prompt: 'p' } },
      {
        kind: 'LLM',
        round: 1,
        durationMs: 10,
        model: { promptTokens: 5, completionTokens: 1, estimatedCost: 0.1 },
      },
      { kind: 'TOOL', round: 1, durationMs: 10, toolName: 'a', server: 's', isError: false, content: 'x' },
      {
        kind: 'TOOL',
        round: 1,
        durationMs: 10,
        toolName: 'b',
        result: { content: 'c', outcome: 'CANCELLED' },
      },
    ];
    const stored = await send(M.steps, { runUuid: run, steps: good });
    expect(recorded(stored)?.steps.map((s) => [s.sequence, s.kind, s.outcome])).toEqual([
      [1, 'REQUEST', null],
      [2, 'LLM', null],
      [3, 'TOOL', 'OK'],
      [4, 'TOOL', 'CANCELLED'],
    ]);
    const before = await snapshot(run);
    const refused = await send(M.steps, {
      runUuid: run,
      steps: [
        ...good,
        {
          kind: 'TOOL',
          round: 1,
          durationMs: 1,
          toolName: 'c',
          isError: true,
          result: { content: '', outcome: 'OK' },
        },
      ],
    });
    expect(refused).toMatchObject({
      __typename: 'InvalidInputError',
      code: 'STEP_TOOL_NEEDS_RESULT',
      field: 'steps.4.result',
    });
    expect(await snapshot(run)).toEqual(before);
  });

  it('refuses a batch of more than 1,000 steps and writes nothing', async () => {
    const run = await startRun();
    const before = await snapshot(run);
    const steps = Array.from({ length: 1_001 }, () => ({ kind: 'CONTEXT', round: 0, durationMs: 0 }));
    const refused = await send(M.steps, { runUuid: run, steps });
    expect(refused).toMatchObject({
      __typename: 'InvalidInputError',
      code: 'BATCH_TOO_LARGE',
      field: 'steps',
    });
    expect(await snapshot(run)).toEqual(before);
    const thousand = await send(M.steps, { runUuid: run, steps: steps.slice(1) });
    expect(recorded(thousand)?.steps).toHaveLength(1_000);
  });

  it('returns the stored step for a repeated idempotency key and writes nothing new', async () => {
    const run = await startRun();
    const input = { ...call(run), idempotencyKey: 'call-1', result: 'r', isError: false };
    const first = await send(M.execution, input);
    expect(recorded(first)?.replayed).toBe(false);
    const before = await snapshot(run);
    const again = await send(M.execution, { ...input, arguments: { q: 'flaky' } });
    expect(recorded(again)?.replayed).toBe(true);
    expect(recorded(again)?.steps).toEqual(recorded(first)?.steps);
    expect(await snapshot(run)).toEqual(before);
  });

  it('refuses an idempotency key reused for a different request, writing nothing', async () => {
    const run = await startRun();
    await send(M.execution, { ...call(run), idempotencyKey: 'k', result: 'r', isError: false });
    const before = await snapshot(run);
    const refused = await send(M.execution, {
      ...call(run),
      idempotencyKey: 'k',
      result: 'other',
      isError: false,
    });
    expect(refused).toMatchObject({
      __typename: 'IdempotencyKeyReusedError',
      code: 'IDEMPOTENCY_KEY_REUSED',
    });
    expect(await snapshot(run)).toEqual(before);
  });

  it('keeps terminal states final: a finished run takes no steps and cannot be cancelled', async () => {
    const run = await startRun();
    const finish = await api().query(FINISH_RUN, { u: run, status: 'COMPLETED', reason: 'COMPLETED' });
    expect(finish.data?.finishRun).toEqual({
      __typename: 'FinishRunSuccess',
      data: { status: 'COMPLETED', terminationReason: 'COMPLETED' },
    });
    const before = await snapshot(run);
    const step = await send(M.execution, { ...call(run), result: 'late', isError: false });
    expect(step).toMatchObject({ __typename: 'RunTerminalError', code: 'RUN_TERMINAL' });
    const cancel = await api().query(CANCEL_RUN, { u: run });
    expect(cancel.data?.cancelRun).toEqual({ __typename: 'RunTerminalError', code: 'RUN_TERMINAL' });
    expect(await snapshot(run)).toEqual(before);
  });

  it('lets a cancelled run take only the tool steps of calls in flight at the cancel', async () => {
    const run = await startRun();
    const cancel = (await api().query(CANCEL_RUN, { u: run })).data?.cancelRun;
    if (cancel?.__typename !== 'CancelRunSuccess') throw new Error(`not cancelled: ${cancel?.__typename}`);
    expect(cancel.data).toMatchObject({ status: 'CANCELLED', terminationReason: 'CANCELLED' });
    const cancelledAt = Date.parse(cancel.data.finishedAt ?? '');
    const after = new Date(cancelledAt + 500).toISOString();

    // Ended 500 ms after the cancel, having run 2 s: it was on the wire when the cancel came.
    const inFlight = await send(M.result, {
      ...call(run),
      occurredAt: after,
      durationMs: 2_000,
      result: { content: 'cancelled by operator', outcome: 'CANCELLED' },
    });
    expect(recorded(inFlight)?.steps).toMatchObject([{ outcome: 'CANCELLED', toolIsError: true }]);

    const before = await snapshot(run);
    const startedLater = await send(M.execution, {
      ...call(run),
      occurredAt: after,
      durationMs: 100,
      result: 'r',
      isError: false,
    });
    expect(startedLater).toMatchObject({ __typename: 'RunTerminalError', code: 'RUN_TERMINAL' });
    const llm = await send(M.step, { runUuid: run, kind: 'LLM', round: 1, durationMs: 0 });
    expect(llm).toMatchObject({ __typename: 'RunTerminalError', code: 'RUN_TERMINAL' });
    expect(await snapshot(run)).toEqual(before);
  });

  it('refuses a cancelled status without a cancel as the reason', async () => {
    const run = await startRun();
    const before = await snapshot(run);
    const result = await api().query(FINISH_RUN, { u: run, status: 'CANCELLED', reason: 'COMPLETED' });
    expect(result.data?.finishRun).toEqual({ __typename: 'InvalidInputError', code: 'TERMINATION_MISMATCH' });
    expect(await snapshot(run)).toEqual(before);
  });

  it('starts a run again with the same uuid as a safe retry, and refuses a different run on that uuid', async () => {
    const uuid = crypto.randomUUID();
    const start = (configuration: string, actor = 'alice') =>
      api().query(START_RUN_AT, { u: uuid, c: configuration }, { actor });
    const started = { __typename: 'StartRunSuccess', data: { uuid } };
    expect((await start('triage')).data?.startRun).toEqual(started);
    expect((await start('triage')).data?.startRun).toEqual(started);
    expect((await start('docs')).data?.startRun).toEqual({
      __typename: 'RunAlreadyExistsError',
      code: 'RUN_ALREADY_EXISTS',
    });
    expect((await start('triage', 'bob')).data?.startRun).toMatchObject({ code: 'RUN_ALREADY_EXISTS' });
    expect(await db().$count(runs, eq(runs.uuid, uuid))).toBe(1);
  });

  describe('bad input: a typed error, and nothing written', () => {
    let run = '';
    // Inside the test's transaction: each test refuses into a run of its own.
    beforeEach(async () => {
      run = await startRun();
    });

    it.each([
      [
        'an unknown run',
        { runUuid: '5d1f3c1e-0000-4000-8000-000000000000' },
        'RunNotFoundError',
        'RUN_NOT_FOUND',
      ],
      ['a malformed run uuid', { runUuid: 'run-1' }, 'InvalidInputError', 'VALUE_INVALID'],
      ['a negative duration', { durationMs: -1 }, 'InvalidInputError', 'VALUE_OUT_OF_RANGE'],
      ['a negative round', { round: -3 }, 'InvalidInputError', 'VALUE_OUT_OF_RANGE'],
      [
        'a tool name over 200 characters',
        { toolName: 'x'.repeat(201) },
        'InvalidInputError',
        'VALUE_TOO_LONG',
      ],
      ['an empty tool name', { toolName: '' }, 'InvalidInputError', 'VALUE_EMPTY'],
      ['a server name with control characters', { server: 'git\nhub' }, 'InvalidInputError', 'VALUE_INVALID'],
      [
        'arguments over 100,000 bytes',
        { arguments: { blob: 'x'.repeat(100_001) } },
        'InvalidInputError',
        'VALUE_TOO_LARGE',
      ],
      [
        'an idempotency key over 200 characters',
        { idempotencyKey: 'k'.repeat(201) },
        'InvalidInputError',
        'VALUE_TOO_LONG',
      ],
      [
        'a step in the future',
        { occurredAt: '2999-01-01T00:00:00Z' },
        'InvalidInputError',
        'VALUE_IN_FUTURE',
      ],
    ])('refuses %s', async (_name, change, typename, code) => {
      const before = await snapshot(run);
      const refused = await send(M.execution, { ...call(run), result: 'r', isError: false, ...change });
      expect(refused).toMatchObject({ __typename: typename, code });
      expect(await snapshot(run)).toEqual(before);
    });

    it("refuses a step into another actor's run exactly like an unknown run", async () => {
      const before = await snapshot(run);
      const refused = await send(
        M.execution,
        { ...call(run), result: 'r', isError: false },
        'mallory',
        OWN_RUNS_ONLY,
      );
      expect(refused).toMatchObject({ __typename: 'RunNotFoundError', code: 'RUN_NOT_FOUND' });
      const cancel = await api().query(
        CANCEL_RUN,
        { u: run },
        { actor: 'mallory', permissions: OWN_RUNS_ONLY },
      );
      expect(cancel.data?.cancelRun).toEqual({ __typename: 'RunNotFoundError', code: 'RUN_NOT_FOUND' });
      expect(await snapshot(run)).toEqual(before);
    });

    it('refuses non-finite numbers, unknown enum values and wrong types before anything runs', async () => {
      const before = await snapshot(run);
      const raw = async (body: string) => {
        const response = await api().server.fetch('http://runledger.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${await api().keyFor()}` },
          body,
        });
        return (await response.json()) as {
          errors?: Array<{ extensions?: { code?: string } }>;
          data?: unknown;
        };
      };
      const mutation = JSON.stringify(print(M.step));
      // 1e400 parses as Infinity: the Float scalar refuses it.
      const infinite = await raw(
        `{"query": ${mutation}, "variables": {"input": {"runUuid": "${run}", "kind": "LLM", "round": 1, "durationMs": 1, "model": {"estimatedCost": 1e400}}}}`,
      );
      expect(infinite.errors?.[0]?.extensions?.code, JSON.stringify(infinite)).toBe('BAD_USER_INPUT');
      // A JSON payload that is itself infinite: the JSON scalar refuses it.
      const infiniteInJson = await raw(
        `{"query": ${mutation}, "variables": {"input": {"runUuid": "${run}", "kind": "LLM", "round": 1, "durationMs": 1, "payload": 1e400}}}`,
      );
      expect(infiniteInJson.errors?.[0]?.extensions?.code, JSON.stringify(infiniteInJson)).toBe(
        'BAD_USER_INPUT',
      );
      expect(infiniteInJson.data).toBeUndefined();
      // -Infinity deep inside a payload: a typed refusal naming the field.
      const deep = await raw(
        `{"query": ${mutation}, "variables": {"input": {"runUuid": "${run}", "kind": "LLM", "round": 1, "durationMs": 1, "payload": {"a": [1, {"b": -1e400}]}}}}`,
      );
      expect(deep, JSON.stringify(deep)).toMatchObject({
        data: { r: { __typename: 'InvalidInputError', code: 'VALUE_NOT_FINITE', field: 'payload' } },
      });
      const enumValue = await api().query(
        `mutation { recordStep(input: { runUuid: "${run}", kind: THOUGHT, round: 1, durationMs: 1 }) { __typename } }`,
      );
      expect(enumValue.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
      const wrongType = await api().query(print(M.step), {
        input: { runUuid: run, kind: 'LLM', round: 'one', durationMs: 1 },
      });
      expect(wrongType.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(await snapshot(run)).toEqual(before);
    });
  });
});

// Concurrency needs committed data and many connections: no rolled-back transaction here, and a database of its own.
describe.each(backendNames)('recording runs by concurrent writers (%s)', (backend) => {
  const { db, startRun, send, snapshot, call } = recordingApi(backend);

  it('assigns unique, gapless sequences to 50 concurrent writers', async () => {
    const run = await startRun();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        send(M.execution, { ...call(run), toolName: `tool-${i}`, result: 'r', isError: i % 2 === 0 }),
      ),
    );
    expect(results.every((r) => r.__typename === 'RecordedStepsSuccess')).toBe(true);
    const { run: row } = await snapshot(run);
    const stored = await db()
      .select()
      .from(runSteps)
      .where(eq(runSteps.runId, row?.id ?? 0));
    expect(stored.map((s) => s.sequence).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    expect(new Set(stored.map((s) => s.toolName)).size).toBe(50);
  });

  it('stores one step for repeats of an idempotency key that race, and replays it to the others', async () => {
    const run = await startRun();
    const input = { ...call(run), idempotencyKey: 'call-2', result: 'r', isError: false };
    const raced = await Promise.all(Array.from({ length: 20 }, () => send(M.execution, input)));
    const ids = new Set(raced.map((r) => recorded(r)?.steps[0]?.id));
    expect(ids.size).toBe(1);
    expect(raced.filter((r) => recorded(r)?.replayed === false)).toHaveLength(1);
    expect((await snapshot(run)).steps).toBe(1);
  });
});
