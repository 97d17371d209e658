import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { type Running, startService } from '../support/service.ts';

/** Counts per (server, tool, outcome), as a rollup's rows sum and as run_steps hold them. */
const FOLDED = `SELECT server, tool_name, sum(ok)::int AS ok, sum(failed)::int AS failed, sum(cancelled)::int AS cancelled
  FROM stats_owner_configuration_server_tool_all_time GROUP BY 1, 2 HAVING sum(ok + failed + cancelled) <> 0 ORDER BY 1, 2`;
const RECOUNTED = `SELECT coalesce(server, '') AS server, coalesce(tool_name, '') AS tool_name,
  count(*) FILTER (WHERE o = 'ok')::int AS ok, count(*) FILTER (WHERE o = 'failed')::int AS failed,
  count(*) FILTER (WHERE o = 'cancelled')::int AS cancelled
  FROM (SELECT server, tool_name, stated_tool_outcome(kind, tool_is_error, tool_outcome) AS o FROM run_steps) AS s
  WHERE o IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2`;

/**
 * The folding instance killed in the middle of a batch: the batch's changes
 * are neither lost nor counted twice, and another instance folds them. The
 * batch is held mid-way by a lock on a rollup row it must update, so the
 * kill lands after it deleted its changes and before it could commit.
 */
describe.each(backendNames.filter((name) => name === 'postgres'))(
  'the statistics folder across instances (%s)',
  () => {
    let database: TestDatabase;
    let client: pg.Client;
    const services: Running[] = [];
    beforeAll(async () => {
      database = await openTestDatabase('postgres');
      client = new pg.Client({ connectionString: database.url });
      await client.connect();
    });
    afterAll(async () => {
      for (const service of services) if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await client?.end();
      await database?.dispose();
    });

    const pending = async () =>
      Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM tool_call_changes')).rows[0]?.n);
    const until = async (what: () => Promise<boolean>, ms = 20_000) => {
      const deadline = Date.now() + ms;
      while (!(await what())) {
        if (Date.now() > deadline) throw new Error('timed out');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    };

    it('loses and counts twice nothing when the folding instance is killed mid-batch; another takes over', async () => {
      await client.query(`
        INSERT INTO runs (uuid, owner, configuration, status) VALUES (gen_random_uuid(), 'alice', 'kill', 'running');
        INSERT INTO run_steps (run_id, sequence, kind, occurred_at, duration_ms, tool_name, server, tool_is_error, tool_outcome)
        SELECT (SELECT id FROM runs WHERE configuration = 'kill'), g, 'tool', now() - g * interval '1 minute', g,
               'tool_' || (g % 4), 'srv', g % 5 = 0, CASE WHEN g % 10 = 0 THEN 'cancelled' WHEN g % 5 = 0 THEN 'failed' ELSE 'ok' END
          FROM generate_series(1, 400) AS g`);
      await client.query(`SELECT tool_outcome_rollups_fold(1)`);
      const before = await pending();
      const callsFolded = async () =>
        (await client.query<{ ok: number; failed: number; cancelled: number }>(FOLDED)).rows.reduce(
          (sum, row) => sum + row.ok + row.failed + row.cancelled,
          0,
        );
      const foldedBefore = await callsFolded();
      expect(before).toBeGreaterThan(10);
      const locker = new pg.Client({ connectionString: database.url });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        // A rollup a batch adds to, locked by this test: the fold waits on it, mid-batch. (Only this
        // database's sessions are looked at: other databases of the cluster may fold at the same time.)
        await locker.query('LOCK TABLE stats_server_tool_daily IN SHARE MODE');
        const first = await startService({ DATABASE_URL: database.url ?? '' });
        services.push(first);
        await until(
          async () =>
            (
              await client.query(
                `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%tool_outcome_rollups_fold%'`,
              )
            ).rowCount === 1,
        );
        // Inside its transaction the batch's changes are gone; outside it, they are all still there.
        expect(await pending()).toBe(before);
        first.child.kill('SIGKILL');
        await new Promise((resolve) => first.child.once('exit', resolve));
        await locker.query('ROLLBACK');
        // Its backend finds its client gone and rolls the batch back.
        await until(
          async () =>
            (
              await client.query(
                `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%tool_outcome_rollups_fold%'`,
              )
            ).rowCount === 0,
        );
      } finally {
        await locker.end();
      }
      expect(await pending()).toBe(before);
      expect(await callsFolded()).toBe(foldedBefore);
      // Another instance folds everything, once.
      services.push(await startService({ DATABASE_URL: database.url ?? '' }));
      await until(async () => (await pending()) === 0);
      expect((await client.query(FOLDED)).rows).toEqual((await client.query(RECOUNTED)).rows);
    });
  },
);
