import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolResult } from '../../src/domain/tool-result.ts';
import { appendSteps } from '../../src/ledger/record-steps.ts';
import { createRun } from '../../src/ledger/start-run.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const listQuery = `query ($first: Int) {
  runs(first: $first) {
    edges { node {
      uuid
      toolOutcomeCounts { ok failed cancelled total failureRate }
      steps(first: 10) { edges { node { sequence kind outcome outcomeLabel run { uuid } } } pageInfo { hasNextPage } }
    } }
  }
}`;

describe.each(backendNames)('a page of runs costs a bounded number of statements (%s)', (backend) => {
  let api: TestApi;
  const statements: string[] = [];

  beforeAll(async () => {
    api = await openTestApi(backend, { onQuery: (sql) => statements.push(sql) });
    const db = api.database.handle.db;
    for (let r = 0; r < 50; r += 1) {
      const run = await createRun(db, {
        owner: 'alice',
        configuration: 'load',
        createdAt: new Date(Date.UTC(2026, 0, 1, 0, r)),
      });
      await appendSteps(db, {
        runUuid: run.uuid,
        build: (trace) => {
          for (let s = 0; s < 12; s += 1) {
            const call = { round: 1, durationMs: 5, toolName: 't', server: 's', arguments: {} };
            trace.recordToolResult(
              call,
              s % 3 === 0 ? ToolResult.cancelled('c') : ToolResult.of(s % 3 === 1 ? 'ok' : 'failed', 'x'),
            );
          }
        },
      });
    }
  });
  afterAll(async () => api?.dispose());

  it.each([5, 50])('%i runs with counts and their first 10 steps: at most 4 statements', async (first) => {
    await api.keyFor();
    statements.length = 0;
    const result = await api.query<{ runs: { edges: Array<{ node: { steps: { edges: unknown[] } } }> } }>(
      listQuery,
      {
        first,
      },
    );
    expect(result.errors).toBeUndefined();
    expect(result.data?.runs.edges).toHaveLength(first);
    expect(result.data?.runs.edges.every((e) => e.node.steps.edges.length === 10)).toBe(true);
    // One statement finds the API key; the rest are data, whatever the page size.
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(1 + 4);
    expect(statements.filter((s) => !s.includes('"api_keys"')).length).toBeLessThanOrEqual(4);
  });

  it('counts the list for totalCount with one statement more, whatever the page size', async () => {
    await api.keyFor();
    const dataStatements = async (query: string) => {
      statements.length = 0;
      const result = await api.query<{ runs: { totalCount?: number } }>(query, { first: 50 });
      expect(result.errors).toBeUndefined();
      return {
        count: statements.filter((s) => !s.includes('"api_keys"')).length,
        totalCount: result.data?.runs.totalCount,
      };
    };
    const without = await dataStatements(listQuery);
    const counted = await dataStatements(
      listQuery.replace('runs(first: $first) {', 'runs(first: $first) { totalCount'),
    );
    expect(counted.totalCount).toBe(50);
    expect(counted.count).toBe(without.count + 1);
    expect(counted.count).toBeLessThanOrEqual(5);
    // Asked twice under the same filter in one request, it is counted once.
    statements.length = 0;
    const twice = await api.query('{ a: runs(first: 1) { totalCount } b: runs(first: 2) { totalCount } }');
    expect(twice.data).toEqual({ a: { totalCount: 50 }, b: { totalCount: 50 } });
    expect(statements.filter((s) => /count\(/i.test(s))).toHaveLength(1);
  });
});
