// A run the actor may not see must not be told apart from a run that does not
// exist: not by the answer, not by the statements the refusal costs, not by a
// lock it waits on. And a retry with an idempotency key answers exactly the
// bytes of the first answer.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { DomainError } from '../../src/domain/errors.ts';
import type { Permission } from '../../src/domain/permissions.ts';
import { StepInvariantError, StepRefusal } from '../../src/domain/run-step.ts';
import { appendSteps } from '../../src/ledger/record-steps.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import {
  missingTarget,
  normalised,
  PROBE_SERVER,
  PROBES,
  type Probe,
  type ProbeTarget,
  probeRequest,
} from '../support/hidden-probes.ts';

const ENDPOINT = 'http://runledger.test/graphql';
const STRANGER: Permission[] = ['read_own_runs', 'record', 'cancel_own_runs'];

describe.each(backendNames)('a hidden run costs what a missing one costs (%s)', (backend) => {
  let api: TestApi;
  const statements: string[] = [];
  let listening = false;
  let hidden: ProbeTarget;
  let strangerKey = '';

  beforeAll(async () => {
    api = await openTestApi(backend, {
      onQuery: (sql) => {
        if (listening) statements.push(sql);
      },
    });
    const registered = await api.query<{ registerMcpServer: { __typename: string } }>(
      'mutation ($i: McpServerInput!) { registerMcpServer(input: $i) { __typename } }',
      { i: { identifier: PROBE_SERVER, transport: 'STREAMABLE_HTTP', url: 'http://127.0.0.1:9/mcp' } },
      { actor: 'admin' },
    );
    expect(registered.data?.registerMcpServer.__typename).toBe('RegisterMcpServerSuccess');
    const started = await api.query<{ startRun: { data: { uuid: string; id: string } } }>(
      'mutation { startRun(input: { configuration: "hidden" }) { ... on StartRunSuccess { data { uuid id } } } }',
      {},
      { actor: 'alice' },
    );
    const run = started.data?.startRun.data ?? { uuid: '', id: '' };
    const recorded = await api.query<{ recordStep: { data: { steps: Array<{ id: string }> } } }>(
      `mutation ($u: String!) { recordStep(input: { runUuid: $u, kind: LLM, round: 1, durationMs: 2 }) {
        ... on RecordedStepsSuccess { data { steps { id } } } } }`,
      { u: run.uuid },
      { actor: 'alice' },
    );
    hidden = { uuid: run.uuid, runId: run.id, stepId: recorded.data?.recordStep.data.steps[0]?.id ?? '' };
    expect(hidden.stepId).not.toBe('');
    strangerKey = await api.keyFor('mallory', STRANGER);
  });
  afterAll(async () => api?.dispose());

  /** One probe's answer (identifiers replaced) and the statements it cost. */
  async function ask(probe: Probe, target: ProbeTarget) {
    statements.length = 0;
    listening = true;
    try {
      const response = await api.server.fetch(probeRequest(ENDPOINT, strangerKey, probe, target));
      const answer = normalised(await response.text(), target);
      return { status: response.status, answer, statements: [...statements] };
    } finally {
      listening = false;
    }
  }

  const everything = async () => ({
    runs: await api.db.select().from(runs),
    steps: await api.db.select().from(runSteps),
  });

  it.each(PROBES)('$name: the same answer, from the same statements, writing nothing', async (probe) => {
    const before = await everything();
    const missing = missingTarget();
    // Asked twice each, alternating, so that both sides find the same caches (the key, prepared statements).
    await ask(probe, hidden);
    await ask(probe, missing);
    const ofHidden = await ask(probe, hidden);
    const ofMissing = await ask(probe, missing);
    expect(ofHidden.status).toBe(ofMissing.status);
    expect(ofHidden.answer).toBe(ofMissing.answer);
    expect(ofHidden.statements).toEqual(ofMissing.statements);
    // A refusal or nothing at all: never the run.
    expect(ofHidden.answer).toMatch(/RUN_NOT_FOUND|"(run|node)":null|"nodes":\[null,null\]/);
    expect(await everything()).toEqual(before);
  });

  it('a write the trace refuses, judged in a transaction of its own: the same statements', async () => {
    const judged = async (runUuid: string) => {
      statements.length = 0;
      listening = true;
      try {
        await appendSteps(api.db, {
          runUuid,
          owner: 'mallory',
          build: () => {
            throw new StepInvariantError(StepRefusal.InvalidRound, 'refused by the trace');
          },
        });
        return { code: 'appended', statements: [...statements] };
      } catch (error) {
        return {
          code: error instanceof DomainError ? error.code : String(error),
          statements: [...statements],
        };
      } finally {
        listening = false;
      }
    };
    const missing = missingTarget().uuid;
    const ofHidden = await judged(hidden.uuid);
    const ofMissing = await judged(missing);
    expect(ofHidden.code).toBe('RUN_NOT_FOUND');
    expect(ofMissing.code).toBe('RUN_NOT_FOUND');
    expect(ofHidden.statements).toEqual(ofMissing.statements);
    // The transaction's one statement is the append's, which locks a run it finds (and only then).
    const ofTheTransaction = ofHidden.statements.filter((text) => !/^(begin|rollback)$/i.test(text));
    expect(ofTheTransaction).toEqual([expect.stringContaining('from append_run_steps(')]);
  });

  // Only PostgreSQL has a second connection that can hold the owner's lock meanwhile (PGlite has one).
  if (backend === 'postgres') {
    it.each(PROBES)(
      '$name: refused without waiting for the lock the owner holds on the run',
      async (probe) => {
        const holder = new pg.Client({ connectionString: api.database.url });
        await holder.connect();
        try {
          await holder.query('begin');
          await holder.query('select 1 from runs where uuid = $1 for update', [hidden.uuid]);
          const waited = Symbol('waited on the lock');
          const answered = await Promise.race([
            ask(probe, hidden),
            new Promise<typeof waited>((resolve) => setTimeout(() => resolve(waited), 5_000)),
          ]);
          expect(answered).not.toBe(waited);
        } finally {
          await holder.query('rollback');
          await holder.end();
        }
      },
    );
  }
});

