import { eq, sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runs } from '../../drizzle/schema.ts';
import { type Database, selectRows } from '../../src/db/connection.ts';
import {
  callsOnRecord,
  groupsRankedByCounts,
  inStatsSnapshot,
  outcomeStatsCells,
  STATS_PARALLEL_SETUP_COST,
  STATS_WORK_MEM,
  type StatsQuery,
  statsSegments,
} from '../../src/db/outcome-stats.ts';
import { appendLegacyToolStep } from '../../src/db/run-writes.ts';
import { foldToolCallChanges, pendingToolCallChanges } from '../../src/db/tool-call-changes.ts';
import { OUTCOME_ROLLUPS } from '../../src/domain/outcome-rollups.ts';
import {
  type OutcomeDimension,
  outcomeGroupKey,
  rankGroups,
  type StatsCell,
  summarise,
} from '../../src/domain/outcome-stats.ts';
import { bucketSpec } from '../../src/domain/time-buckets.ts';
import type { ToolOutcome } from '../../src/domain/tool-outcome.ts';
import { ToolResult } from '../../src/domain/tool-result.ts';
import { endRun } from '../../src/ledger/end-run.ts';
import { toolOutcomeStats } from '../../src/ledger/outcome-stats.ts';
import { appendSteps } from '../../src/ledger/record-steps.ts';
import { createRun } from '../../src/ledger/start-run.ts';
import { openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { compareByCodePoints } from '../support/code-points.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

/** Every order, minimum and cut ranked in the database and in the domain: 15 to 20 s alone on PGlite, more beside other test files. */
const HEAVY_TEST_MS = 120_000;

type Expected = 'ok' | 'failed' | 'cancelled' | null;

/** One tool call as the test knows it, with the outcome a reader must see, written down by hand. */
interface Call {
  server: string;
  tool: string;
  configuration: string;
  owner: string;
  at: Date;
  durationMs: number;
  how: 'ok' | 'failed' | 'cancelled' | 'legacy-true' | 'legacy-false' | 'execution-true' | 'execution-false';
  expected: Expected;
}

const DAY = 86_400_000;
const BASE = Date.parse('2026-11-02T00:00:00Z');

/** A deterministic data set: every kind of row, spread over five days and every hour. */
function buildCalls(): Call[] {
  const kinds: Array<[Call['how'], Expected]> = [
    ['ok', 'ok'],
    ['failed', 'failed'],
    ['cancelled', 'cancelled'],
    ['legacy-true', 'failed'],
    ['legacy-false', 'ok'],
    ['execution-true', 'failed'],
    ['execution-false', 'ok'],
  ];
  const calls: Call[] = [];
  for (let i = 0; i < 420; i += 1) {
    const [how, expected] = kinds[(i * 5 + Math.floor(i / 7)) % kinds.length] ?? ['ok', 'ok'];
    calls.push({
      server: ['github', 'fs', 'web'][i % 3] ?? 'github',
      tool: ['search', 'read', 'write', 'fetch'][(i >> 1) % 4] ?? 'search',
      configuration: ['triage', 'docs'][(i >> 2) % 2] ?? 'triage',
      owner: ['alice', 'bob', 'carol'][(i >> 3) % 3] ?? 'alice',
      at: new Date(BASE + (i % 5) * DAY + ((i * 7) % 24) * 3_600_000 + ((i * 13) % 60) * 60_000),
      durationMs: [0, 3, 11, 40, 95, 250, 1_300, 9_000, 61_000][i % 9] ?? 0,
      how,
      expected,
    });
  }
  return calls;
}

async function record(api: TestApi, calls: Call[]) {
  const db = api.db;
  const byRun = new Map<string, Call[]>();
  for (const call of calls) {
    const key = `${call.configuration}/${call.owner}`;
    byRun.set(key, [...(byRun.get(key) ?? []), call]);
  }
  for (const [key, runCalls] of byRun) {
    const [configuration = '', owner = ''] = key.split('/');
    const run = await createRun(db, { owner, configuration, createdAt: new Date(BASE - DAY) });
    for (const call of runCalls) {
      const toolCall = {
        round: 1,
        durationMs: call.durationMs,
        toolName: call.tool,
        server: call.server,
        arguments: null,
        occurredAt: call.at,
      };
      if (call.how === 'legacy-true' || call.how === 'legacy-false') {
        await appendLegacyToolStep(db, run.uuid, toolCall, call.how === 'legacy-true');
        continue;
      }
      await appendSteps(db, {
        runUuid: run.uuid,
        build: (trace) => {
          if (call.how === 'execution-true' || call.how === 'execution-false') {
            trace.recordToolExecution(toolCall, 'x', call.how === 'execution-true');
          } else {
            trace.recordToolResult(toolCall, ToolResult.of(call.how as ToolOutcome, 'x'));
          }
          // Steps that are not tool calls never count.
          trace.recordStep({ kind: 'llm', round: 1, durationMs: 5, occurredAt: call.at });
        },
      });
    }
    // A tool step with no boolean states no outcome, and counts nowhere.
    await db.execute(
      sql`insert into run_steps (run_id, sequence, kind, occurred_at, tool_name, server, duration_ms)
          values (${run.id}, 100000, 'tool', ${new Date(BASE + DAY).toISOString()}::timestamptz, 'search', 'github', 5)`,
    );
    await endRun(db, { runUuid: run.uuid, status: 'completed', reason: 'completed' });
  }
}

interface Tally {
  ok: number;
  failed: number;
  cancelled: number;
  durations: number[];
}

/** The expected answer, computed here from the hand-written outcomes, not by the service's rules. */
function expectedGroups(calls: Call[], key: (call: Call) => string, from: number, to: number) {
  const groups = new Map<string, Tally>();
  for (const call of calls) {
    const t = call.at.getTime();
    if (t < from || t >= to || call.expected === null) continue;
    const k = key(call);
    const tally = groups.get(k) ?? { ok: 0, failed: 0, cancelled: 0, durations: [] };
    tally[call.expected] += 1;
    tally.durations.push(call.durationMs);
    groups.set(k, tally);
  }
  return groups;
}

function exactQuantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? 0;
}

function expectClose(actual: number | null, exact: number) {
  if (exact < 12) expect(actual).toBe(exact);
  else {
    expect(actual).toBeGreaterThanOrEqual(exact / 1.14);
    expect(actual).toBeLessThanOrEqual(exact * 1.14);
  }
}

const STATS = `query ($groupBy: [OutcomeGroupBy!]!, $filter: ToolStepFilter, $bucket: TimeBucket, $offset: Int! = 0,
  $orderBy: OutcomeOrder, $minCalls: Int! = 1, $first: Int! = 100, $emptyBuckets: Boolean! = true) {
  toolOutcomeStats(groupBy: $groupBy, filter: $filter, bucket: $bucket, utcOffsetMinutes: $offset,
    orderBy: $orderBy, minCalls: $minCalls, first: $first, emptyBuckets: $emptyBuckets) {
    groups {
      server toolName configuration owner bucketStart
      counts { ok failed cancelled total failureRate }
      p50DurationMs p95DurationMs
    }
    truncated
  }
}`;

interface Group {
  server: string | null;
  toolName: string | null;
  configuration: string | null;
  owner: string | null;
  bucketStart: string | null;
  counts: { ok: number; failed: number; cancelled: number; total: number; failureRate: number | null };
  p50DurationMs: number | null;
  p95DurationMs: number | null;
}

/** A group's fields as one key (its bucket aside). */
const keyOf = (g: Pick<Group, 'server' | 'toolName' | 'configuration' | 'owner'>) =>
  [g.server, g.toolName, g.configuration, g.owner].join('/');

/** Each group once, as `onlyGroups` names them (a group comes once per bucket). */
function oneOfEach<G extends Pick<Group, 'server' | 'toolName' | 'configuration' | 'owner'>>(
  groups: G[],
): G[] {
  return groups.filter((group, i) => groups.findIndex((g) => keyOf(g) === keyOf(group)) === i);
}

/**
 * Rows of each rollup as if the rollups of all time were the largest by far: a
 * range is read from its days, and a ranking by calls or failures over it
 * walks the groups of all time (where its parts are counted group by group).
 */
const RANGE_READ_ROWS = Object.fromEntries(
  OUTCOME_ROLLUPS.map((rollup) => [rollup.name, rollup.grain === 'all' ? 1e12 : 1_000_000]),
);

