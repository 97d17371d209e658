// Twins: lists of names the domain defines in TypeScript and the migrations repeat in CHECK constraints.
// - PERMISSIONS (src/domain/permissions.ts) and the CHECK on api_keys.permissions;
// - RUN_STATUSES and TERMINATION_REASONS (src/domain/run-status.ts) and the CHECKs on runs;
// - REQUEST_KINDS, REQUEST_SOURCES and REQUEST_STATES (src/domain/human-request.ts) and the CHECKs on human_requests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_KINDS, REQUEST_SOURCES, REQUEST_STATES } from '../../src/domain/human-request.ts';
import { PERMISSIONS } from '../../src/domain/permissions.ts';
import { RUN_STATUSES, TERMINATION_REASONS } from '../../src/domain/run-status.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

describe.each(backendNames)('domain lists and their CHECK constraints (%s)', (backend) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
  });
  afterAll(async () => database?.dispose());

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

  it('accepts every request kind, source and state of the domain, and nothing else', async () => {
    const [run] = await database.handle.withSession((s) =>
      s.query<{ id: number }>(
        "INSERT INTO runs (uuid, owner, configuration, status) VALUES (gen_random_uuid(), 'a', 'c', 'running') RETURNING id",
      ),
    );
    const tryRequest = (kind: string, source: string, state: string) =>
      database.handle.withSession((s) =>
        s.query(
          `INSERT INTO human_requests (uuid, run_id, kind, source, requested_by, requested_at, tool_name, prompt, schema, state, decided_at)
           VALUES (gen_random_uuid(), $1, $2, $3, 'a', now(), CASE WHEN $2 = 'approval' THEN 't' END,
                   CASE WHEN $2 = 'input' THEN 'p' END, CASE WHEN $2 = 'input' THEN '{}'::jsonb END,
                   $4, CASE WHEN $4 = 'open' THEN NULL ELSE now() END)`,
          [run?.id, kind, source, state],
        ),
      );
    const kindOf = (state: string) => (state === 'answered' || state === 'declined' ? 'input' : 'approval');
    for (const kind of REQUEST_KINDS)
      for (const source of REQUEST_SOURCES) await tryRequest(kind, source, 'open');
    for (const state of REQUEST_STATES) await tryRequest(kindOf(state), 'api', state);
    await expect(tryRequest('vote', 'api', 'open')).rejects.toMatchObject({ code: '23514' });
    await expect(tryRequest('approval', 'email', 'open')).rejects.toMatchObject({ code: '23514' });
    await expect(tryRequest('approval', 'api', 'answered')).rejects.toMatchObject({ code: '23514' });
    await expect(tryRequest('approval', 'api', 'ignored')).rejects.toMatchObject({ code: '23514' });
  });
});