describe.each(backendNames)('a replay answers the bytes of the first answer (%s)', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());

  const RECORD = `mutation ($input: RecordStepsInput!) { recordSteps(input: $input) {
    __typename ... on RecordedStepsSuccess { data { run { uuid rounds promptTokens }
      steps { sequence kind outcome toolIsError metadata payload occurredAt durationMs toolName server failureCode } } } } }`;

  it('20 racing retries of one recordSteps with one key: 20 identical bodies', async () => {
    const started = await api.query<{ startRun: { data: { uuid: string } } }>(
      'mutation { startRun(input: { configuration: "replay" }) { ... on StartRunSuccess { data { uuid } } } }',
    );
    const runUuid = started.data?.startRun.data.uuid ?? '';
    const key = await api.keyFor();
    const input = {
      runUuid,
      idempotencyKey: 'retry-me',
      steps: [
        {
          kind: 'LLM',
          round: 1,
          durationMs: 12,
          model: { model: 'm', promptTokens: 10, completionTokens: 3, finishReason: 'stop' },
          occurredAt: '2026-12-06T10:00:00.000Z',
        },
        {
          kind: 'TOOL',
          round: 1,
          durationMs: 40,
          toolName: 'search',
          server: 'github',
          arguments: { zeta: 1, alpha: { nested_long_key: true, b: [1, { yy: 2, x: 3 }] }, mid: 'm' },
          result: { content: 'found', outcome: 'CANCELLED' },
          occurredAt: '2026-12-06T10:00:01.000Z',
        },
      ],
    };
    const bodies = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const response = await api.server.fetch(ENDPOINT, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ query: RECORD, variables: { input } }),
        });
        return response.text();
      }),
    );
    expect(bodies[0]).toContain('RecordedStepsSuccess');
    expect(new Set(bodies).size, bodies.slice(0, 2).join('\n')).toBe(1);
    // And so does a later retry, read from the stored rows alone.
    const later = await api.server.fetch(ENDPOINT, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: RECORD, variables: { input } }),
    });
    expect(await later.text()).toBe(bodies[0]);
  });
});