describe.each(backendNames)('tool outcome statistics (%s)', (backend) => {
  let api: TestApi;
  /** Every statement the suite's database is sent, for a test to look at what it read. */
  const statements: string[] = [];
  const calls = buildCalls();
  // Partial days at both ends: the edges come from run_steps, the middle from the daily table.
  const from = BASE + 5 * 3_600_000;
  const to = BASE + 4 * DAY + 7 * 3_600_000;
  const range = { occurredAfter: new Date(from).toISOString(), occurredBefore: new Date(to).toISOString() };

  beforeAll(async () => {
    api = await openTestApi(backend, { onQuery: (statement) => statements.push(statement) });
    await record(api, calls);
    // Half the calls folded into the rollups, half not yet: every answer sums both, as it does
    // while the service folds.
    const { changes } = await pendingToolCallChanges(api.db);
    expect(changes).toBeGreaterThan(100);
    expect(await foldToolCallChanges(api.db, Math.ceil(changes / 2))).toEqual({
      folded: Math.ceil(changes / 2),
    });
  }, 120_000);
  afterAll(async () => api?.dispose());
  // The data set is recorded once and only read; a test that changes it does so in a transaction rolled back after it.
  rollbackEach(() => api);

  async function statsPage(variables: Record<string, unknown>) {
    const result = await api.query<{ toolOutcomeStats: { groups: Group[]; truncated: boolean } }>(
      STATS,
      variables,
    );
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data?.toolOutcomeStats ?? { groups: [], truncated: false };
  }
  async function stats(variables: Record<string, unknown>): Promise<Group[]> {
    return (await statsPage(variables)).groups;
  }

  function checkAgainst(groups: Group[], expected: Map<string, Tally>, key: (g: Group) => string) {
    expect(groups.map(key).sort()).toEqual([...expected.keys()].sort());
    for (const group of groups) {
      const tally = expected.get(key(group));
      if (!tally) throw new Error(`unexpected group ${key(group)}`);
      const answered = tally.ok + tally.failed;
      expect(group.counts).toEqual({
        ok: tally.ok,
        failed: tally.failed,
        cancelled: tally.cancelled,
        total: tally.ok + tally.failed + tally.cancelled,
        failureRate: answered === 0 ? null : tally.failed / answered,
      });
      expectClose(group.p50DurationMs, exactQuantile(tally.durations, 0.5));
      expectClose(group.p95DurationMs, exactQuantile(tally.durations, 0.95));
    }
  }

  it('counts every kind of row by server: legacy rows as they always were, cancels only as cancels', async () => {
    const groups = await stats({ groupBy: ['SERVER'], filter: range });
    checkAgainst(
      groups,
      expectedGroups(calls, (c) => c.server, from, to),
      (g) => String(g.server),
    );
    expect(groups.every((g) => g.toolName === null && g.owner === null && g.bucketStart === null)).toBe(true);
  });

  it('counts by server and tool, by configuration and owner, and by all four', async () => {
    checkAgainst(
      await stats({ groupBy: ['SERVER', 'TOOL'], filter: range }),
      expectedGroups(calls, (c) => `${c.server}/${c.tool}`, from, to),
      (g) => `${g.server}/${g.toolName}`,
    );
    checkAgainst(
      await stats({ groupBy: ['CONFIGURATION', 'OWNER'], filter: range }),
      expectedGroups(calls, (c) => `${c.configuration}/${c.owner}`, from, to),
      (g) => `${g.configuration}/${g.owner}`,
    );
    checkAgainst(
      await stats({ groupBy: ['OWNER', 'TOOL', 'SERVER', 'CONFIGURATION'], filter: range }),
      expectedGroups(calls, (c) => `${c.server}/${c.tool}/${c.configuration}/${c.owner}`, from, to),
      (g) => `${g.server}/${g.toolName}/${g.configuration}/${g.owner}`,
    );
  });

  it('filters by servers, tools, configurations, owners and outcomes', async () => {
    const pick = (c: Call) => c.server === 'web' && ['read', 'fetch'].includes(c.tool) && c.owner !== 'carol';
    checkAgainst(
      await stats({
        groupBy: ['TOOL'],
        filter: { ...range, servers: ['web'], tools: ['read', 'fetch'], owners: ['alice', 'bob'] },
      }),
      expectedGroups(calls.filter(pick), (c) => c.tool, from, to),
      (g) => String(g.toolName),
    );
    const cancelledOnly = await stats({ groupBy: ['SERVER'], filter: { ...range, outcomes: ['CANCELLED'] } });
    const expected = expectedGroups(
      calls.filter((c) => c.expected === 'cancelled'),
      (c) => c.server,
      from,
      to,
    );
    checkAgainst(cancelledOnly, expected, (g) => String(g.server));
    expect(cancelledOnly.every((g) => g.counts.failureRate === null)).toBe(true);
    const triage = await stats({ groupBy: ['SERVER'], filter: { ...range, configurations: ['triage'] } });
    checkAgainst(
      triage,
      expectedGroups(
        calls.filter((c) => c.configuration === 'triage'),
        (c) => c.server,
        from,
        to,
      ),
      (g) => String(g.server),
    );
  });

  it('answers a daily series per tool with every bucket present, empty ones at zero', async () => {
    const groups = await stats({
      groupBy: ['TOOL'],
      filter: { ...range, servers: ['github'] },
      bucket: 'DAY',
    });
    const days = [0, 1, 2, 3, 4].map((d) => new Date(BASE + d * DAY).toISOString());
    const tools = [...new Set(calls.filter((c) => c.server === 'github').map((c) => c.tool))].sort();
    expect(groups.map((g) => `${g.toolName}@${g.bucketStart}`)).toEqual(
      tools.flatMap((tool) => days.map((day) => `${tool}@${day}`)),
    );
    const expected = expectedGroups(
      calls.filter((c) => c.server === 'github'),
      (c) => `${c.tool}@${new Date(Math.floor(c.at.getTime() / DAY) * DAY).toISOString()}`,
      from,
      to,
    );
    for (const group of groups) {
      const tally = expected.get(`${group.toolName}@${group.bucketStart}`);
      expect(group.counts.total).toBe(tally ? tally.ok + tally.failed + tally.cancelled : 0);
      expect(group.counts.failed).toBe(tally?.failed ?? 0);
      if (!tally) expect(group).toMatchObject({ p50DurationMs: null, counts: { failureRate: null } });
    }
  });

  it('leaves out the empty buckets when asked, every other row as it is with them', async () => {
    const requests = [
      // One field: the groups read whole; two: ranked first, a cut leaving groups out; every bucket.
      { groupBy: ['TOOL'], filter: { ...range, servers: ['github'] }, bucket: 'DAY' },
      { groupBy: ['OWNER', 'SERVER'], filter: range, bucket: 'HOUR', first: 3 },
      {
        groupBy: ['SERVER', 'TOOL'],
        filter: range,
        bucket: 'DAY',
        orderBy: { field: 'FAILED', direction: 'DESC' },
      },
      { groupBy: [], filter: { ...range, outcomes: ['CANCELLED'] }, bucket: 'HOUR' },
    ];
    for (const request of requests) {
      const dense = await statsPage(request);
      const sparse = await statsPage({ ...request, emptyBuckets: false });
      // Some rows left out, so the case proves something; the same groups, cut the same way.
      expect(
        dense.groups.some((g) => g.counts.total === 0),
        JSON.stringify(request),
      ).toBe(true);
      expect(sparse).toEqual({ ...dense, groups: dense.groups.filter((g) => g.counts.total > 0) });
    }
    // Without a bucket it is accepted, and changes nothing: there is no empty bucket to leave out.
    const whole = { groupBy: ['SERVER'], filter: range, minCalls: 0 };
    expect(await statsPage({ ...whole, emptyBuckets: false })).toEqual(await statsPage(whole));
  });

  it('aligns buckets at a UTC offset, and weeks on Monday', async () => {
    const offset = 330; // UTC+05:30
    const groups = await stats({ groupBy: ['SERVER'], filter: range, bucket: 'DAY', offset });
    const shift = offset * 60_000;
    const dayOf = (t: number) => Math.floor((t + shift) / DAY) * DAY - shift;
    const expected = expectedGroups(
      calls,
      (c) => `${c.server}@${new Date(dayOf(c.at.getTime())).toISOString()}`,
      from,
      to,
    );
    for (const group of groups) {
      expect(new Date(group.bucketStart ?? '').getUTCHours()).toBe(18);
      const tally = expected.get(`${group.server}@${group.bucketStart}`);
      expect(group.counts.total).toBe(tally ? tally.ok + tally.failed + tally.cancelled : 0);
    }
    expect(groups.reduce((sum, g) => sum + g.counts.total, 0)).toBe(
      [...expected.values()].reduce((sum, t) => sum + t.ok + t.failed + t.cancelled, 0),
    );
    const weeks = await stats({ groupBy: [], filter: range, bucket: 'WEEK' });
    // 2026-11-02 is a Monday: the range falls in one week.
    expect(weeks.map((w) => w.bucketStart)).toEqual(['2026-11-02T00:00:00.000Z']);
    const hours = await stats({ groupBy: [], filter: range, bucket: 'HOUR' });
    expect(hours).toHaveLength((to - from) / 3_600_000);
  });

  it('orders by total, failed and failure rate with a minimum of calls, and cuts to first', async () => {
    const byKey = expectedGroups(calls, (c) => `${c.server}/${c.tool}`, from, to);
    const rate = (t: Tally) => (t.ok + t.failed === 0 ? -1 : t.failed / (t.ok + t.failed));
    const total = (t: Tally) => t.ok + t.failed + t.cancelled;
    const expectedOrder = [...byKey.entries()]
      .filter(([, t]) => total(t) >= 30)
      .sort(([ka, a], [kb, b]) => rate(b) - rate(a) || (ka < kb ? -1 : 1))
      .slice(0, 3)
      .map(([k]) => k);
    const worst = await stats({
      groupBy: ['SERVER', 'TOOL'],
      filter: range,
      orderBy: { field: 'FAILURE_RATE' },
      minCalls: 30,
      first: 3,
    });
    expect(worst.map((g) => `${g.server}/${g.toolName}`)).toEqual(expectedOrder);
    // first says whether it cut the list: more groups than 3 have calls; all of them fit in `matching`.
    const matching = [...byKey.values()].filter((t) => total(t) >= 1).length;
    expect(matching).toBeGreaterThan(3);
    const cut = { groupBy: ['SERVER', 'TOOL'], filter: range };
    expect((await statsPage({ ...cut, first: 3 })).truncated).toBe(true);
    expect(await statsPage({ ...cut, first: matching })).toMatchObject({ truncated: false });
    expect((await statsPage({ ...cut, first: matching - 1 })).truncated).toBe(true);
    expect(await statsPage({ ...cut, first: 0 })).toEqual({ groups: [], truncated: true });
    // With buckets, first counts groups, not rows: one tool, every day of the range.
    const series = await statsPage({
      groupBy: ['TOOL'],
      filter: { ...range, servers: ['fs'] },
      bucket: 'DAY',
      first: 1,
    });
    expect(series.truncated).toBe(true);
    expect(new Set(series.groups.map((g) => g.toolName)).size).toBe(1);
    expect(series.groups).toHaveLength(5);
    const busiest = await stats({
      groupBy: ['SERVER'],
      filter: range,
      orderBy: { field: 'TOTAL', direction: 'DESC' },
    });
    const totals = busiest.map((g) => g.counts.total);
    expect(totals).toEqual([...totals].sort((a, b) => b - a));
    const fewestFailures = await stats({
      groupBy: ['SERVER'],
      filter: range,
      orderBy: { field: 'FAILED', direction: 'ASC' },
    });
    const failed = fewestFailures.map((g) => g.counts.failed);
    expect(failed).toEqual([...failed].sort((a, b) => a - b));
  });

  it(
    'ranks in the database as the domain ranks the counts of run_steps, from the rollups of all time and from the range: every order, minimum and cut',
    async () => {
      const db = api.db;
      const { recorded } = await callsOnRecord(db);
      // Rows of each rollup as if the rollups of all time were the smallest, the counts alone first.
      const rollupRows = Object.fromEntries(
        OUTCOME_ROLLUPS.map((rollup, i) => [rollup.name, rollup.grain === 'all' ? 1 + i : 1_000_000]),
      );
      const allTime = new Set<string>(
        OUTCOME_ROLLUPS.filter((rollup) => rollup.grain === 'all').map((rollup) => rollup.name),
      );
      const ranges = [
        { from: new Date(from), to: new Date(to) },
        { from: new Date(BASE - DAY), to: new Date(BASE + 6 * DAY) },
      ];
      const keyAndCounts = (cells: readonly StatsCell[]) =>
        cells.map(({ server, toolName, configuration, owner, tally }) => ({
          server,
          toolName,
          configuration,
          owner,
          tally: { ok: tally.ok, failed: tally.failed, cancelled: tally.cancelled },
        }));
      let readAllTime = 0;
      for (const range of ranges)
        for (const groupBy of [
          ['owner', 'configuration', 'server', 'tool'],
          ['owner', 'server', 'tool'],
          ['configuration', 'server', 'tool'],
          ['owner', 'configuration', 'server'],
          ['owner', 'configuration', 'tool'],
          ['owner', 'server'],
          // Keyed by no rollup of all time: ranked from the range's sums in every order.
          ['server', 'tool'],
          ['configuration', 'tool'],
        ] as OutcomeDimension[][]) {
          const query: StatsQuery = { groupBy, range, spec: null, now: range.to };
          const exact = await outcomeStatsCells(db, { ...query, durations: false }, 'raw');
          for (const orderBy of ['total', 'failed', 'failureRate', 'key'] as const)
            for (const descending of [true, false])
              for (const [minCalls, first] of [
                [0, 1],
                [2, 3],
                [0, 20],
                [1, 500],
              ] as const) {
                const ranking = { orderBy, descending, minCalls, first };
                const counted = { ...query, recorded, rollupRows, durations: false };
                if (statsSegments(counted).some((segment) => allTime.has(segment.source))) readAllTime += 1;
                const expected = rankGroups(exact, ranking);
                for (const ranked of [
                  await groupsRankedByCounts(db, { ...query, recorded, rollupRows }, ranking),
                  await groupsRankedByCounts(
                    db,
                    { ...query, recorded, rollupRows: RANGE_READ_ROWS },
                    ranking,
                  ),
                  await groupsRankedByCounts(db, query, ranking),
                ]) {
                  // The database returns the first `first + 1` groups in the domain's order, no more.
                  expect(ranked.cells.length).toBeLessThanOrEqual(first + 1);
                  expect([
                    groupBy,
                    orderBy,
                    descending,
                    minCalls,
                    first,
                    keyAndCounts(ranked.cells.slice(0, first)),
                    ranked.more,
                  ]).toEqual([
                    groupBy,
                    orderBy,
                    descending,
                    minCalls,
                    first,
                    keyAndCounts(expected.groups),
                    expected.cut,
                  ]);
                }
              }
        }
      expect(readAllTime).toBeGreaterThanOrEqual(2 * 6 * 4 * 2 * 4);
    },
    HEAVY_TEST_MS,
  );

  it("reads the histograms of a ranking's groups from the rollup of all time, group by group where they fix its key's first fields, as run_steps holds them", async () => {
    const db = api.db;
    const { recorded } = await callsOnRecord(db);
    const rollupRows = Object.fromEntries(
      OUTCOME_ROLLUPS.map((rollup, i) => [rollup.name, rollup.grain === 'all' ? 1 + i : 1_000_000]),
    );
    const range = { from: new Date(from), to: new Date(to) };
    const readAllTime: string[] = [];
    for (const groupBy of [
      // The first three and all four fields of its key (server, tool, owner, configuration): a range each.
      ['owner', 'server', 'tool'],
      ['owner', 'configuration', 'server', 'tool'],
      // Not its key's first fields: read whole, joined to the groups.
      ['configuration', 'server', 'tool'],
      ['owner', 'configuration', 'server'],
    ] as OutcomeDimension[][]) {
      const query: StatsQuery = { groupBy, range, spec: null, now: range.to, recorded, rollupRows };
      const exact = await outcomeStatsCells(db, query, 'raw');
      // Each group's histogram summed over its cells (parts taken away are negative), groups of none left out.
      const histograms = (cells: readonly StatsCell[]) => {
        const byGroup = new Map<string, number[]>();
        for (const cell of cells) {
          const key = outcomeGroupKey(cell);
          const sum = byGroup.get(key) ?? cell.histogram.map(() => 0);
          cell.histogram.forEach((calls, bucket) => {
            sum[bucket] = (sum[bucket] ?? 0) + calls;
          });
          byGroup.set(key, sum);
        }
        return [...byGroup]
          .filter(([, sum]) => sum.some((calls) => calls !== 0))
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      };
      // The groups a ranking returns (each once): every other one, and one no call is in.
      const distinct = [...new Map(exact.map((cell) => [outcomeGroupKey(cell), cell])).values()];
      const first = distinct[0];
      if (!first) throw new Error('no calls');
      const nowhere = { server: 'nowhere', toolName: 'none', configuration: 'none', owner: 'nobody' };
      const groups: StatsCell[] = [
        ...distinct.filter((_, i) => i % 2 === 0),
        {
          ...first,
          server: groupBy.includes('server') ? nowhere.server : null,
          toolName: groupBy.includes('tool') ? nowhere.toolName : null,
          configuration: groupBy.includes('configuration') ? nowhere.configuration : null,
          owner: groupBy.includes('owner') ? nowhere.owner : null,
        },
      ];
      const only: StatsQuery = { ...query, onlyGroups: groups, histogramsOnly: true };
      if (statsSegments(only).some((segment) => segment.source === 'ownerConfigurationServerToolAllTime'))
        readAllTime.push(groupBy.join(' x '));
      const wanted = new Set(groups.map((group) => outcomeGroupKey(group)));
      const expected = histograms(exact.filter((cell) => wanted.has(outcomeGroupKey(cell))));
      expect(expected.length).toBeGreaterThan(1);
      expect([groupBy, histograms(await outcomeStatsCells(db, only))]).toEqual([groupBy, expected]);
    }
    // Both ways were taken: the groups of its key's first fields and others.
    expect(readAllTime).toEqual(
      expect.arrayContaining(['owner x server x tool', 'owner x configuration x server x tool']),
    );
    expect(readAllTime.length).toBeGreaterThan(2);
  });

  it('ranks as if rollup rows that fell to zero were not there (the calls of deleted runs), whatever the minimum and order', async () => {
    const db = api.db;
    // Carol's calls folded, then deleted, and the deletes folded: her rows of the rollups fall to zero.
    await foldToolCallChanges(db, 1_000_000);
    await db.delete(runs).where(eq(runs.owner, 'carol'));
    await foldToolCallChanges(db, 1_000_000);
    // Rollup rows stay when their calls are deleted, at zero: the ranking reads them and must drop them.
    const [zeroRows] = await selectRows<{ count: number }>(
      db,
      sql`select count(*)::int as count from stats_owner_configuration_server_tool_weekly
           where owner = 'carol' and ok + failed + cancelled = 0`,
    );
    expect(zeroRows?.count).toBeGreaterThan(0);
    const { recorded } = await callsOnRecord(db);
    // Whole weeks with partial days and hours at both edges, read from the weeks, less the days outside.
    const weeks = {
      from: new Date(BASE - 10 * DAY + 17 * 60_000),
      to: new Date(BASE + 12 * DAY - 23 * 60_000),
    };
    const weeksSmallest = Object.fromEntries(
      OUTCOME_ROLLUPS.map((rollup) => [
        rollup.name,
        rollup.name === 'ownerConfigurationServerToolWeekly' ? 1 : 1_000_000,
      ]),
    );
    for (const range of [weeks, { from: new Date(from), to: new Date(to) }])
      for (const groupBy of [
        ['owner', 'configuration', 'server', 'tool'],
        ['owner', 'server', 'tool'],
        ['owner', 'server'],
      ] as OutcomeDimension[][]) {
        const query: StatsQuery = { groupBy, range, spec: null, now: range.to };
        const exact = await outcomeStatsCells(db, { ...query, durations: false }, 'raw');
        // Ascending by calls: a group of zeros would come first.
        for (const orderBy of ['total', 'failureRate', 'key'] as const) {
          const ranking = { orderBy, descending: false, minCalls: 0, first: 500 };
          const expected = rankGroups(exact, ranking);
          expect(expected.groups.length).toBeGreaterThan(0);
          const counted = (cells: readonly StatsCell[]) =>
            cells.map(
              ({ tally, ...key }) => `${outcomeGroupKey(key)} ${tally.ok}/${tally.failed}/${tally.cancelled}`,
            );
          for (const rollupRows of [weeksSmallest, RANGE_READ_ROWS, null]) {
            const ranked = await groupsRankedByCounts(
              db,
              { ...query, recorded, ...(rollupRows ? { rollupRows } : {}) },
              ranking,
            );
            expect(ranked.cells.some((cell) => cell.owner === 'carol')).toBe(false);
            expect([groupBy, orderBy, counted(ranked.cells)]).toEqual([
              groupBy,
              orderBy,
              counted(expected.groups),
            ]);
          }
        }
      }
  });

  it('ranks from the rollups of all time a group whose calls lie mostly outside the range where the range puts it', async () => {
    const db = api.db;
    const [run] = await db.select().from(runs).where(eq(runs.owner, 'alice')).limit(1);
    const range = { from: new Date(from), to: new Date(to) };
    // 120 servers with two good calls each in the range, and one with 40 good calls before the range
    // and a failed one in it: of all time it has the most calls and the lowest failure rate; in the
    // range the fewest and the highest. Only it and the fixture's groups are corrected (k), and
    // more than `first + 1 + k` groups rank ahead of it of all time.
    await db.execute(
      sql`insert into run_steps (run_id, sequence, kind, occurred_at, tool_name, server, duration_ms, tool_is_error, tool_outcome)
          select ${run?.id ?? 0}::bigint, 320000 + n, 'tool', ${new Date(from + 3_600_000).toISOString()}::timestamptz + n * interval '1 second',
                 'search', 'even_' || lpad((n % 120)::text, 3, '0'), 10, false, 'ok'
            from generate_series(1, 240) as n
          union all
          select ${run?.id ?? 0}::bigint, 321000 + n, 'tool', ${new Date(BASE + 3_600_000).toISOString()}::timestamptz + n * interval '1 second',
                 'search', 'a_mostly_before', 10, n = 41, case when n = 41 then 'failed' else 'ok' end
            from generate_series(1, 41) as n`,
    );
    await db.execute(
      sql`update run_steps set occurred_at = ${new Date(from + 7_200_000).toISOString()}::timestamptz
           where run_id = ${run?.id ?? 0} and sequence = 321041`,
    );
    const { recorded } = await callsOnRecord(db);
    const rollupRows = Object.fromEntries(
      OUTCOME_ROLLUPS.map((rollup, i) => [rollup.name, rollup.grain === 'all' ? 1 + i : 1_000_000]),
    );
    const groupBy: OutcomeDimension[] = ['owner', 'server'];
    const query: StatsQuery = { groupBy, range, spec: null, now: range.to };
    expect(
      statsSegments({ ...query, recorded, rollupRows, durations: false }).map((s) => s.source),
    ).toContain('ownerServerAllTime');
    const exact = await outcomeStatsCells(db, { ...query, durations: false }, 'raw');
    for (const [orderBy, descending] of [
      ['total', false],
      ['failureRate', true],
    ] as const) {
      const ranking = { orderBy, descending, minCalls: 0, first: 3 };
      const expected = rankGroups(exact, ranking);
      expect(expected.groups.map((group) => group.server)).toContain('a_mostly_before');
      const ranked = await groupsRankedByCounts(db, { ...query, recorded, rollupRows }, ranking);
      expect([orderBy, ranked.cells.slice(0, 3).map((cell) => cell.server), ranked.more]).toEqual([
        orderBy,
        expected.groups.map((group) => group.server),
        expected.cut,
      ]);
    }
  });

  it('ranks by key over a range by walking the groups of all time in batches, past groups with no calls in the range', async () => {
    const db = api.db;
    const [run] = await db.select().from(runs).where(eq(runs.owner, 'alice')).limit(1);
    const range = { from: new Date(from), to: new Date(to) };
    // Sixty servers first and last by key, each with one call before the range: of all time they
    // are groups, in the range none. A walk that stopped at its first batch would answer fewer.
    await db.execute(
      sql`insert into run_steps (run_id, sequence, kind, occurred_at, tool_name, server, duration_ms, tool_is_error, tool_outcome)
          select ${run?.id ?? 0}::bigint, 330000 + n, 'tool', ${new Date(BASE + 3_600_000).toISOString()}::timestamptz + n * interval '1 second',
                 'search', case when n % 2 = 0 then 'aa_' else 'zz_' end || lpad(n::text, 2, '0'), 10, false, 'ok'
            from generate_series(1, 60) as n`,
    );
    for (const groupBy of [
      ['owner', 'server'],
      ['owner', 'configuration', 'server', 'tool'],
    ] as OutcomeDimension[][]) {
      const query: StatsQuery = { groupBy, range, spec: null, now: range.to };
      const exact = await outcomeStatsCells(db, { ...query, durations: false }, 'raw');
      for (const descending of [false, true])
        for (const [minCalls, first] of [
          [0, 1],
          [2, 3],
          [0, 40],
        ] as const) {
          const ranking = { orderBy: 'key' as const, descending, minCalls, first };
          const expected = rankGroups(exact, ranking);
          const ranked = await groupsRankedByCounts(db, query, ranking);
          expect([
            groupBy,
            descending,
            minCalls,
            first,
            ranked.cells.slice(0, first).map((cell) => cell.server),
            ranked.more,
          ]).toEqual([
            groupBy,
            descending,
            minCalls,
            first,
            expected.groups.map((group) => group.server),
            expected.cut,
          ]);
        }
    }
  });

  it('walks no groups of all time that a filter on a field they are not keyed by would leave out: an actor who sees its own runs ranks its range whole', async () => {
    const db = api.db;
    const range = { from: new Date(from), to: new Date(to) };
    const { recorded } = await callsOnRecord(db);
    // configuration x server x tool: its groups of all time hold every owner's calls, alice's among them.
    const groupBy: OutcomeDimension[] = ['configuration', 'server', 'tool'];
    const directory = /\bstats_configuration_server_tool_all_time\b/;
    for (const orderBy of ['key', 'total', 'failed'] as const)
      for (const owners of [null, ['alice']]) {
        const query: StatsQuery = { groupBy, range, spec: null, now: range.to, owners };
        const ranking = { orderBy, descending: orderBy !== 'key', minCalls: 0, first: 1 };
        const expected = rankGroups(
          await outcomeStatsCells(db, { ...query, durations: false }, 'raw'),
          ranking,
        );
        statements.length = 0;
        const ranked = await groupsRankedByCounts(
          db,
          { ...query, recorded, rollupRows: RANGE_READ_ROWS },
          ranking,
        );
        // Every owner's groups are walked; alice's range is summed from the rollups keyed by owner.
        expect([orderBy, owners, statements.some((statement) => directory.test(statement))]).toEqual([
          orderBy,
          owners,
          owners === null,
        ]);
        expect([
          ranked.cells.slice(0, 1).map((cell) => [outcomeGroupKey(cell), cell.tally]),
          ranked.more,
        ]).toEqual([expected.groups.map((group) => [outcomeGroupKey(group), group.tally]), expected.cut]);
      }
  });

  it('ranks by calls and failures over a range by walking the groups of all time down to a bound, past the groups that lead all time', async () => {
    const db = api.db;
    const [run] = await db.select().from(runs).where(eq(runs.owner, 'alice')).limit(1);
    const range = { from: new Date(from), to: new Date(to) };
    // Eight servers with 140 calls before the range and 60 in it (a fifth failed) lead every group
    // of all time: the first batch of a walk for the first three, whose fourth gives the bound (60
    // calls). Two servers with 100 calls each, all in the range (a third failed), lead the range and
    // come after that batch: only the bound finds them. And one with 60 calls, all in the range: of
    // all time exactly the bound, in the range tied with the eight, ahead of them by key.
    await db.execute(
      sql`insert into run_steps (run_id, sequence, kind, occurred_at, tool_name, server, duration_ms, tool_is_error, tool_outcome)
          select ${run?.id ?? 0}::bigint, 340000 + n, 'tool', ${new Date(BASE + 3_600_000).toISOString()}::timestamptz + n * interval '1 second',
                 'search', 'steady_' || (n % 8), 10, false, 'ok'
            from generate_series(1, 1120) as n
          union all
          select ${run?.id ?? 0}::bigint, 347000 + n, 'tool', ${new Date(from + 3_600_000).toISOString()}::timestamptz + n * interval '1 second',
                 'search', 'steady_' || (n % 8), 10, n % 5 = 0, case when n % 5 = 0 then 'failed' else 'ok' end
            from generate_series(1, 480) as n
          union all
          select ${run?.id ?? 0}::bigint, 348000 + n, 'tool', ${new Date(from + 7_200_000).toISOString()}::timestamptz + n * interval '1 second',
                 'search', 'only_in_range_' || (n % 2), 10, n % 3 = 0, case when n % 3 = 0 then 'failed' else 'ok' end
            from generate_series(1, 200) as n
          union all
          select ${run?.id ?? 0}::bigint, 349000 + n, 'tool', ${new Date(from + 10_800_000).toISOString()}::timestamptz + n * interval '1 second',
                 'search', 'a_tied', 10, false, 'ok'
            from generate_series(1, 60) as n`,
    );
    const { recorded } = await callsOnRecord(db);
    const rollupRows = RANGE_READ_ROWS;
    // Filters only lower a group's calls in the range, never above its calls of all time.
    const filters: Array<Partial<StatsQuery>> = [
      {},
      { owners: ['alice'] },
      { outcomes: ['failed', 'cancelled'] },
      { servers: ['steady_1', 'only_in_range_1', 'web'] },
    ];
    for (const filter of filters)
      for (const groupBy of [
        ['owner', 'server'],
        ['configuration', 'server', 'tool'],
        ['owner', 'configuration', 'server', 'tool'],
      ] as OutcomeDimension[][]) {
        const query: StatsQuery = { groupBy, range, spec: null, now: range.to, ...filter };
        const exact = await outcomeStatsCells(db, { ...query, durations: false }, 'raw');
        for (const orderBy of ['total', 'failed'] as const)
          for (const [minCalls, first] of [
            [0, 1],
            [2, 2],
            [0, 3],
            [101, 3],
            [0, 60],
          ] as const) {
            const ranking = { orderBy, descending: true, minCalls, first };
            const expected = rankGroups(exact, ranking);
            if (Object.keys(filter).length === 0 && orderBy === 'total' && minCalls <= 60)
              expect(expected.groups.slice(0, 3).map((group) => group.server)).toEqual(
                ['only_in_range_0', 'only_in_range_1', 'a_tied'].slice(0, first),
              );
            statements.length = 0;
            const ranked = await groupsRankedByCounts(db, { ...query, recorded, rollupRows }, ranking);
            // The first three walk the groups of all time (a first batch of up to eight times the four
            // wanted); the range's leaders lie past the first eight of all time, and are found.
            if (Object.keys(filter).length === 0 && first === 3 && minCalls === 0)
              expect(
                statements.some((statement) =>
                  /_all_time\b[\s\S]* offset 0 limit 32$/.test(statement.trim()),
                ),
              ).toBe(true);
            expect([
              filter,
              groupBy,
              orderBy,
              minCalls,
              first,
              ranked.cells.slice(0, first).map((cell) => [outcomeGroupKey(cell), cell.tally]),
              ranked.more,
            ]).toEqual([
              filter,
              groupBy,
              orderBy,
              minCalls,
              first,
              expected.groups.map((group) => [outcomeGroupKey(group), group.tally]),
              expected.cut,
            ]);
          }
      }
  });

  it('walks past a first batch that ends one above the bound, to a group of all time exactly at it that ranks first by key', async () => {
    const db = api.db;
    const [run] = await db.select().from(runs).where(eq(runs.owner, 'alice')).limit(1);
    const range = { from: new Date(from), to: new Date(to) };
    // With the range at least half the hours on record and one group wanted (first: 1, two read),
    // the first batch is every group down to the fourth of all time (5 calls): tie_d1 to tie_d3 (6
    // calls before the range, 4 in it) and tie_d4 (5, all before). The bound is the second in the
    // range: 4, one under the batch's last. tie_a has 4 calls, all in the range: of all time past
    // the batch, exactly at the bound; tied in the range, it ranks first by key.
    await db.execute(
      sql`insert into run_steps (run_id, sequence, kind, occurred_at, tool_name, server, duration_ms, tool_is_error, tool_outcome)
          select ${run?.id ?? 0}::bigint, 360000 + g * 100 + n, 'tool',
                 case when n <= before then ${new Date(BASE + 3_600_000).toISOString()}::timestamptz
                      else ${new Date(from + 3_600_000).toISOString()}::timestamptz end + n * interval '1 second',
                 'search', server, 10, false, 'ok'
            from (values (1, 'tie_d1', 6, 10), (2, 'tie_d2', 6, 10), (3, 'tie_d3', 6, 10), (4, 'tie_d4', 5, 5),
                         (5, 'tie_a', 0, 4)) as t(g, server, before, calls),
                 generate_series(1, calls) as n`,
    );
    const servers = ['tie_a', 'tie_d1', 'tie_d2', 'tie_d3', 'tie_d4'];
    const query: StatsQuery = { groupBy: ['owner', 'server'], range, spec: null, now: range.to, servers };
    const ranking = { orderBy: 'total', descending: true, minCalls: 0, first: 1 } as const;
    const expected = rankGroups(await outcomeStatsCells(db, { ...query, durations: false }, 'raw'), ranking);
    expect(expected.groups.map((group) => group.server)).toEqual(['tie_a']);
    const { recorded } = await callsOnRecord(db);
    if (!recorded) throw new Error('the suite records calls');
    const span = (r: { from: Date; to: Date }) => r.to.getTime() - r.from.getTime();
    expect(span(range) / span(recorded)).toBeGreaterThanOrEqual(0.5);
    statements.length = 0;
    const ranked = await groupsRankedByCounts(
      db,
      { ...query, recorded, rollupRows: RANGE_READ_ROWS },
      ranking,
    );
    // The walk was taken: a first batch of up to eight times the two groups wanted.
    expect(
      statements.some((statement) => /_all_time\b[\s\S]* offset 0 limit 16$/.test(statement.trim())),
    ).toBe(true);
    expect([
      ranked.cells.slice(0, 1).map((cell) => [outcomeGroupKey(cell), cell.tally]),
      ranked.more,
    ]).toEqual([expected.groups.map((group) => [outcomeGroupKey(group), group.tally]), expected.cut]);
  });

  it('reads no part of a range outside the hours on record, and counts it the same', async () => {
    const db = api.db;
    const { recorded, rollupRows } = await callsOnRecord(db);
    if (!recorded) throw new Error('the suite records calls');
    // The hours on record: from the hour of the first call to the end of the hour of the last.
    const [calls] = await selectRows<{ first: number; last: number }>(
      db,
      sql`select (extract(epoch from min(occurred_at)) * 1000)::float8 as first,
                 (extract(epoch from max(occurred_at)) * 1000)::float8 as last
            from run_steps where stated_tool_outcome(kind, tool_is_error, tool_outcome) is not null`,
    );
    const hourOf = (ms: number | undefined) => Math.floor(Number(ms) / 3_600_000) * 3_600_000;
    expect([recorded.from.getTime(), recorded.to.getTime()]).toEqual([
      hourOf(calls?.first),
      hourOf(calls?.last) + 3_600_000,
    ]);
    // A range up to now, two and a half days past the last hour with calls: its last week is read
    // whole, less the rest of it, which lies past every call.
    const range = {
      from: new Date(BASE - 9 * DAY),
      to: new Date(recorded.to.getTime() + 2 * DAY + 12 * 3_600_000),
    };
    const pastRecord = (segments: ReturnType<typeof statsSegments>) =>
      segments.filter((segment) => segment.from.getTime() >= recorded.to.getTime());
    for (const groupBy of [
      ['server'],
      ['owner', 'server'],
      ['owner', 'configuration', 'server', 'tool'],
    ] as OutcomeDimension[][]) {
      const query: StatsQuery = { groupBy, range, spec: null, now: range.to, rollupRows };
      // Planned without the hours on record, the rest of the last week is taken away; with them, not read.
      expect([groupBy, pastRecord(statsSegments(query)).length > 0]).toEqual([groupBy, true]);
      expect([groupBy, pastRecord(statsSegments({ ...query, recorded }))]).toEqual([groupBy, []]);
      const byKey = {
        orderBy: 'key',
        descending: false,
        minCalls: 0,
        first: 500,
        spec: null,
        range,
      } as const;
      const exact = summarise(await outcomeStatsCells(db, query, 'raw'), byKey);
      expect(exact.groups.length).toBeGreaterThan(1);
      expect(summarise(await outcomeStatsCells(db, { ...query, recorded }), byKey)).toEqual(exact);
    }
  });

  it('orders groups by key as code points, in the database as in the domain, where UTF-16 order differs', async () => {
    const [run] = await api.db.select().from(runs).where(eq(runs.owner, 'alice')).limit(1);
    // By UTF-16 unit '😀' (D83D DE00) comes before '\ufffd' and '\ue000'; by code point after them.
    const servers = ['😀', '\ufffd', '\ue000', 'zz', '\u{1f9ea}x', 'é'];
    await api.db.execute(
      sql`insert into run_steps (run_id, sequence, kind, occurred_at, tool_name, server, duration_ms, tool_is_error, tool_outcome)
          select ${run?.id ?? 0}, 310000 + n, 'tool', ${new Date(BASE + 2 * DAY).toISOString()}::timestamptz + n * interval '1 minute',
                 'search', (array[${sql.join(
                   servers.map((server) => sql`${server}`),
                   sql`, `,
                 )}]::text[])[1 + n % ${servers.length}], 100 * n, false, 'ok'
            from generate_series(1, ${servers.length * 2}) as n`,
    );
    const range = {
      occurredAfter: new Date(from - 10 * DAY).toISOString(),
      occurredBefore: new Date(to + 12 * DAY).toISOString(),
    };
    for (const direction of ['ASC', 'DESC'] as const) {
      const sign = direction === 'ASC' ? 1 : -1;
      // Two fields rank in the database, one in the service: both orders must be the same.
      for (const groupBy of [['SERVER'], ['SERVER', 'OWNER']]) {
        const groups = await stats({
          groupBy,
          filter: { ...range, owners: ['alice'] },
          orderBy: { field: 'KEY', direction },
          first: 500,
        });
        const named = groups.map((g) => g.server ?? '').filter((server) => servers.includes(server));
        expect([groupBy, named]).toEqual([
          groupBy,
          [...servers].sort((a, b) => sign * compareByCodePoints(a, b)),
        ]);
        const all = groups.map((g) => g.server ?? '');
        expect(all).toEqual([...all].sort((a, b) => sign * compareByCodePoints(a, b)));
      }
      // Cut after each: the same names first, so the database, not the service, chose them.
      const firstTwo = await stats({
        groupBy: ['SERVER', 'OWNER'],
        filter: { ...range, owners: ['alice'], servers },
        orderBy: { field: 'KEY', direction },
        first: 2,
      });
      expect(firstTwo.map((g) => g.server)).toEqual(
        [...servers].sort((a, b) => sign * compareByCodePoints(a, b)).slice(0, 2),
      );
    }
  });

  it('ranks the groups of a time series as it ranks them without buckets (the same first pass, statement for statement), by one field too', async () => {
    const counts = `query ($groupBy: [OutcomeGroupBy!]!, $filter: ToolStepFilter, $bucket: TimeBucket, $orderBy: OutcomeOrder) {
      toolOutcomeStats(groupBy: $groupBy, filter: $filter, bucket: $bucket, orderBy: $orderBy, first: 2) {
        groups { server toolName configuration owner bucketStart counts { total } } truncated } }`;
    // A request's statements from its snapshot's settings on, without the transaction's own.
    const transaction = (sent: string[]) => {
      const start = sent.findIndex((statement) => statement.includes("set_config('work_mem'"));
      expect(start).toBeGreaterThanOrEqual(0);
      return sent
        .slice(start)
        .filter((statement) => !/^\s*(begin|savepoint|release|commit|rollback)\b/i.test(statement));
    };
    const statementsOf = async (variables: Record<string, unknown>) => {
      statements.length = 0;
      const result = await api.query<{ toolOutcomeStats: { groups: Group[]; truncated: boolean } }>(
        counts,
        variables,
      );
      expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
      return { page: result.data?.toolOutcomeStats, sent: [...statements] };
    };
    for (const groupBy of [
      ['OWNER', 'SERVER'],
      ['CONFIGURATION', 'SERVER', 'TOOL'],
    ])
      for (const orderBy of [
        { field: 'TOTAL', direction: 'DESC' },
        { field: 'FAILED', direction: 'DESC' },
      ]) {
        const plain = await statementsOf({ groupBy, filter: range, orderBy });
        expect(plain.page?.truncated).toBe(true);
        for (const bucket of ['DAY', 'HOUR']) {
          const series = await statementsOf({ groupBy, filter: range, orderBy, bucket });
          // Every statement of the answer without buckets (what is on record, the ranking) comes first,
          // in order, ahead of the statements that read the buckets of the groups returned.
          const ranking = transaction(plain.sent);
          // What is on record and the ranking at least: never an empty prefix, which any answer has.
          expect(ranking.length).toBeGreaterThan(2);
          expect(transaction(series.sent).slice(0, ranking.length)).toEqual(ranking);
          // The same groups, in the same order, each with its buckets.
          expect(series.page?.truncated).toBe(true);
          expect([...new Set(series.page?.groups.map(keyOf))]).toEqual(plain.page?.groups.map(keyOf));
          const totals = new Map<string, number>();
          for (const g of series.page?.groups ?? [])
            totals.set(keyOf(g), (totals.get(keyOf(g)) ?? 0) + g.counts.total);
          expect(plain.page?.groups.map((g) => totals.get(keyOf(g)))).toEqual(
            plain.page?.groups.map((g) => g.counts.total),
          );
        }
      }
    // Grouped by one field, a time series ranks its groups first too (the first two and one more, to
    // know whether others were left out), then reads the buckets of those alone; without buckets, the
    // field's groups are read whole, in one pass.
    const ranksFirst = (sent: string[]) => sent.some((statement) => /\blimit 3\s*$/.test(statement));
    const byServer = { groupBy: ['SERVER'], filter: range, orderBy: { field: 'TOTAL', direction: 'DESC' } };
    const series = await statementsOf({ ...byServer, bucket: 'DAY' });
    expect([ranksFirst(series.sent), ranksFirst((await statementsOf(byServer)).sent)]).toEqual([true, false]);
    expect(series.page?.truncated).toBe(true);
    expect(new Set(series.page?.groups.map(keyOf)).size).toBe(2);
  });

  it('reads durations only for the groups it returns: a cut answer equals the same groups of the whole one', async () => {
    // Failed tool calls with no server, more than any group has: their group's server is null, stored as an empty name.
    const [run] = await api.db.select().from(runs).where(eq(runs.owner, 'alice')).limit(1);
    await api.db.execute(
      sql`insert into run_steps (run_id, sequence, kind, occurred_at, tool_name, server, duration_ms, tool_is_error, tool_outcome)
          select ${run?.id ?? 0}, 200000 + n, 'tool', ${new Date(BASE + 2 * DAY).toISOString()}::timestamptz + n * interval '1 minute',
                 'search', null, 700, true, 'failed'
            from generate_series(1, 40) as n`,
    );
    const cases = [
      { groupBy: ['SERVER', 'TOOL'], bucket: null },
      { groupBy: ['OWNER', 'SERVER'], bucket: 'DAY' },
      { groupBy: ['CONFIGURATION', 'TOOL', 'OWNER'], bucket: null },
      { groupBy: ['TOOL', 'SERVER'], bucket: 'HOUR' },
      { groupBy: ['OWNER'], bucket: 'DAY' },
    ];
    for (const { groupBy, bucket } of cases) {
      // Ranked by a count, the database picks the groups that can come first (ties with the last included),
      // and the domain orders those: the same groups as from all of them, ties broken by key alike.
      for (const [orderBy, minCalls] of [
        [{ field: 'TOTAL' }, 0],
        [{ field: 'TOTAL', direction: 'ASC' }, 3],
        [{ field: 'FAILED' }, 0],
        [{ field: 'FAILURE_RATE' }, 0],
        [{ field: 'FAILURE_RATE', direction: 'ASC' }, 0],
        [{ field: 'KEY', direction: 'ASC' }, 0],
      ] as const) {
        const whole = await statsPage({ groupBy, bucket, filter: range, orderBy, minCalls, first: 500 });
        expect(whole.truncated).toBe(false);
        const keys = [...new Set(whole.groups.map(keyOf))];
        expect(keys.length).toBeGreaterThan(2);
        // Cut to none, one and five groups, or all but one of fewer (the three owners, by one field).
        for (const first of [0, 1, Math.min(5, keys.length - 1)]) {
          const cut = await statsPage({ groupBy, bucket, filter: range, orderBy, minCalls, first });
          expect(cut.truncated).toBe(true);
          expect(cut.groups).toEqual(whole.groups.filter((g) => keys.slice(0, first).includes(keyOf(g))));
        }
        const exact = await statsPage({
          groupBy,
          bucket,
          filter: range,
          orderBy,
          minCalls,
          first: keys.length,
        });
        expect(exact).toEqual({ groups: whole.groups, truncated: false });
      }
    }
    const byServer = await stats({
      groupBy: ['SERVER', 'TOOL'],
      filter: range,
      orderBy: { field: 'FAILED' },
      first: 1,
    });
    expect(byServer.map(keyOf)).toEqual(['/search//']);
    // The statements themselves, from the rollups and from run_steps: only the groups named, each whole. Over
    // weeks too, where the weekly rollups by owner and server and by configuration and server find each group's
    // weeks by their index on it, and those by owner and tool and by server and tool read them by condition;
    // grouped by all four fields, or by three with server and tool, the daily rollup and its durations find
    // each group's days by one of their indexes.
    const weeks = {
      from: new Date(from - 10 * DAY + 17 * 60_000),
      to: new Date(to + 12 * DAY - 23 * 60_000),
    };
    for (const groupBy of [
      ['owner', 'server'],
      ['configuration', 'server'],
      ['owner', 'tool'],
      ['server', 'tool'],
      ['server', 'owner', 'tool'],
      ['tool', 'configuration', 'server'],
      ['tool', 'owner', 'server', 'configuration'],
    ] as const)
      for (const range of [{ from: new Date(from), to: new Date(to) }, weeks])
        for (const spec of [null, bucketSpec('day', 0), bucketSpec('week', 0)]) {
          const query: StatsQuery = { groupBy, range, spec };
          const options = {
            spec,
            range,
            orderBy: 'key' as const,
            descending: false,
            minCalls: 1,
            first: 500,
          };
          const all = summarise(await outcomeStatsCells(api.db, query, 'raw'), options).groups;
          const keys = [...new Set(all.map(keyOf))];
          // Every other group, and the one with no server (stored as an empty name) where grouped by server.
          const noServer = (key: string) =>
            (groupBy as readonly string[]).includes('server') && key.startsWith('/');
          const namedKeys = new Set(keys.filter((key, i) => i % 2 === 0 || noServer(key)));
          const named = all.filter((group) => namedKeys.has(keyOf(group)));
          expect(named.length).toBeLessThan(all.length);
          const onlyGroups = oneOfEach(named);
          for (const strategy of ['auto', 'raw'] as const) {
            const only = summarise(
              await outcomeStatsCells(api.db, { ...query, onlyGroups }, strategy),
              options,
            );
            expect(only.groups).toEqual(named);
          }
          // A second pass after a first that counted the groups: the histograms alone, which add up with the counts.
          if (spec === null) {
            const counts = await outcomeStatsCells(api.db, { ...query, onlyGroups, durations: false });
            const histograms = await outcomeStatsCells(api.db, {
              ...query,
              onlyGroups,
              histogramsOnly: true,
            });
            expect(
              histograms.every((cell) => cell.tally.ok + cell.tally.failed + cell.tally.cancelled === 0),
            ).toBe(true);
            expect(summarise([...counts, ...histograms], options).groups).toEqual(named);
          }
        }
  });

  it('names groups whose names hold quotes, backslashes, commas, braces or the word NULL, and reads each whole', async () => {
    const [run] = await api.db.select().from(runs).where(eq(runs.owner, 'alice')).limit(1);
    const servers = ['say "hi"', 'back\\slash', 'a,b', '{braces}', 'NULL', ' spaced ', 'Käse'];
    await api.db.execute(
      sql`insert into run_steps (run_id, sequence, kind, occurred_at, tool_name, server, duration_ms, tool_is_error, tool_outcome)
          select ${run?.id ?? 0}, 300000 + n, 'tool', ${new Date(BASE + 2 * DAY).toISOString()}::timestamptz + n * interval '1 minute',
                 'search', (array[${sql.join(
                   servers.map((server) => sql`${server}`),
                   sql`, `,
                 )}]::text[])[1 + n % ${servers.length}], 100 * n, false, 'ok'
            from generate_series(1, ${servers.length * 3}) as n`,
    );
    const range = { from: new Date(from - 10 * DAY), to: new Date(to + 12 * DAY) };
    for (const groupBy of [
      ['owner', 'server'],
      ['server', 'tool'],
    ] as const)
      for (const spec of [null, bucketSpec('week', 0)]) {
        const query: StatsQuery = { groupBy, range, spec };
        const options = { spec, range, orderBy: 'key' as const, descending: false, minCalls: 1, first: 500 };
        const all = summarise(await outcomeStatsCells(api.db, query, 'raw'), options).groups;
        const named = all.filter((group) => servers.includes(group.server ?? ''));
        expect(new Set(named.map((group) => group.server))).toEqual(new Set(servers));
        const onlyGroups = oneOfEach(named);
        const only = summarise(await outcomeStatsCells(api.db, { ...query, onlyGroups }, 'auto'), options);
        expect(only.groups).toEqual(named);
        // The same names as a filter (one array parameter): these groups, whichever way the range is read.
        for (const strategy of ['raw', 'auto'] as const) {
          const filtered = await outcomeStatsCells(api.db, { ...query, servers }, strategy);
          expect(summarise(filtered, options).groups).toEqual(named);
        }
      }
  });

  it('gives the same answer from the rollups as from run_steps, for every grouping, bucket, offset and actor, also after updates and deletes', async () => {
    const db = api.db;
    const groupings = [
      [],
      ['server'],
      ['server', 'tool'],
      ['configuration'],
      ['owner', 'server'],
      ['configuration', 'tool'],
      ['tool'],
      ['owner', 'tool'],
      ['owner', 'configuration', 'server'],
      ['server', 'tool', 'configuration', 'owner'],
      ['owner', 'configuration'],
      ['configuration', 'server'],
      ['server', 'owner'],
      ['owner'],
      ['owner', 'server', 'tool'],
      ['configuration', 'server', 'tool'],
    ] as const;
    // Filters taken in turn too: a filter needs its field in the rollup's key as a grouping does.
    const filters: Array<Partial<StatsQuery>> = [
      {},
      { servers: ['fs'] },
      {},
      { tools: ['read', 'fetch'] },
      { configurations: ['docs'] },
    ];
    const sourcesUsed = new Set<string>();
    const buckets = [
      [null, 0],
      ['hour', 0],
      ['day', 0],
      ['week', 0],
      ['day', 120],
      ['hour', -180],
      ['day', 330],
      ['week', 60],
      ['day', -600],
    ] as const;
    // Whole hours, and partial hours at both edges (read from run_steps, the rest from the rollups).
    const wholeHours = { from: new Date(from), to: new Date(to) };
    const partialHours = { from: new Date(from + 17 * 60_000), to: new Date(to - 23 * 60_000) };
    // Weeks around the calls, with partial days and hours at both edges: whole weeks come from a weekly rollup.
    const weeks = {
      from: new Date(from - 10 * DAY + 17 * 60_000),
      to: new Date(to + 12 * DAY - 23 * 60_000),
    };
    const compare = async () => {
      // Every grouping with every bucket; ranges and owners taken in turn, so each meets each.
      let turn = 0;
      // The days holding the calls: a range holding most of them may be read as all calls less the rest.
      const { recorded } = await callsOnRecord(db);
      expect(recorded).not.toBeNull();
      // Rows of each rollup as if the rollups of all time were the smallest: they read every range they can.
      const allTimeSmallest = Object.fromEntries(
        OUTCOME_ROLLUPS.map((rollup, i) => [rollup.name, rollup.grain === 'all' ? 1 + i : 1_000_000]),
      );
      // And as if the weekly rollup keyed by every field held a row per key and month: it reads the weeks
      // of a range of weeks.
      const weeksSmallest = Object.fromEntries(
        OUTCOME_ROLLUPS.map((rollup) => [
          rollup.name,
          rollup.name === 'ownerConfigurationServerToolWeekly' ? 1 : 1_000_000,
        ]),
      );
      for (const groupBy of groupings)
        for (const [bucket, offset] of buckets) {
          turn += 1;
          const turnsRange = [wholeHours, partialHours, weeks][turn % 3] ?? wholeHours;
          const owners = turn % 4 === 0 ? ['bob'] : null;
          // Without buckets, counts alone too: the rollups that keep no histograms may answer.
          for (const rollupRows of bucket === null ? [null, allTimeSmallest, weeksSmallest] : [null]) {
            const range = rollupRows === weeksSmallest ? weeks : turnsRange;
            const query: StatsQuery = {
              groupBy,
              range,
              spec: bucket ? bucketSpec(bucket, offset) : null,
              owners,
              ...filters[turn % filters.length],
              // Answered at the range's end now and then: its last units read whole, less what is to come.
              ...(turn % 2 === 0 ? { now: range.to } : {}),
              ...(turn % 5 !== 0 ? { recorded } : {}),
              ...(rollupRows ? { durations: false, rollupRows } : {}),
            };
            for (const segment of statsSegments(query)) sourcesUsed.add(segment.source);
            const options = {
              spec: query.spec,
              range: query.range,
              orderBy: 'key' as const,
              descending: false,
              minCalls: 1,
              first: 500,
            };
            const viaRollups = summarise(await outcomeStatsCells(db, query, 'auto'), options);
            const viaSteps = summarise(await outcomeStatsCells(db, query, 'raw'), options);
            expect(viaRollups).toEqual(viaSteps);
          }
        }
    };
    await compare();
    // Every rollup, and run_steps, answered some part of some query.
    expect([...sourcesUsed].sort()).toEqual([...OUTCOME_ROLLUPS.map((r) => r.name), 'raw'].sort());
    await db.execute(
      sql`update run_steps set tool_is_error = not tool_is_error where tool_outcome is null and tool_is_error is not null`,
    );
    await db.execute(
      sql`update run_steps set duration_ms = duration_ms + 1000 where kind = 'tool' and server = 'fs'`,
    );
    await db.execute(sql`update runs set owner = 'bob' where owner = 'carol'`);
    await compare();
    const [victim] = await db.select().from(runs).where(eq(runs.owner, 'bob')).limit(1);
    await db.delete(runs).where(eq(runs.id, victim?.id ?? 0));
    await compare();
  }, 180_000);

  it('answers an actor who sees only its own runs with its own calls only, by hour, day and week', async () => {
    const ownOnly = { actor: 'bob', permissions: ['read_own_runs'] as const };
    for (const bucket of [null, 'HOUR', 'DAY', 'WEEK'] as const) {
      const result = await api.query<{ toolOutcomeStats: { groups: Group[] } }>(
        STATS,
        { groupBy: ['SERVER', 'TOOL'], filter: range, bucket },
        ownOnly,
      );
      expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
      const groups = result.data?.toolOutcomeStats.groups ?? [];
      const bobs = calls.filter((c) => c.owner === 'bob');
      const total = (list: readonly Call[]) =>
        list.filter((c) => c.at.getTime() >= from && c.at.getTime() < to).length;
      expect(groups.reduce((sum, g) => sum + g.counts.total, 0)).toBe(total(bobs));
      expect(total(bobs)).toBeLessThan(total(calls));
      if (bucket === null)
        checkAgainst(
          groups,
          expectedGroups(bobs, (c) => `${c.server}/${c.tool}`, from, to),
          (g) => `${g.server}/${g.toolName}`,
        );
    }
    // Asking for another owner's runs finds nothing, without a statement that could leak them.
    const others = await api.query<{ toolOutcomeStats: { groups: Group[] } }>(
      STATS,
      { groupBy: ['OWNER'], filter: { ...range, owners: ['alice'] } },
      ownOnly,
    );
    expect(others.errors).toBeUndefined();
    expect(others.data?.toolOutcomeStats.groups).toEqual([]);
  });

  it('counts the same when no percentile is asked for, and finds percentiles asked for in a fragment', async () => {
    const countsOnly = `query ($groupBy: [OutcomeGroupBy!]!, $filter: ToolStepFilter, $bucket: TimeBucket) {
      toolOutcomeStats(groupBy: $groupBy, filter: $filter, bucket: $bucket) { groups {
        server toolName configuration owner bucketStart counts { ok failed cancelled total failureRate } } } }`;
    for (const variables of [
      { groupBy: ['SERVER'], filter: range },
      { groupBy: ['TOOL'], filter: { ...range, servers: ['fs'] }, bucket: 'DAY' },
      { groupBy: ['OWNER'], filter: range },
      { groupBy: [], filter: range },
    ]) {
      const full = await stats(variables);
      const lean = await api.query<{ toolOutcomeStats: { groups: Group[] } }>(countsOnly, variables);
      expect(lean.data?.toolOutcomeStats.groups).toEqual(
        full.map(({ p50DurationMs, p95DurationMs, ...rest }) => rest),
      );
    }
    const viaFragment = await api.query<{
      toolOutcomeStats: { groups: Array<{ p95DurationMs: number | null }> };
    }>(
      `query ($filter: ToolStepFilter) { toolOutcomeStats(groupBy: [SERVER], filter: $filter) { groups { ...Durations } } }
       fragment Durations on ToolOutcomeGroup { p95DurationMs }`,
      { filter: range },
    );
    expect(viaFragment.data?.toolOutcomeStats.groups.every((g) => g.p95DurationMs !== null)).toBe(true);
  });

  it('refuses a reversed range, a range over 400 days, too many buckets, a bad offset and first over 500, each with its code and field', async () => {
    const refusals = async (variables: Record<string, unknown>) =>
      (await api.query(STATS, variables)).errors?.map((e) => [e.extensions?.code, e.extensions?.field]);
    expect(
      await refusals({
        groupBy: ['SERVER'],
        filter: { occurredAfter: '2026-11-03T00:00:00Z', occurredBefore: '2026-11-02T00:00:00Z' },
      }),
    ).toEqual([['RANGE_EMPTY', 'filter']]);
    expect(
      await refusals({
        groupBy: ['SERVER'],
        filter: { occurredAfter: '2024-01-01T00:00:00Z', occurredBefore: '2026-01-01T00:00:00Z' },
      }),
    ).toEqual([['RANGE_TOO_LONG', 'filter']]);
    // The README promises TOO_MANY_BUCKETS: the domain's code reaches the client, not BAD_USER_INPUT.
    expect(
      await refusals({
        groupBy: ['SERVER'],
        bucket: 'HOUR',
        filter: { occurredAfter: '2026-01-01T00:00:00Z', occurredBefore: '2026-11-01T00:00:00Z' },
      }),
    ).toEqual([['TOO_MANY_BUCKETS', 'bucket']]);
    expect(await refusals({ groupBy: ['SERVER'], bucket: 'DAY', offset: 900 })).toEqual([
      ['VALUE_OUT_OF_RANGE', 'utcOffsetMinutes'],
    ]);
    expect(await refusals({ groupBy: ['SERVER'], first: 501 })).toEqual([['VALUE_OUT_OF_RANGE', 'first']]);
  });
});

