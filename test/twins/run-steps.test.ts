// Twins over the rows of run_steps:
// - the RunStep value object (src/domain/run-step.ts) and the CHECK constraints on run_steps (migrations)
//   accept exactly the same combinations of kind, tool_is_error and tool_outcome;
// - the query expression `statedOutcomeSql()` (src/db/stated-outcome-sql.ts) reads every stored row as
//   `statedOutcome` (src/domain/stated-outcome.ts) does.
import { asc, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import type { Database } from '../../src/db/connection.ts';
import { statedOutcomeSql } from '../../src/db/stated-outcome-sql.ts';
import { RunStep } from '../../src/domain/run-step.ts';
import { statedOutcome } from '../../src/domain/stated-outcome.ts';
import { STEP_KINDS } from '../../src/domain/step-kind.ts';
import { TOOL_OUTCOMES } from '../../src/domain/tool-outcome.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { withRollback } from '../support/rollback.ts';

const booleans = [null, true, false] as const;
const outcomes = [null, ...TOOL_OUTCOMES] as const;
const combinations = STEP_KINDS.flatMap((kind) =>
  booleans.flatMap((toolIsError) => outcomes.map((toolOutcome) => ({ kind, toolIsError, toolOutcome }))),
);

describe.each(backendNames)(
  'run_steps rows: RunStep vs CHECK, statedOutcomeSql vs statedOutcome (%s)',
  (backend) => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await openTestDatabase(backend);
    });
    afterAll(async () => database?.dispose());

    /** Tries every combination on a run of its own; which ones the table stored. */
    async function storeEvery(db: Database) {
      const [run] = await db
        .insert(runs)
        .values({ uuid: crypto.randomUUID(), owner: 'alice', configuration: 'c', status: 'running' })
        .returning({ id: runs.id });
      if (!run) throw new Error('no run');
      const stored: boolean[] = [];
      for (const [index, combination] of combinations.entries()) {
        try {
          await db.transaction(async (tx) => {
            await tx
              .insert(runSteps)
              .values({ runId: run.id, sequence: index + 1, occurredAt: new Date(), ...combination });
          });
          stored.push(true);
        } catch {
          stored.push(false);
        }
      }
      return { runId: run.id, stored };
    }

    it('RunStep and the CHECK constraints accept exactly the same combinations of kind, tool_is_error and tool_outcome', async () => {
      await withRollback(database.handle.db, async (db) => {
        const { stored } = await storeEvery(db);
        for (const [index, combination] of combinations.entries()) {
          let acceptedByRunStep = true;
          try {
            new RunStep({ sequence: 1, round: 0, durationMs: 0, occurredAt: new Date(), ...combination });
          } catch {
            acceptedByRunStep = false;
          }
          expect({ ...combination, storedByDatabase: stored[index] }).toEqual({
            ...combination,
            storedByDatabase: acceptedByRunStep,
          });
        }
        // kinds x (3 legacy/none pairs) + 3 valid outcome pairs on tool steps
        expect(stored.filter(Boolean)).toHaveLength(STEP_KINDS.length * 3 + 3);
      });
    });

    it('statedOutcomeSql() reads every row the table accepts as statedOutcome does', async () => {
      await withRollback(database.handle.db, async (db) => {
        const { runId, stored } = await storeEvery(db);
        const read = await db
          .select({
            kind: runSteps.kind,
            toolIsError: runSteps.toolIsError,
            toolOutcome: runSteps.toolOutcome,
            stated: statedOutcomeSql(),
          })
          .from(runSteps)
          .where(eq(runSteps.runId, runId))
          .orderBy(asc(runSteps.sequence));
        expect(read).toHaveLength(stored.filter(Boolean).length);
        for (const row of read) {
          expect(row.stated).toBe(statedOutcome(row.kind, row.toolIsError, row.toolOutcome));
          // A non-tool step states no outcome, whatever its boolean says.
          if (row.kind !== 'tool') expect(row.stated).toBeNull();
        }
        const grouped = await db
          .select({ stated: statedOutcomeSql(), n: sql<number>`count(*)::int` })
          .from(runSteps)
          .where(eq(runSteps.runId, runId))
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
  },
);
