import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

/** The daily rollup follows every way rows leave or enter run_steps, TRUNCATE included. */
describe.each(backendNames)('the daily rollup of tool calls (%s)', (backend) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
  });
  afterAll(async () => database?.dispose());

  const exec = (script: string) => database.handle.withSession((s) => s.exec(script));
  const daily = () =>
    database.handle.withSession((s) =>
      s.query<{ server: string; ok: number; failed: number; cancelled: number }>(
        'SELECT server, ok::int AS ok, failed::int AS failed, cancelled::int AS cancelled FROM tool_outcome_daily ORDER BY server',
      ),
    );

  const insertSteps = `
    INSERT INTO runs (uuid, owner, configuration, status)
      VALUES (gen_random_uuid(), 'alice', 'rollup', 'running');
    INSERT INTO run_steps (run_id, sequence, kind, occurred_at, tool_name, server, tool_is_error, tool_outcome)
    SELECT max(id), s, k, now(), 'read', 'fs', e, o
      FROM runs, (VALUES (1, 'tool', false, 'ok'), (2, 'tool', true, 'cancelled'), (3, 'tool', true, NULL),
                         (4, 'llm', true, NULL), (5, 'tool_write', false, NULL)) AS v(s, k, e, o)
     GROUP BY s, k, e, o;`;

  // Each test starts from empty tables, whatever ran before it.
  beforeEach(async () => {
    await exec('TRUNCATE run_steps, runs CASCADE');
  });

  it('counts tool steps only: a non-tool step with the boolean is no call', async () => {
    await exec(insertSteps);
    expect(await daily()).toEqual([{ server: 'fs', ok: 1, failed: 1, cancelled: 1 }]);
  });

  it('is emptied by TRUNCATE run_steps, in the same transaction, and counts again from zero', async () => {
    await exec(insertSteps);
    expect(await daily()).toEqual([{ server: 'fs', ok: 1, failed: 1, cancelled: 1 }]);
    await exec('TRUNCATE run_steps');
    expect(await daily()).toEqual([]);
    await exec(insertSteps);
    expect(await daily()).toEqual([{ server: 'fs', ok: 1, failed: 1, cancelled: 1 }]);
    // Rolled back with the truncate: the rollup keeps its rows.
    await exec('BEGIN; TRUNCATE run_steps, runs CASCADE; ROLLBACK;');
    expect(await daily()).toEqual([{ server: 'fs', ok: 1, failed: 1, cancelled: 1 }]);
  });
});
