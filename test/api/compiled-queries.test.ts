import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps } from '../../drizzle/schema.ts';
import { ToolResult } from '../../src/domain/tool-result.ts';
import { appendSteps } from '../../src/ledger/record-steps.ts';
import { createRun } from '../../src/ledger/start-run.ts';
import { createServer, type Server } from '../../src/server.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

/**
 * Queries run as compiled code (the server's default) answer exactly as
 * graphql-js answers them: the same body and the same status, for data,
 * errors (codes, paths, locations) and refusals of variables and operations.
 */

const ENTRY = 'sequence kind occurredAt round durationMs outcome outcomeLabel detail';

describe.each(backendNames)('compiled queries answer as graphql-js does (%s)', (backend) => {
  let api: TestApi;
  let plain: Server;
  let uuid = '';
  let otherUuid = '';

  beforeAll(async () => {
    api = await openTestApi(backend);
    plain = createServer({ handle: api.database.handle, graphiql: false, compiledQueries: false });
    const db = api.database.handle.db;
    const run = await createRun(db, { owner: 'alice', configuration: 'compiled' });
    uuid = run.uuid;
    otherUuid = (await createRun(db, { owner: 'bob', configuration: 'not alice' })).uuid;
    await appendSteps(db, {
      runUuid: uuid,
      build: (trace) => {
        for (let i = 0; i < 6; i += 1) {
          trace.recordStep({
            kind: 'llm',
            round: i + 1,
            durationMs: 40 + i,
            payload: { prompt: `prompt ${i}` },
            metadata: { model: 'gpt-x', promptTokens: 100 + i, completionTokens: 7, estimatedCost: 0.0125 },
          });
          const call = { round: i + 1, durationMs: 5 * i, toolName: 'read', server: 'fs', arguments: { i } };
          const result =
            i % 3 === 0
              ? ToolResult.cancelled('stopped')
              : i % 3 === 1
                ? ToolResult.failed('broken')
                : ToolResult.ok('fine', [], { table: 'notes', uid: `n${i}`, kind: 'created' });
          trace.recordToolResult(call, result);
        }
      },
    });
  });
  afterAll(async () => api?.dispose());

  /** The answer of both servers, as the client receives it. */
  async function both(body: Record<string, unknown>): Promise<{ status: number; text: string }[]> {
    const key = await api.keyFor();
    return Promise.all(
      [api.server, plain].map(async (server) => {
        const response = await server.fetch('http://runledger.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify(body),
        });
        return { status: response.status, text: await response.text() };
      }),
    );
  }

  it.each([
    [
      'a whole timeline in each locale',
      () => ({
        query: `query ($uuid: String!) { en: run(uuid: $uuid) { timeline(locale: EN) { ${ENTRY} } }
                  de: run(uuid: $uuid) { timeline(locale: DE) { ${ENTRY} } } }`,
        variables: { uuid },
      }),
    ],
    [
      'a timeline page, its cursors and the steps behind its entries',
      () => ({
        query: `query ($uuid: String!) { run(uuid: $uuid) { timelinePage(locale: EN, first: 4) {
                  edges { cursor node { sequence detail step { id kind toolName outcome metadata } } }
                  pageInfo { hasNextPage hasPreviousPage endCursor } } } }`,
        variables: { uuid },
      }),
    ],
    [
      'a run as a node, through fragments and directives',
      () => ({
        query: `query ($uuid: String!, $with: Boolean!) { run(uuid: $uuid) { __typename ...R id } }
                fragment R on Run { uuid status createdAt finishedAt @include(if: $with) configuration @skip(if: $with) }`,
        variables: { uuid, with: true },
      }),
    ],
    [
      'a page of runs with its count',
      () => ({
        query:
          '{ runs(first: 1) { totalCount edges { cursor node { configuration } } pageInfo { hasNextPage } } }',
      }),
    ],
    [
      'a run of another owner (not found)',
      () => ({
        query: 'query ($uuid: String!) { run(uuid: $uuid) { uuid } }',
        variables: { uuid: otherUuid },
      }),
    ],
    [
      'an argument out of range (an error with a path and a location)',
      () => ({
        query: `query ($uuid: String!) { run(uuid: $uuid) { uuid timelinePage(locale: EN, first: 100000) { edges { cursor } } } }`,
        variables: { uuid },
      }),
    ],
    [
      'introspection (outside production)',
      () => ({
        query: `{ __schema { queryType { name } types { name kind } }
                  __type(name: "TimelineEntry") { fields { name type { kind name ofType { kind name } } } } }`,
      }),
    ],
    [
      'a variable of the wrong type',
      () => ({ query: 'query ($n: Int) { runs(first: $n) { edges { cursor } } }', variables: { n: 'ten' } }),
    ],
    [
      'a required variable left out',
      () => ({ query: 'query ($uuid: String!) { run(uuid: $uuid) { uuid } }' }),
    ],
    [
      'an operation named that the document does not hold',
      () => ({ query: 'query A { runs(first: 1) { edges { cursor } } }', operationName: 'B' }),
    ],
    [
      'one operation of two, by name',
      () => ({
        query: 'query A { runs(first: 1) { edges { cursor } } } query B { viewer { actor permissions } }',
        operationName: 'B',
      }),
    ],
  ])('%s', async (_name, body) => {
    const [compiled, interpreted] = await both(body());
    expect(compiled).toEqual(interpreted);
    // Twice: the second request runs the code compiled by the first.
    expect((await both(body()))[0]).toEqual(interpreted);
  });

  /** What a recording answers, but whether it was a replay (the first of two with one key is not). */
  const RECORDED = `__typename ... on RecordedStepsSuccess { data { run { uuid rounds } steps {
    sequence kind toolName outcome isError durationMs metadata payload } } } ... on Error { code message }`;
  const STEP = { kind: 'TOOL', round: 1, durationMs: 12, toolName: 'read', server: 'fs', content: 'fine' };

  // Mutations: both servers are asked at once, so requests that write carry a retry key: one of the
  // two writes, the other is answered as a replay of it, and a replay answers what was stored.
  it.each([
    [
      'a batch of steps, retried with its key',
      () => ({
        query: `mutation ($input: RecordStepsInput!) { recordSteps(input: $input) { ${RECORDED} } }`,
        variables: { input: { runUuid: uuid, idempotencyKey: 'compiled-batch', steps: [STEP, STEP] } },
      }),
    ],
    [
      'two recordings in one operation, run in order',
      () => ({
        query: `mutation ($a: RecordToolExecutionInput!, $b: RecordToolExecutionInput!) {
                  a: recordToolExecution(input: $a) { ${RECORDED} }
                  b: recordToolExecution(input: $b) { ${RECORDED} } }`,
        variables: Object.fromEntries(
          ['a', 'b'].map((name) => [
            name,
            {
              runUuid: uuid,
              idempotencyKey: `compiled-${name}`,
              round: 1,
              durationMs: 3,
              toolName: name,
              server: 'fs',
              result: name,
              isError: name === 'b',
            },
          ]),
        ),
      }),
    ],
    [
      'a recording to a run of another owner (not found, nothing written)',
      () => ({
        query: `mutation ($input: RecordStepsInput!) { recordSteps(input: $input) { ${RECORDED} } }`,
        variables: { input: { runUuid: otherUuid, steps: [STEP] } },
      }),
    ],
    [
      'a step of a kind that does not exist (refused before anything runs)',
      () => ({
        query: `mutation ($input: RecordStepsInput!) { recordSteps(input: $input) { ${RECORDED} } }`,
        variables: { input: { runUuid: uuid, steps: [{ ...STEP, kind: 'NOPE' }] } },
      }),
    ],
    [
      'a required field left out of a step',
      () => ({
        query: `mutation ($input: RecordStepsInput!) { recordSteps(input: $input) { ${RECORDED} } }`,
        variables: { input: { runUuid: uuid, steps: [{ kind: 'TOOL' }] } },
      }),
    ],
  ])('mutations: %s', async (_name, body) => {
    const steps = () => api.database.handle.db.$count(runSteps);
    const [compiled, interpreted] = await both(body());
    expect(compiled).toEqual(interpreted);
    const stored = await steps();
    expect(stored).toBeGreaterThan(0);
    expect((await both(body()))[0]).toEqual(interpreted);
    // Asked again, each is a replay or a refusal: nothing more is stored.
    expect(await steps()).toBe(stored);
  });
});
