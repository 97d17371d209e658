import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STEP_KINDS } from '../../src/domain/step-kind.ts';
import { TOOL_OUTCOMES } from '../../src/domain/tool-outcome.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

interface Row {
  kind: string;
  isError: boolean | null;
  outcome: string | null;
}

const nonToolKinds = STEP_KINDS.filter((kind) => kind !== 'tool');

/** Each contradiction of "a step cannot disagree with itself" (docs/architecture.md), and the constraint that must refuse it. */
const refused: Array<Row & { constraint: string }> = [
  ...nonToolKinds.flatMap((kind) =>
    TOOL_OUTCOMES.map((outcome) => ({
      kind,
      isError: outcome !== 'ok',
      outcome,
      constraint: 'run_steps_tool_outcome_only_on_tool_steps',
    })),
  ),
  { kind: 'tool', isError: true, outcome: 'ok', constraint: 'run_steps_tool_outcome_agrees_with_is_error' },
  {
    kind: 'tool',
    isError: false,
    outcome: 'failed',
    constraint: 'run_steps_tool_outcome_agrees_with_is_error',
  },
  {
    kind: 'tool',
    isError: false,
    outcome: 'cancelled',
    constraint: 'run_steps_tool_outcome_agrees_with_is_error',
  },
  ...TOOL_OUTCOMES.map((outcome) => ({
    kind: 'tool',
    isError: null,
    outcome,
    constraint: 'run_steps_tool_outcome_agrees_with_is_error',
  })),
  { kind: 'tool', isError: true, outcome: 'aborted', constraint: 'run_steps_tool_outcome_known' },
  { kind: 'tool', isError: true, outcome: 'CANCELLED', constraint: 'run_steps_tool_outcome_known' },
  { kind: 'thought', isError: null, outcome: null, constraint: 'run_steps_kind_known' },
];

const accepted: Row[] = [
  { kind: 'tool', isError: false, outcome: 'ok' },
  { kind: 'tool', isError: true, outcome: 'failed' },
  { kind: 'tool', isError: true, outcome: 'cancelled' },
  // legacy rows: the boolean only
  { kind: 'tool', isError: true, outcome: null },
  { kind: 'tool', isError: false, outcome: null },
  ...STEP_KINDS.map((kind) => ({ kind, isError: null, outcome: null })),
];

describe.each(backendNames)('CHECK constraints refuse what bypasses the service (%s)', (backend) => {
  let database: TestDatabase;
  let runId = 0;
  let sequence = 0;

  const count = async () => {
    const [row] = await database.handle.withSession((s) =>
      s.query<{ n: number }>('SELECT count(*)::int AS n FROM run_steps'),
    );
    return row?.n ?? -1;
  };
  const insert = (row: Row) =>
    database.handle.withSession((s) =>
      s.query(
        `INSERT INTO run_steps (run_id, sequence, kind, occurred_at, tool_name, tool_is_error, tool_outcome)
         VALUES ($1, $2, $3, now(), 'search', $4, $5)`,
        [runId, ++sequence, row.kind, row.isError, row.outcome],
      ),
    );

  beforeAll(async () => {
    database = await openTestDatabase(backend);
    const [run] = await database.handle.withSession((s) =>
      s.query<{ id: number }>(
        "INSERT INTO runs (uuid, owner, configuration, status) VALUES (gen_random_uuid(), 'alice', 'c', 'running') RETURNING id::int AS id",
      ),
    );
    runId = run?.id ?? 0;
  });
  afterAll(async () => database?.dispose());

  it.each(refused)(
    'refuses kind=$kind tool_is_error=$isError tool_outcome=$outcome ($constraint)',
    async (row) => {
      const before = await count();
      const error = await insert(row).then(
        () => null,
        (e: unknown) => e as { code?: string; constraint?: string; message?: string },
      );
      expect(error, 'the insert should have been refused').not.toBeNull();
      expect(error?.code).toBe('23514');
      expect(error?.constraint ?? error?.message).toContain(row.constraint);
      expect(await count()).toBe(before);
    },
  );

  it.each(accepted)('accepts kind=$kind tool_is_error=$isError tool_outcome=$outcome', async (row) => {
    const before = await count();
    await insert(row);
    expect(await count()).toBe(before + 1);
  });
});
