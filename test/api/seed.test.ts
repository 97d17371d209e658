import { readFileSync } from 'node:fs';
import { and, eq, isNotNull, isNull } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { DEMO_RUN_UUID, seedDemoData } from '../../src/ledger/seed.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

/** The first query the README offers to paste into GraphiQL. */
function readmeQuery(): string {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const match = /<!-- first-query -->\s*```graphql\n([\s\S]*?)```/.exec(readme);
  if (!match?.[1]) throw new Error('README.md has no first query block');
  return match[1];
}

describe.each(backendNames)('demo data (%s)', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await openTestApi(backend);
    const summary = await seedDemoData(api.database.handle.db, new Date('2026-12-01T12:00:00Z'));
    expect(summary.skipped).toBe(false);
  }, 120_000);
  afterAll(async () => api?.dispose());

  it('seeding again writes nothing', async () => {
    const before = await api.database.handle.db.$count(runSteps);
    expect((await seedDemoData(api.database.handle.db)).skipped).toBe(true);
    expect(await api.database.handle.db.$count(runSteps)).toBe(before);
  });

  it("the README's first query shows all three outcomes, legacy steps included", async () => {
    const result = await api.query<{
      runs: { edges: Array<{ node: { status: string } }> };
      run: {
        status: string;
        toolOutcomeCounts: Record<string, number | null>;
        timeline: Array<{ outcome: string | null }>;
      };
    }>(readmeQuery());
    expect(result.errors).toBeUndefined();
    expect(result.data?.run.status).toBe('CANCELLED');
    const outcomes = new Set(result.data?.run.timeline.map((e) => e.outcome));
    expect([...outcomes].sort()).toEqual(['CANCELLED', 'FAILED', 'OK', null].sort());
    const counts = result.data?.run.toolOutcomeCounts ?? {};
    expect(counts.failureRate).toBe((counts.failed ?? 0) / ((counts.ok ?? 0) + (counts.failed ?? 0)));

    const db = api.database.handle.db;
    const [demo] = await db.select().from(runs).where(eq(runs.uuid, DEMO_RUN_UUID));
    const legacy = await db
      .select({ sequence: runSteps.sequence, isError: runSteps.toolIsError })
      .from(runSteps)
      .where(
        and(eq(runSteps.runId, demo?.id ?? 0), isNull(runSteps.toolOutcome), isNotNull(runSteps.toolIsError)),
      );
    expect(legacy.map((l) => l.isError).sort()).toEqual([false, false, true]);
    expect(result.data?.runs.edges.every((e) => e.node.status === 'CANCELLED')).toBe(true);
    const statuses = await db.selectDistinct({ status: runs.status }).from(runs);
    // Ended runs of every kind, and open runs that wait for a person (the viewer lists those first).
    expect(statuses.map((s) => s.status).sort()).toEqual([
      'cancelled',
      'completed',
      'failed',
      'waiting_for_approval',
      'waiting_for_input',
    ]);
  });

  it('the runs that wait have their requests: the inbox holds an approval and a form to answer', async () => {
    // Someone who is neither run's owner: nobody decides their own runs' requests.
    const carol = { actor: 'carol' };
    const result = await api.query<{
      openRequests: Array<{
        uuid: string;
        kind: string;
        toolName: string | null;
        schema: { required?: string[] } | null;
        run: { uuid: string; status: string; owner: string };
      }>;
    }>('{ openRequests(first: 10) { uuid kind toolName schema run { uuid status owner } } }', {}, carol);
    expect(result.errors).toBeUndefined();
    const requests = result.data?.openRequests ?? [];
    expect(requests.map((r) => [r.kind, r.run.status, r.run.owner]).sort()).toEqual([
      ['APPROVAL', 'WAITING_FOR_APPROVAL', 'bob'],
      ['INPUT', 'WAITING_FOR_INPUT', 'alice'],
    ]);
    const approval = requests.find((r) => r.kind === 'APPROVAL');
    const input = requests.find((r) => r.kind === 'INPUT');
    expect(approval?.toolName).toBe('create_release');
    expect(input?.schema?.required).toEqual(['audience']);
    // Both can be decided: the runs run again (in a transaction rolled back after).
    const rollback = await api.beginRollback();
    try {
      const approved = await api.query<{ decideApproval: { __typename: string } }>(
        'mutation ($i: DecideApprovalInput!) { decideApproval(input: $i) { __typename } }',
        { i: { runUuid: approval?.run.uuid, request: approval?.uuid, decision: 'APPROVE' } },
        carol,
      );
      const answered = await api.query<{ provideInput: { __typename: string } }>(
        'mutation ($i: ProvideInputInput!) { provideInput(input: $i) { __typename } }',
        {
          i: {
            runUuid: input?.run.uuid,
            request: input?.uuid,
            values: { audience: 'operators', maxWords: 800 },
          },
        },
        carol,
      );
      expect([approved.data?.decideApproval.__typename, answered.data?.provideInput.__typename]).toEqual([
        'RequestRecordedSuccess',
        'RequestRecordedSuccess',
      ]);
    } finally {
      await rollback();
    }
  });
});