// Outside any transaction of a test's own, where the snapshot is a transaction and not a savepoint.
describe.each(backendNames)('the statistics snapshot (%s)', (backend) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
  });
  afterAll(async () => database?.dispose());

  it('reads in a read-only snapshot with the statistics work memory and parallel setup cost, which end with it', async () => {
    const settings = (db: Database) =>
      selectRows<{ work_mem: string; parallel_setup_cost: string; isolation: string }>(
        db,
        sql`select current_setting('work_mem') as work_mem,
                   current_setting('parallel_setup_cost') as parallel_setup_cost,
                   current_setting('transaction_isolation') as isolation`,
      );
    const [before] = await settings(database.handle.db);
    expect(before?.work_mem).not.toBe(STATS_WORK_MEM);
    expect(before?.parallel_setup_cost).not.toBe(STATS_PARALLEL_SETUP_COST);
    expect(await inStatsSnapshot(database.handle.db, settings)).toEqual([
      {
        work_mem: STATS_WORK_MEM,
        parallel_setup_cost: STATS_PARALLEL_SETUP_COST,
        isolation: 'repeatable read',
      },
    ]);
    expect(await settings(database.handle.db)).toEqual([before]);
    const write = inStatsSnapshot(database.handle.db, (tx) =>
      tx.execute(sql`update runs set configuration = configuration`),
    );
    await expect(write).rejects.toMatchObject({ cause: { code: '25006' } });
  });

  it('fails a request with the error of the statement that failed, not one of its own after it', async () => {
    // The second pass's statements, the statement after its setting replaced by one that fails in
    // the database: the transaction is aborted, and whatever the pass does next is refused with 25P02.
    let statements = 0;
    const failing = (tx: Database): Database =>
      new Proxy(tx, {
        get(target, property, receiver) {
          if (property !== 'execute') return Reflect.get(target, property, receiver);
          return (...args: Parameters<Database['execute']>) => {
            statements += 1;
            return statements === 2 ? target.execute(sql`select 1 / 0`) : target.execute(...args);
          };
        },
      });
    const query: StatsQuery = {
      groupBy: ['server', 'tool'],
      range: { from: new Date('2026-03-02T00:00:00Z'), to: new Date('2026-03-23T00:00:00Z') },
      spec: null,
      onlyGroups: [{ server: 'fs', toolName: 'read', configuration: null, owner: null }],
    };
    const read = inStatsSnapshot(database.handle.db, (tx) => outcomeStatsCells(failing(tx), query));
    await expect(read).rejects.toMatchObject({ cause: { code: '22012' } });
    expect(statements).toBe(2);
  });
});

