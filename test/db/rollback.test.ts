import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runs } from '../../drizzle/schema.ts';
import { createRun } from '../../src/ledger/start-run.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { withRollback } from '../support/rollback.ts';

describe.each(backendNames)('tests in a rolled-back transaction (%s)', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());

  const count = (uuid: string) => api.db.$count(runs, eq(runs.uuid, uuid));

  it('sees its own rows inside, and leaves none after', async () => {
    const uuid = await withRollback(api.db, async (tx) => {
      const run = await createRun(tx, { owner: 'alice', configuration: 'rollback' });
      // The code's own transactions become savepoints of the test's.
      await tx.transaction(async (inner) => {
        await inner.update(runs).set({ configuration: 'nested' }).where(eq(runs.uuid, run.uuid));
      });
      expect(await tx.$count(runs, eq(runs.configuration, 'nested'))).toBe(1);
      return run.uuid;
    });
    expect(await count(uuid)).toBe(0);
  });

  it('rolls back when the work fails, and a failed savepoint leaves the transaction usable', async () => {
    let uuid = '';
    const failed = withRollback(api.db, async (tx) => {
      uuid = (await createRun(tx, { owner: 'alice', configuration: 'rollback' })).uuid;
      await expect(
        tx.transaction(async (inner) => {
          await inner.insert(runs).values({ uuid, owner: 'bob', configuration: 'twice', status: 'running' });
        }),
      ).rejects.toThrow();
      expect(await tx.$count(runs, eq(runs.uuid, uuid))).toBe(1);
      throw new Error('the test failed');
    });
    await expect(failed).rejects.toThrow('the test failed');
    expect(uuid).not.toBe('');
    expect(await count(uuid)).toBe(0);
  });

  it('hands the transaction to the server: what a request writes is gone after the rollback', async () => {
    const undo = await api.beginRollback();
    let uuid = '';
    try {
      const started = await api.query<{ startRun: { data: { uuid: string } } }>(
        'mutation { startRun(input: { configuration: "rollback" }) { ... on StartRunSuccess { data { uuid } } } }',
        {},
        { actor: 'rolled-back-actor' },
      );
      uuid = started.data?.startRun.data.uuid ?? '';
      expect(await count(uuid)).toBe(1);
      if (api.database.url) {
        // Another connection does not see it: it is in an open transaction, not committed.
        const outside = await api.database.handle.withSession((s) =>
          s.query<{ n: number }>('SELECT count(*)::int AS n FROM runs WHERE uuid = $1', [uuid]),
        );
        expect(outside[0]?.n).toBe(0);
      }
    } finally {
      await undo();
    }
    expect(uuid).not.toBe('');
    expect(await count(uuid)).toBe(0);
    // The key made inside went with it; a new one is made for the next request.
    const again = await api.query('{ runs { edges { cursor } } }', {}, { actor: 'rolled-back-actor' });
    expect(again.errors).toBeUndefined();
  });
});
