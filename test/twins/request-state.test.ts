// Twins: how a request for a person reads at an instant, in TypeScript (requestStateAt,
// src/domain/human-request.ts) and in the SQL that picks the inbox and the requests past their
// expiry (src/db/human-requests.ts). Every combination of stored state, expiry and run end is
// written, and both sides are asked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRequests, overdueRequests } from '../../src/db/human-requests.ts';
import { type RequestState, requestStateAt } from '../../src/domain/human-request.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

const now = new Date('2026-12-06T12:00:00.000Z');
const EXPIRIES = { none: null, past: new Date(now.getTime() - 1), now, future: new Date(now.getTime() + 1) };
const STATES: RequestState[] = ['open', 'approved', 'expired', 'cancelled'];

describe.each(backendNames)('a request as the domain and the SQL read it (%s)', (backend) => {
  let database: TestDatabase;
  const cases: Array<{ uuid: string; state: RequestState; expiresAt: Date | null; finishedAt: Date | null }> =
    [];

  beforeAll(async () => {
    database = await openTestDatabase(backend);
    await database.handle.withSession(async (s) => {
      for (const finished of [false, true]) {
        const [run] = await s.query<{ id: number }>(
          `INSERT INTO runs (uuid, owner, configuration, status, termination_reason, finished_at)
           VALUES (gen_random_uuid(), 'a', 'c', $1, $2, $3) RETURNING id`,
          finished ? ['cancelled', 'cancelled', now.toISOString()] : ['running', null, null],
        );
        for (const state of STATES) {
          for (const expiresAt of Object.values(EXPIRIES)) {
            const [row] = await s.query<{ uuid: string }>(
              `INSERT INTO human_requests (uuid, run_id, kind, source, requested_by, requested_at, expires_at,
                                           tool_name, state, decided_at)
               VALUES (gen_random_uuid(), $1, 'approval', 'api', 'a', $2, $3, 't', $4, $5) RETURNING uuid`,
              [
                run?.id,
                new Date(now.getTime() - 60_000).toISOString(),
                expiresAt?.toISOString() ?? null,
                state,
                state === 'open' ? null : now.toISOString(),
              ],
            );
            cases.push({ uuid: row?.uuid ?? '', state, expiresAt, finishedAt: finished ? now : null });
          }
        }
      }
    });
  });
  afterAll(async () => database?.dispose());

  it('puts in the inbox exactly the requests the domain reads as open', async () => {
    const inbox = await openRequests(database.handle.db, null, now, 200, 'someone else');
    const open = cases.filter((c) => requestStateAt(c, c, now) === 'open').map((c) => c.uuid);
    expect(open.length).toBeGreaterThan(0);
    expect(inbox.map((entry) => entry.request.uuid).sort()).toEqual(open.sort());
  });

  it('closes as past their expiry exactly the stored-open requests the domain reads as expired', async () => {
    const due = await overdueRequests(database.handle.db, now, 200);
    const expired = cases
      .filter((c) => c.state === 'open' && requestStateAt(c, c, now) === 'expired')
      .map((c) => c.uuid);
    expect(expired.length).toBeGreaterThan(0);
    expect(due.map((entry) => entry.request.uuid).sort()).toEqual(expired.sort());
  });
});
