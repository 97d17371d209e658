import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { durationsTableOf, FIELD_COLUMNS, rollupTable } from '../../src/db/rollup-sql.ts';
import { DURATION_BUCKETS, durationBucket } from '../../src/domain/duration-histogram.ts';
import { OUTCOME_ROLLUPS } from '../../src/domain/outcome-rollups.ts';
import { statedOutcome } from '../../src/domain/stated-outcome.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

/** Hundreds of random writes folded into every rollup: 15 to 20 s alone on PGlite, more beside other test files. */
const HEAVY_TEST_MS = 120_000;

/** The rollups follow every way rows leave or enter run_steps, TRUNCATE included, and every change of a run's key. */
describe.each(backendNames)('the daily rollup of tool calls (%s)', (backend) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
  });
  afterAll(async () => database?.dispose());

  const exec = (script: string) => database.handle.withSession((s) => s.exec(script));
  /** Folds up to `max` changes not folded yet into the rollups, as the service's folder does. */
  const fold = (max = 1_000_000) => exec(`SELECT tool_outcome_rollups_fold(${max})`);
  const pendingChanges = async () =>
    (
      await database.handle.withSession((s) =>
        s.query<{ n: number }>('SELECT count(*)::int AS n FROM tool_call_changes'),
      )
    )[0]?.n;
  /** The rollup by server and tool, per day, once every change is folded. */
  const daily = async () => {
    await fold();
    return database.handle.withSession((s) =>
      s.query<{ server: string; ok: number; failed: number; cancelled: number }>(
        'SELECT server, ok::int AS ok, failed::int AS failed, cancelled::int AS cancelled FROM stats_server_tool_daily ORDER BY server',
      ),
    );
  };

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

  /**
   * Each rollup, with the SQL for its key and the same key built here from a
   * step and its run: every rollup is checked the same way.
   */
  const day = (step: StepWithRun) => step.occurredAt.toISOString().slice(0, 10);
  const hour = (step: StepWithRun) => step.occurredAt.toISOString().slice(0, 13);
  /** The Monday, in UTC, of the week that holds a step: counted here, not by the SQL under test. */
  const week = (step: StepWithRun) => {
    const at = step.occurredAt.getTime();
    const daysSinceMonday = (Math.floor(at / 86_400_000) + 3) % 7; // 1970-01-01 was a Thursday
    return new Date((Math.floor(at / 86_400_000) - daysSinceMonday) * 86_400_000).toISOString().slice(0, 10);
  };
  const TIME_KEYS = {
    day: { sql: 'day', ofChange: `to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD')`, of: day },
    hour: {
      sql: `to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24')`,
      ofChange: `to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24')`,
      of: hour,
    },
    week: {
      sql: 'week',
      ofChange: `to_char(date_trunc('week', hour AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`,
      of: week,
    },
    all: { sql: `'all'`, ofChange: `'all'`, of: () => 'all' },
  } as const;
  /** A rollup by its time column and key columns: the SQL for its key, and the same key built from a step. */
  const rollupOf = (
    table: string,
    time: keyof typeof TIME_KEYS,
    columns: ReadonlyArray<'owner' | 'configuration' | 'server' | 'tool_name'>,
    /** The table of its histograms, a row per key and duration bucket, when they are not in its rows. */
    durations: string | null = null,
    /** The table of its histograms, a row per key, when they are not in its rows; false: it keeps none. */
    histograms: string | null | false = null,
  ) => ({
    table,
    time,
    columns,
    durations,
    histograms,
    key: [TIME_KEYS[time].sql, ...columns].join(` || ' ' || `),
    /** The same key of a change not folded yet (tool_call_changes has an hour and every field). */
    changeKey: [TIME_KEYS[time].ofChange, ...columns].join(` || ' ' || `),
    of: (step: StepWithRun) =>
      [
        TIME_KEYS[time].of(step),
        ...columns.map((column) =>
          column === 'owner'
            ? step.owner
            : column === 'configuration'
              ? step.configuration
              : column === 'server'
                ? (step.server ?? '')
                : (step.toolName ?? ''),
        ),
      ].join(' '),
  });
  // Every rollup of the catalogue, counted here from the steps by its unit and key fields.
  const ROLLUPS = OUTCOME_ROLLUPS.map((definition) =>
    rollupOf(
      rollupTable(definition),
      definition.grain,
      definition.dimensions.map(
        (field) => FIELD_COLUMNS[field] as 'owner' | 'configuration' | 'server' | 'tool_name',
      ),
      definition.durations === 'beside' ? durationsTableOf(definition) : null,
      definition.durations === 'apart'
        ? durationsTableOf(definition)
        : definition.durations === 'none'
          ? false
          : null,
    ),
  );
  type StepWithRun = typeof runSteps.$inferSelect & { owner: string; configuration: string };
  /** A stored histogram as its DURATION_BUCKETS counts, whatever its bounds: zero outside them. */
  const wholeHistogram = `ARRAY(SELECT coalesce(durations[i], 0)::text FROM generate_series(1, ${DURATION_BUCKETS}) AS i ORDER BY i)`;

  /** Every row of a rollup that counts something, as its key -> counts and histogram. */
  const rollup = async ({ table, key, durations, histograms }: (typeof ROLLUPS)[number]) => {
    const rows = await database.handle.withSession((s) =>
      s.query<{ key: string; ok: string; failed: string; cancelled: string; durations: string[] }>(
        `SELECT ${key} AS key, ok::text AS ok, failed::text AS failed,
                cancelled::text AS cancelled, ${durations || histograms !== null ? `'{}'::text[]` : wholeHistogram} AS durations
           FROM ${table}`,
      ),
    );
    const counted = new Map(
      rows.map((r) => [r.key, [r.ok, r.failed, r.cancelled, ...r.durations].map(Number)] as const),
    );
    if (histograms) {
      // Its histograms from their own table, a row per key; a key found only there is a row of its own.
      for (const row of counted.values()) row.push(...new Array<number>(DURATION_BUCKETS).fill(0));
      const keyed = await database.handle.withSession((s) =>
        s.query<{ key: string; durations: string[] }>(
          `SELECT ${key} AS key, ${wholeHistogram} AS durations FROM ${histograms}`,
        ),
      );
      for (const { key: rowKey, durations: calls } of keyed) {
        const row = counted.get(rowKey) ?? new Array<number>(3 + DURATION_BUCKETS).fill(0);
        calls.forEach((count, bucket) => {
          row[3 + bucket] = (row[3 + bucket] ?? 0) + Number(count);
        });
        counted.set(rowKey, row);
      }
    }
    if (durations) {
      // Its histograms from their own table; a key found only there is a row of its own.
      for (const row of counted.values()) row.push(...new Array<number>(DURATION_BUCKETS).fill(0));
      const buckets = await database.handle.withSession((s) =>
        s.query<{ key: string; bucket: number; calls: string }>(
          `SELECT ${key} AS key, duration_bucket AS bucket, calls::text AS calls FROM ${durations}`,
        ),
      );
      for (const { key: rowKey, bucket, calls } of buckets) {
        const row = counted.get(rowKey) ?? new Array<number>(3 + DURATION_BUCKETS).fill(0);
        row[3 + bucket] = (row[3 + bucket] ?? 0) + Number(calls);
        counted.set(rowKey, row);
      }
    }
    return new Map([...counted].filter(([, counts]) => counts.some((count) => count !== 0)));
  };
  /** The same, counted here from run_steps and runs by the TypeScript twins of the SQL rules. */
  const recount = async ({ of, histograms }: (typeof ROLLUPS)[number]) => {
    const counts = new Map<string, number[]>();
    const steps = await database.handle.db
      .select({ step: runSteps, owner: runs.owner, configuration: runs.configuration })
      .from(runSteps)
      .innerJoin(runs, eq(runs.id, runSteps.runId));
    for (const { step, owner, configuration } of steps) {
      const outcome = statedOutcome(step.kind, step.toolIsError, step.toolOutcome);
      if (outcome === null) continue;
      const key = of({ ...step, owner, configuration });
      // A rollup that keeps no histograms counts by outcome alone.
      const row =
        counts.get(key) ?? new Array<number>(histograms === false ? 3 : 3 + DURATION_BUCKETS).fill(0);
      for (const index of [
        ['ok', 'failed', 'cancelled'].indexOf(outcome),
        ...(histograms === false ? [] : [3 + durationBucket(step.durationMs)]),
      ])
        row[index] = (row[index] ?? 0) + 1;
      counts.set(key, row);
    }
    return counts;
  };
  /** A rollup's rows plus the changes not folded yet, as a statistics read sums them, rows without calls left out. */
  const rollupWithChanges = async (each: (typeof ROLLUPS)[number]) => {
    const counted = await rollup(each);
    const size = each.histograms === false ? 3 : 3 + DURATION_BUCKETS;
    const changes = await database.handle.withSession((s) =>
      s.query<{ key: string; b: number; ok: string; failed: string; cancelled: string }>(
        `SELECT ${each.changeKey} AS key, b, ok::text AS ok, failed::text AS failed, cancelled::text AS cancelled
           FROM tool_call_changes`,
      ),
    );
    for (const change of changes) {
      const row = counted.get(change.key) ?? new Array<number>(size).fill(0);
      const [ok, failed, cancelled] = [change.ok, change.failed, change.cancelled].map(Number) as [
        number,
        number,
        number,
      ];
      row[0] = (row[0] ?? 0) + ok;
      row[1] = (row[1] ?? 0) + failed;
      row[2] = (row[2] ?? 0) + cancelled;
      if (size > 3) row[3 + change.b] = (row[3 + change.b] ?? 0) + ok + failed + cancelled;
      counted.set(change.key, row);
    }
    return new Map([...counted].filter(([, counts]) => counts.some((count) => count !== 0)));
  };
  /**
   * Every rollup with the changes not folded yet equals a recount; so it does
   * after a part of the changes is folded, and every rollup alone once all are.
   */
  const expectEveryRollupToEqualARecount = async (partialFold = 5) => {
    const recounts = await Promise.all(ROLLUPS.map(recount));
    const expectEach = async (read: typeof rollup) => {
      for (const [i, each] of ROLLUPS.entries())
        expect([each.table, await read(each)]).toEqual([each.table, recounts[i]]);
    };
    await expectEach(rollupWithChanges);
    await fold(partialFold);
    await expectEach(rollupWithChanges);
    await fold();
    expect(await pendingChanges()).toBe(0);
    await expectEach(rollup);
  };

  it('equals a recount of run_steps, histogram included, after inserts, updates and deletes: every rollup', async () => {
    await exec(`
      INSERT INTO runs (uuid, owner, configuration, status)
      VALUES (gen_random_uuid(), 'alice', 'recount', 'running'), (gen_random_uuid(), 'bob', 'recount', 'running'),
             (gen_random_uuid(), 'bob', 'other', 'running'), (gen_random_uuid(), 'carol', 'other', 'running');
      INSERT INTO run_steps (run_id, sequence, kind, occurred_at, duration_ms, tool_name, server, tool_is_error, tool_outcome)
      SELECT (array_agg(runs.id ORDER BY runs.id))[1 + g % 4], 100 + g,
             CASE WHEN g % 11 = 0 THEN 'llm' ELSE 'tool' END,
             timestamptz '2026-05-01 23:30Z' + (g % 3) * interval '20 minutes',
             (g * 7919) % 2000000, 'tool_' || (g % 4), CASE WHEN g % 9 = 0 THEN NULL ELSE 'srv_' || (g % 2) END,
             g % 6 = 0, CASE WHEN g % 11 = 0 THEN NULL WHEN g % 12 = 0 THEN 'cancelled' WHEN g % 6 = 0 THEN 'failed' END
        FROM runs, generate_series(1, 300) AS g WHERE runs.configuration IN ('recount', 'other') GROUP BY g;`);
    for (const each of ROLLUPS) expect((await recount(each)).size).toBeGreaterThan(2);
    await expectEveryRollupToEqualARecount();
    // Durations move between buckets, calls between hours, days, servers, outcomes and runs.
    await exec(`UPDATE run_steps SET duration_ms = duration_ms / 3 + 1 WHERE sequence % 4 = 0;
      UPDATE run_steps SET occurred_at = occurred_at + interval '3 days', server = NULL WHERE sequence % 5 = 0;
      UPDATE run_steps SET occurred_at = occurred_at + interval '10 minutes' WHERE sequence % 13 = 0;
      UPDATE run_steps SET tool_is_error = NOT tool_is_error WHERE tool_outcome IS NULL AND sequence % 7 = 0;
      UPDATE run_steps SET kind = 'tool_write', tool_is_error = NULL, tool_outcome = NULL WHERE sequence % 17 = 0;`);
    await expectEveryRollupToEqualARecount();
    await exec('DELETE FROM run_steps WHERE sequence % 3 = 0');
    await expectEveryRollupToEqualARecount();
  });

  it('follows a run: its owner or configuration changing, its steps moving to another run, the run deleted', async () => {
    await exec(`
      INSERT INTO runs (uuid, owner, configuration, status)
      VALUES (gen_random_uuid(), 'carol', 'move', 'running'), (gen_random_uuid(), 'dave', 'move', 'running');
      INSERT INTO run_steps (run_id, sequence, kind, occurred_at, duration_ms, tool_name, server, tool_is_error, tool_outcome)
      SELECT runs.id, g, 'tool', timestamptz '2026-05-02 10:00Z' + g * interval '7 minutes', g * 13,
             'tool_' || (g % 3), 'srv', g % 4 = 0, CASE WHEN g % 8 = 0 THEN 'cancelled' WHEN g % 4 = 0 THEN 'failed' END
        FROM runs, generate_series(1, 40) AS g WHERE runs.configuration = 'move';`);
    await expectEveryRollupToEqualARecount();
    await exec(`UPDATE runs SET owner = 'erin' WHERE owner = 'carol';
      UPDATE runs SET configuration = 'moved' WHERE owner = 'dave';`);
    await expectEveryRollupToEqualARecount();
    await exec(`UPDATE run_steps SET run_id = (SELECT id FROM runs WHERE owner = 'dave'), sequence = sequence + 1000
      WHERE run_id = (SELECT id FROM runs WHERE owner = 'erin') AND sequence > 30;`);
    await expectEveryRollupToEqualARecount();
    await exec(`DELETE FROM runs WHERE owner = 'erin'`);
    await expectEveryRollupToEqualARecount();
    for (const each of ROLLUPS.filter(({ key }) => key.includes('owner'))) {
      expect((await rollup(each)).size).toBeGreaterThan(0);
      expect([...(await rollup(each)).keys()].some((key) => key.includes('erin'))).toBe(false);
    }
  });

  it(
    'equals a recount after many random writes of every kind: every rollup',
    async () => {
      // A fixed seed: a failure can be replayed.
      let seed = 20_261_203;
      const random = (n: number) => {
        seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
        return seed % n;
      };
      await exec(`
      INSERT INTO runs (uuid, owner, configuration, status)
      SELECT gen_random_uuid(), 'owner_' || (g % 4), 'config_' || (g % 3), 'running' FROM generate_series(1, 8) AS g;`);
      const writes = [
        () => {
          const failing = 2 + random(5);
          return `INSERT INTO run_steps (run_id, sequence, kind, occurred_at, duration_ms, tool_name, server, tool_is_error, tool_outcome)
          SELECT (SELECT id FROM runs ORDER BY id OFFSET ${random(8)} LIMIT 1), 10000 * ${1 + random(1000)} + g,
                 CASE WHEN g % 7 = 0 THEN 'llm' ELSE 'tool' END,
                 timestamptz '2026-03-01 22:00Z' + (g * ${1 + random(97)}) * interval '11 minutes',
                 (g * ${1 + random(7919)}) % 300000, 'tool_' || (g % 5),
                 CASE WHEN g % 11 = 0 THEN NULL ELSE 'srv_' || (g % 3) END,
                 g % ${failing} = 0,
                 CASE WHEN g % 7 = 0 OR g % ${2 + random(3)} = 0 THEN NULL WHEN g % ${failing} <> 0 THEN 'ok'
                      WHEN g % 2 = 0 THEN 'failed' ELSE 'cancelled' END
            FROM generate_series(1, ${1 + random(40)}) AS g
          ON CONFLICT DO NOTHING`;
        },
        () =>
          `UPDATE run_steps SET occurred_at = occurred_at + interval '${random(3000)} minutes' WHERE sequence % ${2 + random(6)} = 0`,
        () =>
          `UPDATE run_steps SET server = ${random(4) === 0 ? 'NULL' : `'srv_${random(4)}'`}, tool_name = 'tool_${random(6)}' WHERE sequence % ${2 + random(6)} = 1`,
        () => `UPDATE run_steps SET duration_ms = ${random(2_000_000)} WHERE sequence % ${2 + random(9)} = 2`,
        () =>
          `UPDATE run_steps SET tool_is_error = NOT tool_is_error, tool_outcome = NULL WHERE kind = 'tool' AND sequence % ${2 + random(5)} = 0`,
        () => {
          const [source, target] = [random(8), random(8)].map(
            (n) => `(SELECT id FROM runs ORDER BY id OFFSET ${n} LIMIT 1)`,
          );
          return `UPDATE run_steps SET run_id = ${target} WHERE run_id = ${source} AND sequence % ${2 + random(4)} = 0
                  AND sequence NOT IN (SELECT sequence FROM run_steps WHERE run_id = ${target})`;
        },
        () => `DELETE FROM run_steps WHERE sequence % ${2 + random(9)} = ${random(2)}`,
        () =>
          `UPDATE runs SET owner = 'owner_${random(5)}' WHERE id = (SELECT id FROM runs ORDER BY id OFFSET ${random(8)} LIMIT 1)`,
        () => `UPDATE runs SET configuration = 'config_${random(4)}' WHERE id % ${2 + random(3)} = 0`,
      ];
      for (let round = 0; round < 12; round += 1) {
        for (let write = 0; write < 4; write += 1) {
          const statement = writes[random(writes.length)]?.() ?? '';
          // Some writes in a transaction of several statements, one rolled back.
          if (random(4) === 0) await exec(`BEGIN; ${statement}; ${writes[0]?.() ?? ''}; COMMIT;`);
          else if (random(8) === 0) await exec(`BEGIN; ${statement}; ROLLBACK;`);
          else await exec(statement);
        }
        await expectEveryRollupToEqualARecount();
      }
      // Several keys in each rollup (one of all time has a key per combination of its fields, no time).
      for (const each of ROLLUPS)
        expect([each.table, (await recount(each)).size > (each.time === 'all' ? 3 : 5)]).toEqual([
          each.table,
          true,
        ]);
      // A run deleted with its steps, then a rebuild: the same rollups, recounted from the rows.
      await exec('DELETE FROM runs WHERE id = (SELECT min(id) FROM runs)');
      await expectEveryRollupToEqualARecount();
      const before = await Promise.all(ROLLUPS.map(rollup));
      await exec('SELECT tool_outcome_rollups_rebuild()');
      expect(await Promise.all(ROLLUPS.map(rollup))).toEqual(before);
      await expectEveryRollupToEqualARecount();
      // A rebuild with changes not folded yet counts them from run_steps, and leaves none to fold.
      await exec(writes[0]?.() ?? '');
      expect(await pendingChanges()).toBeGreaterThan(0);
      await exec('SELECT tool_outcome_rollups_rebuild()');
      expect(await pendingChanges()).toBe(0);
      const recounts = await Promise.all(ROLLUPS.map(recount));
      expect(await Promise.all(ROLLUPS.map(rollup))).toEqual(recounts);
    },
    HEAVY_TEST_MS,
  );

  it('loses and counts twice nothing when a fold ends before its commit', async () => {
    await exec(insertSteps);
    await exec(insertSteps.replace("'alice'", "'bob'"));
    const pending = await pendingChanges();
    expect(pending).toBeGreaterThan(1);
    // A fold rolled back (its instance gone mid-batch) leaves the changes and the rollups as they were.
    await exec('BEGIN; SELECT tool_outcome_rollups_fold(1); ROLLBACK;');
    expect(await pendingChanges()).toBe(pending);
    for (const each of ROLLUPS) expect(await rollup(each)).toEqual(new Map());
    await fold(1);
    expect(await pendingChanges()).toBe((pending ?? 0) - 1);
    await expectEveryRollupToEqualARecount();
  });

  it('refuses a histogram outside the buckets, with a NULL, or not trimmed, writing nothing', async () => {
    const serverToolDaily = ROLLUPS.find((each) => each.table === 'stats_server_tool_daily');
    if (!serverToolDaily) throw new Error('no rollup by server and tool per day');
    const before = await rollup(serverToolDaily);
    for (const durations of [
      `array_fill(1::bigint, ARRAY[${DURATION_BUCKETS + 1}])`,
      `array_fill(1::bigint, ARRAY[2], ARRAY[0])`,
      `array_fill(1::bigint, ARRAY[2], ARRAY[${DURATION_BUCKETS}])`,
      `array_fill(1::bigint, ARRAY[3]) || NULL::bigint`,
      `'{{1,1},{1,1}}'::bigint[]`,
      `'{0,1}'::bigint[]`,
      `'[3:4]={1,0}'::bigint[]`,
    ]) {
      const refusal = await exec(
        `INSERT INTO stats_server_tool_daily (day, server, tool_name, ok, durations) VALUES ('2026-06-01', 'x', 'y', 1, ${durations})`,
      ).catch((error: unknown) => error);
      expect([durations, (refusal as { code?: string }).code]).toEqual([durations, '23514']);
      expect(String((refusal as Error).message)).toContain('stats_server_tool_daily_shape');
    }
    expect(await rollup(serverToolDaily)).toEqual(before);
    // Trimmed to its buckets with calls, or empty: each a histogram the rollups hold.
    for (const [server, durations] of [
      ['whole', `array_fill(1::bigint, ARRAY[${DURATION_BUCKETS}])`],
      ['one', `'[7:7]={2}'::bigint[]`],
      ['none', `'{}'::bigint[]`],
    ])
      await exec(
        `INSERT INTO stats_server_tool_daily (day, server, tool_name, ok, durations) VALUES ('2026-06-01', '${server}', 'y', 1, ${durations})`,
      );
  });

  it('keeps a histogram row only for a duration bucket the domain has, writing nothing else', async () => {
    const split = ROLLUPS.filter((each) => each.durations !== null);
    expect(split.length).toBe(2);
    for (const { durations, time } of split) {
      const at = time === 'day' ? `'2026-06-01'` : `'2026-06-01 10:00Z'`;
      const insert = (bucket: number) =>
        exec(`INSERT INTO ${durations} (${time}, owner, configuration, server, tool_name, duration_bucket, calls)
              VALUES (${at}, 'o', 'c', 's', 't', ${bucket}, 1)`);
      const count = () =>
        database.handle.withSession((s) =>
          s.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${durations}`),
        );
      const before = await count();
      for (const outside of [-1, DURATION_BUCKETS]) {
        const refusal = await insert(outside).catch((error: unknown) => error);
        expect([durations, (refusal as { code?: string }).code]).toEqual([durations, '23514']);
        expect(String((refusal as Error).message)).toContain(`${durations}_bucket`);
      }
      expect(await count()).toEqual(before);
      await insert(0);
      await insert(DURATION_BUCKETS - 1);
      expect(await count()).toEqual([{ n: (before[0]?.n ?? 0) + 2 }]);
    }
  });

  it('refuses a weekly row whose week does not start on a Monday, writing nothing', async () => {
    const weekly = ROLLUPS.filter((each) => each.time === 'week');
    expect(weekly.length).toBe(10);
    for (const { table, columns } of weekly) {
      const keys = columns.map((column) => `'${column}-1'`).join(', ');
      const insert = (week: string) =>
        exec(`INSERT INTO ${table} (week, ${columns.join(', ')}, ok) VALUES ('${week}', ${keys}, 1)`);
      const count = () =>
        database.handle.withSession((s) => s.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`));
      const before = await count();
      for (const notMonday of ['2026-06-02', '2026-06-07']) {
        const refusal = await insert(notMonday).catch((error: unknown) => error);
        expect([table, (refusal as { code?: string }).code]).toEqual([table, '23514']);
        expect(String((refusal as Error).message)).toContain(`${table}_monday`);
      }
      expect(await count()).toEqual(before);
      await insert('2026-06-01');
      expect(await count()).toEqual([{ n: (before[0]?.n ?? 0) + 1 }]);
    }
  });

  it('is emptied by TRUNCATE run_steps, in the same transaction, and counts again from zero', async () => {
    // Changes not folded yet go with the truncate too.
    await exec(insertSteps);
    expect(await pendingChanges()).toBeGreaterThan(0);
    await exec('TRUNCATE run_steps');
    expect(await pendingChanges()).toBe(0);
    expect(await daily()).toEqual([]);
    await exec(insertSteps);
    expect(await daily()).toEqual([{ server: 'fs', ok: 1, failed: 1, cancelled: 1 }]);
    await exec('TRUNCATE run_steps');
    expect(await daily()).toEqual([]);
    for (const each of ROLLUPS) expect(await rollup(each)).toEqual(new Map());
    await exec(insertSteps);
    expect(await daily()).toEqual([{ server: 'fs', ok: 1, failed: 1, cancelled: 1 }]);
    // Rolled back with the truncate: the rollup keeps its rows.
    await exec('BEGIN; TRUNCATE run_steps, runs CASCADE; ROLLBACK;');
    expect(await daily()).toEqual([{ server: 'fs', ok: 1, failed: 1, cancelled: 1 }]);
    await expectEveryRollupToEqualARecount();
    await exec('TRUNCATE runs CASCADE');
    for (const each of ROLLUPS) expect(await rollup(each)).toEqual(new Map());
  });
});
