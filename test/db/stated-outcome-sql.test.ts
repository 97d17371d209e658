import { asc, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { statedOutcomeSql } from '../../src/db/stated-outcome-sql.ts';
import { RunStep } from '../../src/domain/run-step.ts';
import { statedOutcome } from '../../src/domain/stated-outcome.ts';
import { STEP_KINDS } from '../../src/domain/step-kind.ts';
import { TOOL_OUTCOMES } from '../../src/domain/tool-outcome.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

const booleans = [null, true, false] as const;
const outcomes = [null, ...TOOL_OUTCOMES] as const;
const combinations = STEP_KINDS.flatMap((kind) =>
  booleans.flatMap((toolIsError) => outcomes.map((toolOutcome) => ({ kind, toolIsError, toolOutcome }))),
);

describe.each(backendNames)('the boolean-first rule in SQL agrees with TypeScript (%s)', (backend) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
  });
  afterAll(async () => database?.dispose());

  it('for every combination of kind, tool_is_error and tool_outcome, evaluated by the SQL function', async () => {
    const rows = await database.handle.withSession((session) =>
      session.query<{ i: number; stated: string | null }>(
        `SELECT i::int AS i, stated_tool_outcome(k, e, o) AS stated
           FROM unnest($1::int[], $2::text[], $3::boolean[], $4::text[]) AS c(i, k, e, o) ORDER BY i`,
        [
          combinations.map((_, i) => i),
          combinations.map((c) => c.kind),
          combinations.map((c) => c.toolIsError),
          combinations.map((c) => c.toolOutcome),
        ],
      ),
    );
    expect(rows).toHaveLength(combinations.length);
    for (const row of rows) {
      const combination = combinations[row.i];
      if (!combination) throw new Error(`no combination ${row.i}`);
      expect({ ...combination, stated: row.stated }).toEqual({
        ...combination,
        stated: statedOutcome(combination.kind, combination.toolIsError, combination.toolOutcome),
      });
    }
  });

  it('for every combination the table accepts (exactly those RunStep accepts), read through the query expression', async () => {
    const db = database.handle.db;
    const [run] = await db
      .insert(runs)
      .values({ uuid: crypto.randomUUID(), owner: 'alice', configuration: 'c', status: 'running' })
      .returning({ id: runs.id });
    if (!run) throw new Error('no run');
    let inserted = 0;
    for (const [index, combination] of combinations.entries()) {
      let storedByDatabase = true;
      try {
        await db.transaction(async (tx) => {
          await tx
            .insert(runSteps)
            .values({ runId: run.id, sequence: index + 1, occurredAt: new Date(), ...combination });
        });
        inserted += 1;
      } catch {
        storedByDatabase = false;
      }
      // The value object and the CHECK constraints state one invariant: they accept exactly the same rows.
      let acceptedByRunStep = true;
      try {
        new RunStep({ sequence: 1, round: 0, durationMs: 0, occurredAt: new Date(), ...combination });
      } catch {
        acceptedByRunStep = false;
      }
      expect({ ...combination, storedByDatabase }).toEqual({
        ...combination,
        storedByDatabase: acceptedByRunStep,
      });
    }
    // kinds x (3 legacy/none pairs) + 3 valid outcome pairs on tool steps
    expect(inserted).toBe(STEP_KINDS.length * 3 + 3);
    const read = await db
      .select({
        kind: runSteps.kind,
        toolIsError: runSteps.toolIsError,
        toolOutcome: runSteps.toolOutcome,
        stated: statedOutcomeSql(),
      })
      .from(runSteps)
      .where(eq(runSteps.runId, run.id))
      .orderBy(asc(runSteps.sequence));
    expect(read).toHaveLength(inserted);
    for (const row of read) {
      expect(row.stated).toBe(statedOutcome(row.kind, row.toolIsError, row.toolOutcome));
      // A non-tool step states no outcome, whatever its boolean says.
      if (row.kind !== 'tool') expect(row.stated).toBeNull();
    }
    const grouped = await db
      .select({ stated: statedOutcomeSql(), n: sql<number>`count(*)::int` })
      .from(runSteps)
      .groupBy(statedOutcomeSql());
    // Only the tool step's rows state an outcome: its legacy pair (true, false) and its three typed ones.
    expect(Object.fromEntries(grouped.map((g) => [String(g.stated), g.n]))).toEqual({
      null: STEP_KINDS.length + 2 * (STEP_KINDS.length - 1),
      ok: 2,
      failed: 2,
      cancelled: 1,
    });
  });
});