// Writes that commit while a request reads need committed data and a second connection: PostgreSQL, a database of its own.
describe.each(backendNames.filter((name) => name === 'postgres'))(
  'tool outcome statistics under concurrent writes (%s)',
  (backend) => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await openTestDatabase(backend);
    });
    afterAll(async () => database?.dispose());

    it('reads every part of a request in one snapshot: a call committed between its statements counts in none', async () => {
      const exec = (text: string) => database.handle.withSession((s) => s.exec(text));
      const day = '2026-03-10';
      await exec(`
        INSERT INTO runs (uuid, owner, configuration, status) VALUES (gen_random_uuid(), 'alice', 'snap', 'running');
        INSERT INTO run_steps (run_id, sequence, kind, occurred_at, duration_ms, tool_name, server, tool_is_error, tool_outcome)
        SELECT (SELECT id FROM runs WHERE configuration = 'snap'), g + 1, 'tool',
               timestamptz '${day} 00:30Z' + g * interval '1 hour', 10, 'read', 'fs', false, 'ok'
          FROM generate_series(0, 40) AS g;`);
      // From 05:00 to the end of the next day: the first day is read whole, less its first five hours.
      const range = { from: new Date(`${day}T05:00:00Z`), to: new Date('2026-03-12T00:00:00Z') };
      const expected = 41 - 5;
      const ask = (db: Database) =>
        toolOutcomeStats(
          { db, actor: { name: 'alice', permissions: new Set(['read_all_runs'] as const) } },
          {
            groupBy: ['server'],
            filter: { occurredAfter: range.from, occurredBefore: range.to },
            utcOffsetMinutes: 0,
            minCalls: 1,
            first: 10,
            durations: true,
          },
        );
      expect((await ask(database.handle.db)).groups.map((g) => g.counts.total)).toEqual([expected]);
      expect(
        statsSegments({ groupBy: ['server'], range, spec: null }).map((s) => [s.source, Boolean(s.subtract)]),
      ).toEqual([
        ['serverHourly', true],
        ['serverDaily', false],
      ]);
      // After the request's first part (its first statement sets the snapshot's work memory), another
      // connection commits three calls in the hours taken away.
      const writer = new pg.Client({ connectionString: database.url });
      await writer.connect();
      let statements = 0;
      const writeAfterFirst = async () => {
        statements += 1;
        if (statements !== 2) return;
        await writer.query(`INSERT INTO run_steps (run_id, sequence, kind, occurred_at, duration_ms, tool_name, server, tool_is_error, tool_outcome)
          SELECT (SELECT id FROM runs WHERE configuration = 'snap'), 100 + g, 'tool', timestamptz '${day} 02:10Z', 10, 'read', 'fs', false, 'ok'
            FROM generate_series(1, 3) AS g`);
      };
      const inTransaction = (tx: Database): Database =>
        new Proxy(tx, {
          get(target, property, receiver) {
            if (property !== 'execute') return Reflect.get(target, property, receiver);
            return async (...args: Parameters<Database['execute']>) => {
              const result = await target.execute(...args);
              await writeAfterFirst();
              return result;
            };
          },
        });
      const watched = new Proxy(database.handle.db, {
        get(target, property, receiver) {
          if (property !== 'transaction') return Reflect.get(target, property, receiver);
          return (
            work: (tx: Database) => Promise<unknown>,
            config?: Parameters<Database['transaction']>[1],
          ) => target.transaction((tx) => work(inTransaction(tx)), config);
        },
      });
      try {
        const answer = await ask(watched);
        // The settings, the recorded days, the two parts of the range, and the changes not folded yet.
        expect(statements).toBe(5);
        // The three calls lie outside the range: counted in the whole day by a later snapshot, never taken away.
        expect(answer.groups.map((g) => g.counts.total)).toEqual([expected]);
        expect((await ask(database.handle.db)).groups.map((g) => g.counts.total)).toEqual([expected]);
      } finally {
        await writer.end();
      }
    });
  },
);
