import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
import { foldToolCallChanges, pendingToolCallChanges } from '../../src/db/tool-call-changes.ts';
import { StatsFolder } from '../../src/ledger/stats-folder.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const START = `mutation ($c: String!) { startRun(input: { configuration: $c }) {
  ... on StartRunSuccess { data { uuid } } } }`;
const RECORD = `mutation ($u: String!, $o: ToolOutcome!, $d: Int!) {
  recordToolResult(input: { runUuid: $u, round: 1, durationMs: $d, toolName: "read", server: "fs",
    result: { outcome: $o, content: "x" } }) { __typename } }`;
const STATS = `query ($c: [String!]!) {
  toolOutcomeStats(groupBy: [CONFIGURATION, SERVER], filter: { configurations: $c }) {
    groups { configuration counts { ok failed cancelled total } p50DurationMs } } }`;

type Counts = { ok: number; failed: number; cancelled: number; total: number };
type StatsAnswer = {
  toolOutcomeStats: { groups: Array<{ configuration: string; counts: Counts; p50DurationMs: number }> };
};
const OUTCOMES = ['OK', 'FAILED', 'CANCELLED'] as const;

/**
 * Writes store, statistics follow: a folder folds in the background (in
 * batches smaller than the writes, so a read meets rollups and changes not
 * folded yet at once), and every read is exact the moment a write commits.
 * On committed data: the folder's transactions are its own.
 */
describe.each(backendNames)('statistics that follow the writes (%s)', (backend) => {
  let api: TestApi;
  let folder: StatsFolder;
  beforeAll(async () => {
    api = await openTestApi(backend);
    folder = new StatsFolder(api.db, { intervalMs: 2, batchChanges: 3 });
    folder.start();
  });
  afterAll(async () => {
    await folder?.stop();
    await api?.dispose();
  });

  const start = async (configuration: string) => {
    const result = await api.query<{ startRun: { data: { uuid: string } } }>(START, { c: configuration });
    return result.data?.startRun.data.uuid ?? '';
  };
  const countsOf = async (configuration: string) => {
    const result = await api.query<StatsAnswer>(STATS, { c: [configuration] });
    expect(result.errors).toBeUndefined();
    return result.data?.toolOutcomeStats.groups.map((group) => group.counts) ?? [];
  };
  const tally = (ok: number, failed: number, cancelled: number): Counts => ({
    ok,
    failed,
    cancelled,
    total: ok + failed + cancelled,
  });

  it('counts a call the moment its write commits, while the folder folds and other writers write', async () => {
    const writers = 4;
    const callsEach = 18;
    const foldedBefore = await foldedRows();
    await Promise.all(
      Array.from({ length: writers }, async (_, writer) => {
        const configuration = `follow-${backend}-${writer}`;
        const uuid = await start(configuration);
        const expected = { ok: 0, failed: 0, cancelled: 0 };
        for (let call = 0; call < callsEach; call += 1) {
          const outcome = OUTCOMES[(call + writer) % 3] ?? 'OK';
          const recorded = await api.query<{ recordToolResult: { __typename: string } }>(RECORD, {
            u: uuid,
            o: outcome,
            d: 10 + call,
          });
          expect(recorded.data?.recordToolResult.__typename).toBe('RecordedStepsSuccess');
          expected[outcome === 'OK' ? 'ok' : outcome === 'FAILED' ? 'failed' : 'cancelled'] += 1;
          // Requests arrive by I/O, as over HTTP: in process, one promise chain after another would
          // never let the event loop reach the folder's timer.
          await new Promise((resolve) => setImmediate(resolve));
          expect([configuration, call, await countsOf(configuration)]).toEqual([
            configuration,
            call,
            [tally(expected.ok, expected.failed, expected.cancelled)],
          ]);
        }
      }),
    );
    // The folder folded along the way: the answers above came from rollups and changes alike.
    expect(await foldedRows()).toBeGreaterThan(foldedBefore);
  });

  it('counts updates, deletes and a run that changes configuration at once, folded or not', async () => {
    const configuration = `follow-edit-${backend}`;
    const uuid = await start(configuration);
    for (const outcome of ['OK', 'OK', 'FAILED', 'CANCELLED', 'FAILED'] as const)
      await api.query(RECORD, { u: uuid, o: outcome, d: 5 });
    expect(await countsOf(configuration)).toEqual([tally(2, 2, 1)]);
    await foldToolCallChanges(api.db, 1_000_000);
    const runId = sql`(select id from runs where uuid = ${uuid}::uuid)`;
    // An operator's fix: a failed call was in fact cancelled; the first call removed.
    await api.db.execute(
      sql`update run_steps set tool_outcome = 'cancelled' where run_id = ${runId} and sequence = 3`,
    );
    expect(await countsOf(configuration)).toEqual([tally(2, 1, 2)]);
    await api.db.execute(sql`delete from run_steps where run_id = ${runId} and sequence = 1`);
    expect(await countsOf(configuration)).toEqual([tally(1, 1, 2)]);
    const moved = `${configuration}-moved`;
    await api.db.execute(sql`update runs set configuration = ${moved} where uuid = ${uuid}::uuid`);
    expect(await countsOf(configuration)).toEqual([]);
    expect(await countsOf(moved)).toEqual([tally(1, 1, 2)]);
    await foldToolCallChanges(api.db, 1_000_000);
    expect(await countsOf(configuration)).toEqual([]);
    expect(await countsOf(moved)).toEqual([tally(1, 1, 2)]);
  });

  it('folds every change at last: none is left once the writes stop', async () => {
    const uuid = await start(`follow-drain-${backend}`);
    for (let call = 0; call < 10; call += 1) await api.query(RECORD, { u: uuid, o: 'OK', d: call });
    const deadline = Date.now() + 10_000;
    while ((await pendingToolCallChanges(api.db)).changes > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await pendingToolCallChanges(api.db)).toEqual({ changes: 0 });
    expect(await countsOf(`follow-drain-${backend}`)).toEqual([tally(10, 0, 0)]);
  });

  /** Rows of the hourly rollup by server: folded calls. */
  async function foldedRows(): Promise<number> {
    const [row] = await selectRows<{ calls: number | string }>(
      api.db,
      sql`select coalesce(sum(ok + failed + cancelled), 0) as calls from stats_server_hourly`,
    );
    return Number(row?.calls ?? 0);
  }
});
