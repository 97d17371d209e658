// Twins: a step's columns are read from its JSON record (RunStep.toRecord()) by two statements, the
// append (`append_run_steps`, migrations/repeatable/60) and `storeStepsSql` (src/db/run-writes.ts, used by
// human requests and OTLP). The same steps stored each way must be the same rows, and
// the rows each answers must be the rows stored; the run's totals they add (append_run_steps, and
// updateRunSql beside storeStepsSql) must be the same.
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { appendInOneStatement, insertSteps, updateRunSql, writeTogether } from '../../src/db/run-writes.ts';
import type { StepRow } from '../../src/db/steps.ts';
import { Limits } from '../../src/domain/limits.ts';
import { stepRollups } from '../../src/domain/run-rollups.ts';
import { RunTrace, type ToolCall } from '../../src/domain/run-trace.ts';
import { ToolResult } from '../../src/domain/tool-result.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

const at = new Date('2026-06-01T10:00:00.123Z');
const call = (toolName: string, server: string | null): ToolCall => ({
  round: 2,
  durationMs: 1_234,
  toolName,
  server,
  arguments: { query: 'q', nested: { b: 1, a: [1, 'x', null] } },
  occurredAt: at,
});

/** Steps of every shape a record can take: both tool outcomes' forms, a write, a model step, text with \u00e9 and emoji. */
function steps() {
  const trace = new RunTrace({ nextSequence: 1, clock: () => at });
  trace.recordToolExecution(call('search', 'docs'), 'found \u00e9 \u{1f600}', false);
  trace.recordToolExecution(call('fail', null), 'boom', true);
  trace.recordToolResult(call('stop', 'ops'), ToolResult.cancelled('stopped', 'MCP_CALL_CANCELLED'));
  trace.recordToolResult(
    call('write', 'cms'),
    ToolResult.ok('made', [{ title: 'Page', type: 'json', content: { z: 1, a: 2 } }], {
      table: 'pages',
      uid: '42',
      kind: 'created',
    }),
  );
  trace.recordStep({
    kind: 'llm',
    round: 3,
    durationMs: 900,
    occurredAt: at,
    metadata: { model: 'm', promptTokens: 10, completionTokens: 2 },
  });
  return trace.steps;
}

describe.each(backendNames)('a step stored by append_run_steps and by storeStepsSql (%s)', (backend) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
  });
  afterAll(async () => database?.dispose());

  async function newRun(configuration: string) {
    const uuid = crypto.randomUUID();
    const [run] = await database.handle.db
      .insert(runs)
      // Totals there already: the new steps' round is below the run's (the greatest stays), their tokens and
      // cost are added.
      .values({
        uuid,
        owner: 'alice',
        configuration,
        status: 'running',
        rounds: 5,
        promptTokens: 100,
        completionTokens: 7,
        estimatedCost: 1.5,
      })
      .returning({ id: runs.id });
    if (!run) throw new Error('no run');
    return { uuid, id: run.id };
  }
  const stored = (runId: number) =>
    database.handle.db
      .select()
      .from(runSteps)
      .where(eq(runSteps.runId, runId))
      .orderBy(asc(runSteps.sequence));
  const columns = ({ id: _id, runId: _runId, ...rest }: StepRow) => rest;

  it('are the same rows, and each answers the rows it stored', async () => {
    const db = database.handle.db;
    const [viaAppend, viaStore] = [await newRun('append'), await newRun('store')];
    const built = steps();
    const appended = await appendInOneStatement(db, {
      mode: 'append',
      runUuid: viaAppend.uuid,
      owner: 'alice',
      keyHash: null,
      idempotencyKey: null,
      fingerprint: '',
      openStatuses: ['running'],
      maxSequence: Limits.maxSequence,
      maxRunTokens: Limits.maxRunTokens,
      steps: built,
      rollups: stepRollups(built, { promptTokens: 0, completionTokens: 0 }),
      announce: false,
    });
    expect(appended.outcome).toBe('appended');
    const rollups = stepRollups(built, { promptTokens: 0, completionTokens: 0 });
    const inserted = await db.transaction(async (tx) => {
      const rows = await insertSteps(tx, viaStore.id, built);
      await writeTogether(tx, [updateRunSql(tx, viaStore.id, { rollups, ending: null })]);
      return rows;
    });
    const [rowsAppended, rowsStored] = [await stored(viaAppend.id), await stored(viaStore.id)];
    expect(rowsStored.map(columns)).toEqual(rowsAppended.map(columns));
    expect(rowsStored).toHaveLength(built.length);
    // What each answered is what it stored (ids, JSON in stored key order).
    expect(inserted).toEqual(rowsStored);
    expect(appended.outcome === 'appended' ? appended.steps : []).toEqual(rowsAppended);
    // The run's totals: added by append_run_steps in SQL, and by updateRunSql (OTLP) alike.
    const totals = (id: number) =>
      db
        .select({
          rounds: runs.rounds,
          promptTokens: runs.promptTokens,
          completionTokens: runs.completionTokens,
          estimatedCost: runs.estimatedCost,
        })
        .from(runs)
        .where(eq(runs.id, id));
    const [ofAppend, ofStore] = [await totals(viaAppend.id), await totals(viaStore.id)];
    expect(ofStore).toEqual(ofAppend);
    expect(ofAppend).toEqual([
      { rounds: 5, promptTokens: 110, completionTokens: 9, estimatedCost: expect.any(Number) },
    ]);
  });
});
