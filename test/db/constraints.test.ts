import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERMISSIONS } from '../../src/domain/permissions.ts';
import { RUN_STATUSES, TERMINATION_REASONS } from '../../src/domain/run-status.ts';
import { STEP_KINDS } from '../../src/domain/step-kind.ts';
import { TOOL_OUTCOMES } from '../../src/domain/tool-outcome.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

interface Row {
  kind: string;
  isError: boolean | null;
  outcome: string | null;
}

const nonToolKinds = STEP_KINDS.filter((kind) => kind !== 'tool');

/** Each contradiction of SPEC 2.5, and the constraint that must refuse it. */
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

  it('accepts every permission of the domain on a key, and nothing else', async () => {
    const insertKey = (permissions: string[]) =>
      database.handle.withSession((s) =>
        s.query(
          "INSERT INTO api_keys (actor, key_hash, key_prefix, permissions) VALUES ('a', gen_random_uuid()::text, 'p', $1)",
          [permissions],
        ),
      );
    await insertKey([...PERMISSIONS]);
    for (const permission of PERMISSIONS) await insertKey([permission]);
    await expect(insertKey(['read_own_runs', 'become_root'])).rejects.toMatchObject({ code: '23514' });
  });

  it('accepts every run status and termination reason of the domain, and nothing else', async () => {
    const tryRun = (status: string, reason: string | null) =>
      database.handle.withSession((s) =>
        s.query(
          "INSERT INTO runs (uuid, owner, configuration, status, termination_reason) VALUES (gen_random_uuid(), 'a', 'c', $1, $2)",
          [status, reason],
        ),
      );
    for (const status of RUN_STATUSES) await tryRun(status, null);
    for (const reason of TERMINATION_REASONS) await tryRun('completed', reason);
    await expect(tryRun('paused', null)).rejects.toMatchObject({ code: '23514' });
    await expect(tryRun('failed', 'gave_up')).rejects.toMatchObject({ code: '23514' });
  });
});
