import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeys, mcpServers, otlpSpans, runSteps, runs, stepRequests } from '../../drizzle/schema.ts';
import {
  currentVersion,
  loadBaseline,
  loadMigrations,
  MigrationError,
  migrate,
} from '../../src/db/migrator.ts';
import { DURATION_BUCKETS, DURATION_THRESHOLDS_MS } from '../../src/domain/duration-histogram.ts';
import { RunStep } from '../../src/domain/run-step.ts';
import { describeSchema, describeTables } from '../support/catalog.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

const latest = Math.max(...loadMigrations().map((m) => m.version));

describe.each(backendNames)('migrations (%s)', (backend) => {
  it('apply in order, and applying again is a no-op', async () => {
    const database = await openTestDatabase(backend, { migrateTo: 0 });
    try {
      const first = await migrate(database.handle);
      expect(first.map((m) => m.version)).toEqual(loadMigrations().map((m) => m.version));
      expect(await currentVersion(database.handle)).toBe(latest);
      expect(await migrate(database.handle)).toEqual([]);
      expect(await currentVersion(database.handle)).toBe(latest);
    } finally {
      await database.dispose();
    }
  });

  it('create a fresh database from the baseline in one step, ending in the schema and answers of every migration applied one by one', async () => {
    const baseline = loadBaseline();
    expect(baseline?.version).toBeGreaterThan(1);
    const stepwise = await openTestDatabase(backend, { migrateTo: 0 });
    const fresh = await openTestDatabase(backend, { migrateTo: 0 });
    try {
      const lines: string[] = [];
      await migrate(stepwise.handle, { baseline: null });
      await migrate(fresh.handle, { log: (line) => lines.push(line) });
      expect(lines[0]).toMatch(/^created from the baseline of \d{4}_\w+ \(\d+ migrations in one step\)$/);
      expect(await currentVersion(fresh.handle)).toBe(latest);
      const [before, after] = [await describeSchema(stepwise.handle), await describeSchema(fresh.handle)];
      expect(after.tables.length).toBeGreaterThan(30);
      expect(after.functions.length).toBeGreaterThan(10);
      expect(after.triggers.length).toBeGreaterThan(4);
      expect(after).toEqual(before);
      // The same history: an upgrade goes on from either the same way.
      const history = (handle: typeof fresh.handle) =>
        handle.withSession((s) =>
          s.query('SELECT version, name, checksum FROM runledger_migrations ORDER BY 1'),
        );
      expect(await history(fresh.handle)).toEqual(await history(stepwise.handle));
      // The same answers: the same writes, folded, counted the same.
      const writes = `
        INSERT INTO runs (uuid, owner, configuration, status) VALUES ('00000000-0000-4000-8000-000000000001', 'alice', 'c', 'running');
        INSERT INTO run_steps (run_id, sequence, kind, occurred_at, duration_ms, tool_name, server, tool_is_error, tool_outcome)
        SELECT (SELECT id FROM runs), g, 'tool', timestamptz '2026-06-01 10:00Z' + g * interval '9 minutes', g * 13,
               'tool_' || (g % 3), 'srv', g % 4 = 0, CASE WHEN g % 8 = 0 THEN 'cancelled' WHEN g % 4 = 0 THEN 'failed' END
          FROM generate_series(1, 60) AS g;
        DELETE FROM run_steps WHERE sequence % 7 = 0;
        SELECT tool_outcome_rollups_fold(1000000);`;
      const answers = async (handle: typeof fresh.handle) => {
        await handle.withSession((s) => s.exec(writes));
        return handle.withSession((s) =>
          s.query(
            `SELECT week, owner, tool_name, ok, failed, cancelled, durations::text AS durations
               FROM stats_owner_tool_weekly ORDER BY 1, 2, 3`,
          ),
        );
      };
      const stepwiseAnswers = await answers(stepwise.handle);
      expect(stepwiseAnswers.length).toBe(3);
      expect(await answers(fresh.handle)).toEqual(stepwiseAnswers);
    } finally {
      await stepwise.dispose();
      await fresh.dispose();
    }
  });

  it('refuse to run when an applied migration has changed', async () => {
    const database = await openTestDatabase(backend, { migrateTo: 1 });
    try {
      const edited = loadMigrations().map((m) => (m.version === 1 ? { ...m, checksum: 'edited' } : m));
      const refusal = await migrate(database.handle, { migrations: edited }).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(MigrationError);
      expect((refusal as MigrationError).code).toBe('MIGRATION_CHANGED');
      expect(await currentVersion(database.handle)).toBe(1);
    } finally {
      await database.dispose();
    }
  });

  it('roll back a failing migration whole', async () => {
    const database = await openTestDatabase(backend, { migrateTo: 0 });
    try {
      const broken = [
        ...loadMigrations(),
        { version: 9999, name: 'broken', checksum: 'x', sql: 'CREATE TABLE half_done (id int); SELECT 1/0;' },
      ];
      const refusal = await migrate(database.handle, { migrations: broken }).catch((error: unknown) => error);
      expect((refusal as MigrationError).code).toBe('MIGRATION_FAILED');
      expect(await currentVersion(database.handle)).toBe(latest);
      const [row] = await database.handle.withSession((s) =>
        s.query<{ exists: boolean }>("SELECT to_regclass('half_done') IS NOT NULL AS exists"),
      );
      expect(row?.exists).toBe(false);
    } finally {
      await database.dispose();
    }
  });

  describe('a database with steps written before outcomes existed', () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await openTestDatabase(backend, { migrateTo: 1 });
      await database.handle.withSession(async (session) => {
        const columns = await session.query<{ column_name: string }>(
          "SELECT column_name FROM information_schema.columns WHERE table_name = 'run_steps'",
        );
        expect(columns.map((c) => c.column_name)).not.toContain('tool_outcome');
        await session.exec(`
          INSERT INTO runs (uuid, owner, configuration, status, termination_reason)
          VALUES ('00000000-0000-4000-8000-000000000001', 'alice', 'legacy', 'completed', 'completed');
          INSERT INTO run_steps (run_id, sequence, kind, occurred_at, tool_name, server, tool_is_error)
          SELECT id, 1, 'tool', now(), 'search', 'docs', true FROM runs;
          INSERT INTO run_steps (run_id, sequence, kind, occurred_at, tool_name, server, tool_is_error)
          SELECT id, 2, 'tool', now(), 'search', 'docs', false FROM runs;
          INSERT INTO run_steps (run_id, sequence, kind, occurred_at) SELECT id, 3, 'llm', now() FROM runs;
          INSERT INTO run_steps (run_id, sequence, kind, occurred_at, tool_is_error) SELECT id, 4, 'llm', now(), true FROM runs;`);
      });
      await migrate(database.handle);
    });
    afterAll(async () => database?.dispose());

    it('keeps every legacy step at the outcome it had, with nothing backfilled', async () => {
      const rows = await database.handle.db.select().from(runSteps).orderBy(runSteps.sequence);
      expect(rows.map((r) => r.toolOutcome)).toEqual([null, null, null, null]);
      // A non-tool step states no outcome, even one that carries the boolean.
      expect(rows.map((r) => RunStep.fromRecord(r).outcome)).toEqual(['failed', 'ok', null, null]);
      const viaSql = await database.handle.withSession((s) =>
        s.query<{ stated: string | null }>(
          'SELECT stated_tool_outcome(kind, tool_is_error, tool_outcome) AS stated FROM run_steps ORDER BY sequence',
        ),
      );
      expect(viaSql.map((r) => r.stated)).toEqual(['failed', 'ok', null, null]);
      const daily = await database.handle.withSession((s) =>
        s.query<{ ok: number; failed: number }>(
          'SELECT ok::int AS ok, failed::int AS failed FROM stats_server_tool_daily',
        ),
      );
      expect(daily).toEqual([{ ok: 1, failed: 1 }]);
      expect(await database.handle.db.select().from(runs)).toHaveLength(1);
    });

    it('ends with every outcome constraint validated', async () => {
      const rows = await database.handle.withSession((s) =>
        s.query<{ conname: string; convalidated: boolean }>(
          "SELECT conname, convalidated FROM pg_constraint WHERE conname LIKE 'run_steps_tool_outcome%' ORDER BY conname",
        ),
      );
      expect(rows).toEqual([
        { conname: 'run_steps_tool_outcome_agrees_with_is_error', convalidated: true },
        { conname: 'run_steps_tool_outcome_known', convalidated: true },
        { conname: 'run_steps_tool_outcome_only_on_tool_steps', convalidated: true },
      ]);
    });
  });

  it('carry every histogram in the 65 columns of migration 10 over into the array column exactly', async () => {
    const database = await openTestDatabase(backend, { migrateTo: 10 });
    try {
      const buckets = Array.from({ length: DURATION_BUCKETS }, (_, bucket) => bucket);
      const byColumn = buckets.map((bucket) => `d${bucket}::text`).join(', ');
      const before = await database.handle.withSession(async (session) => {
        // Calls the 0010 trigger counts, one in every bucket and more in some, on two days...
        await session.exec(`
          INSERT INTO runs (uuid, owner, configuration, status)
          VALUES ('00000000-0000-4000-8000-000000000002', 'alice', 'histogram', 'running');
          INSERT INTO run_steps (run_id, sequence, kind, occurred_at, duration_ms, tool_name, server, tool_is_error, tool_outcome)
          SELECT id, g, 'tool', timestamptz '2026-03-01 12:00Z' + (g % 2) * interval '1 day',
                 (ARRAY[0, ${DURATION_THRESHOLDS_MS.join(', ')}])[(g % ${DURATION_BUCKETS}) + 1] + g % 3,
                 'search', 'docs', g % 5 = 0, CASE WHEN g % 5 = 0 THEN 'failed' ELSE 'ok' END
            FROM runs, generate_series(1, 400) AS g;`);
        // ...and a row no trigger wrote: a different count, past 2^31 and 2^53, in every bucket.
        await session.exec(`
          INSERT INTO tool_outcome_daily (day, server, tool_name, ok, failed, cancelled, ${buckets.map((b) => `d${b}`).join(', ')})
          VALUES ('2026-02-01', 'busy', 'ping', 9007199254740993, 2147483648, 7,
                  ${buckets.map((b) => `${9_007_199_254_740_000n + BigInt(b) * 1_000_003n}`).join(', ')});`);
        return session.query<{ key: string; counts: string; d: string[] }>(
          `SELECT day || ' ' || server || ' ' || tool_name AS key, ok || ' ' || failed || ' ' || cancelled AS counts,
                  ARRAY[${byColumn}] AS d
             FROM tool_outcome_daily ORDER BY 1`,
        );
      });
      expect(before).toHaveLength(3);
      expect(before.every((row) => row.d.every((count) => count !== '0'))).toBe(true);
      await migrate(database.handle, { target: 11 });
      const after = await database.handle.withSession((session) =>
        session.query<{ key: string; counts: string; d: string[] }>(
          `SELECT day || ' ' || server || ' ' || tool_name AS key, ok || ' ' || failed || ' ' || cancelled AS counts,
                  durations::text[] AS d
             FROM tool_outcome_daily ORDER BY 1`,
        ),
      );
      expect(after).toEqual(before);
    } finally {
      await database.dispose();
    }
  });

  /** A rollup's rows that count calls: by their counts, their calls per duration bucket, or their histogram. */
  const withCalls = (table: string) =>
    table === 'tool_outcome_all_time_durations'
      ? `durations <> array_fill(0::bigint, ARRAY[${DURATION_BUCKETS}])`
      : table.endsWith('_durations')
        ? 'calls <> 0'
        : 'ok + failed + cancelled > 0';
  // Each migration that adds rollups builds them from what is already counted; a rebuild from run_steps must agree.
  it.each([
    {
      version: 19,
      tables: [
        'tool_outcome_server_daily',
        'tool_outcome_owner_configuration_daily',
        'tool_outcome_owner_tool_daily',
        'tool_outcome_owner_configuration_server_daily',
        'tool_outcome_server_hourly',
        'tool_outcome_owner_configuration_hourly',
      ],
      callEvery: '37 minutes',
    },
    // Calls over more than two weeks, so that the weekly rollup has rows of several weeks.
    {
      version: 20,
      tables: ['tool_outcome_owner_configuration_weekly', 'tool_outcome_owner_configuration_server_weekly'],
      callEvery: '197 minutes',
    },
    {
      version: 21,
      tables: [
        'tool_outcome_owner_weekly',
        'tool_outcome_owner_server_weekly',
        'tool_outcome_configuration_server_weekly',
      ],
      callEvery: '197 minutes',
    },
    // The histograms of the rollups keyed by all four fields, moved from arrays to rows.
    {
      version: 23,
      tables: [
        'tool_outcome_owner_daily',
        'tool_outcome_owner_daily_durations',
        'tool_outcome_hourly',
        'tool_outcome_hourly_durations',
      ],
      callEvery: '37 minutes',
    },
    {
      version: 24,
      tables: ['tool_outcome_owner_tool_weekly'],
      callEvery: '197 minutes',
    },
    {
      version: 25,
      tables: ['tool_outcome_server_tool_weekly'],
      callEvery: '173 minutes',
    },
    {
      version: 26,
      tables: ['tool_outcome_configuration_tool_weekly', 'tool_outcome_owner_configuration_tool_weekly'],
      callEvery: '151 minutes',
    },
    {
      version: 27,
      tables: ['tool_outcome_all_time', 'tool_outcome_all_time_durations'],
      callEvery: '151 minutes',
    },
    {
      version: 28,
      tables: [
        'tool_outcome_owner_server_tool_all_time',
        'tool_outcome_configuration_server_tool_all_time',
        'tool_outcome_owner_configuration_server_all_time',
        'tool_outcome_owner_configuration_tool_all_time',
      ],
      callEvery: '151 minutes',
    },
    {
      version: 30,
      tables: ['tool_outcome_owner_server_all_time', 'tool_outcome_configuration_server_all_time'],
      callEvery: '151 minutes',
    },
    {
      version: 35,
      tables: ['tool_outcome_weekly'],
      callEvery: '197 minutes',
    },
  ])(
    'build the rollups of migration $version from the calls already counted, as a recount of run_steps would',
    async ({ version, tables, callEvery }) => {
      const database = await openTestDatabase(backend, { migrateTo: version - 1 });
      const read = () =>
        database.handle.withSession(async (session) => {
          const all: Record<string, unknown[]> = {};
          for (const table of tables)
            all[table] = await session.query(
              `SELECT to_jsonb(t) AS row FROM ${table} t
                WHERE ${withCalls(table)}
                ORDER BY to_jsonb(t)::text`,
            );
          return all;
        });
      try {
        await database.handle.withSession((session) =>
          session.exec(`
          INSERT INTO runs (uuid, owner, configuration, status)
          VALUES (gen_random_uuid(), 'alice', 'a', 'running'), (gen_random_uuid(), 'bob', 'b', 'running');
          INSERT INTO run_steps (run_id, sequence, kind, occurred_at, duration_ms, tool_name, server, tool_is_error, tool_outcome)
          SELECT runs.id, g, 'tool', timestamptz '2026-04-01 20:00Z' + g * interval '${callEvery}', g * 97,
                 'tool_' || (g % 3), CASE WHEN g % 5 = 0 THEN NULL ELSE 'srv_' || (g % 2) END,
                 g % 4 = 0, CASE WHEN g % 3 = 0 THEN NULL WHEN g % 8 = 0 THEN 'cancelled' WHEN g % 4 = 0 THEN 'failed' ELSE 'ok' END
            FROM runs, generate_series(1, 120) AS g;`),
        );
        await migrate(database.handle, { target: version });
        const backfilled = await read();
        for (const table of tables)
          expect([table, (backfilled[table]?.length ?? 0) > 1]).toEqual([table, true]);
        await database.handle.withSession((session) => session.exec('SELECT tool_outcome_rollups_rebuild()'));
        expect(await read()).toEqual(backfilled);
      } finally {
        await database.dispose();
      }
    },
  );

  it('add the outcome constraints NOT VALID first, and validate them in a later migration', () => {
    const byVersion = new Map(loadMigrations().map((m) => [m.version, m.sql]));
    const adding = byVersion.get(2) ?? '';
    const validating = byVersion.get(3) ?? '';
    for (const name of [
      'run_steps_tool_outcome_known',
      'run_steps_tool_outcome_only_on_tool_steps',
      'run_steps_tool_outcome_agrees_with_is_error',
    ]) {
      expect(adding).toMatch(new RegExp(`ADD CONSTRAINT ${name}\\s+CHECK \\([^;]*\\) NOT VALID;`));
      expect(validating).toContain(`VALIDATE CONSTRAINT ${name};`);
    }
    expect(adding).not.toMatch(/\bUPDATE\b|\bDEFAULT\b/);
  });

  it('build exactly the tables that drizzle/schema.ts defines', async () => {
    const require = createRequire(import.meta.url);
    const { generateDrizzleJson, generateMigration } =
      require('drizzle-kit/api') as typeof import('drizzle-kit/api');
    const ddl = await generateMigration(
      generateDrizzleJson({}),
      generateDrizzleJson({
        runs,
        runSteps,
        stepRequests,
        apiKeys,
        mcpServers,
        otlpSpans,
      }),
    );
    const fromMigrations = await openTestDatabase(backend);
    const fromDrizzle = await openTestDatabase(backend, { migrateTo: 0 });
    try {
      await fromDrizzle.handle.withSession((s) => s.exec(ddl.join('\n')));
      const tables = ['runs', 'run_steps', 'step_requests', 'api_keys', 'mcp_servers', 'otlp_spans'];
      const expected = await describeTables(fromDrizzle.handle, tables);
      const actual = await describeTables(fromMigrations.handle, tables);
      expect(expected.columns.length).toBeGreaterThan(20);
      expect(actual).toEqual(expected);
    } finally {
      await fromMigrations.dispose();
      await fromDrizzle.dispose();
    }
  });
});
