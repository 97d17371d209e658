import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runs } from '../../drizzle/schema.ts';
import type { RunStatus, TerminationReason } from '../../src/domain/run-status.ts';
import { type AskAs, openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** A Monday. */
const BASE = Date.parse('2026-11-02T00:00:00Z');

/** One run as the test knows it. */
interface Run {
  configuration: string;
  owner: string;
  status: RunStatus;
  terminationReason: TerminationReason | null;
  createdAt: number;
}

type Dimension = 'CONFIGURATION' | 'OWNER' | 'STATUS' | 'TERMINATION_REASON';
type Bucket = 'HOUR' | 'DAY' | 'WEEK';

const ENDINGS: ReadonlyArray<readonly [RunStatus, TerminationReason | null]> = [
  ['completed', 'completed'],
  ['completed', 'completed'],
  ['failed', 'provider_failed'],
  ['failed', 'max_iterations'],
  ['failed', 'budget_exhausted'],
  ['cancelled', 'cancelled'],
  ['running', null],
  ['queued', null],
  ['waiting_for_approval', null],
  ['failed', 'retries_exhausted'],
  ['completed', 'context_truncated'],
];

/**
 * A deterministic, uneven data set: three owners and configurations in
 * unequal shares, every kind of ending, created over 16 days at any minute,
 * and runs exactly on the edges of the range and of UTC and +05:30 days.
 */
function buildRuns(): Run[] {
  const list: Run[] = [];
  let seed = 7;
  const next = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
  for (let i = 0; i < 360; i += 1) {
    const [status, terminationReason] = ENDINGS[next(ENDINGS.length)] ?? ['running', null];
    list.push({
      configuration: ['triage', 'triage', 'docs', 'review', 'triage', 'docs'][next(6)] ?? 'triage',
      owner: ['alice', 'bob', 'alice', 'carol', 'alice', 'bob', 'dave'][next(7)] ?? 'alice',
      status,
      terminationReason,
      createdAt: BASE - DAY + next(17 * 24 * 60) * 60_000 + next(60_000),
    });
  }
  const at = (createdAt: number, i: number): Run => ({
    configuration: ['docs', 'review'][i % 2] ?? 'docs',
    owner: ['bob', 'carol'][i % 2] ?? 'bob',
    status: 'failed',
    terminationReason: 'policy_denied',
    createdAt,
  });
  const edges = [
    FROM,
    TO,
    TO - 1,
    FROM - 1,
    BASE + 2 * DAY,
    BASE + 2 * DAY - 1,
    BASE + 3 * DAY - 330 * 60_000,
    BASE + 7 * DAY,
  ];
  edges.forEach((t, i) => {
    list.push(at(t, i));
  });
  return list;
}

// Partial hours and days at both ends; three Monday weeks.
const FROM = BASE + 5 * HOUR + 17 * 60_000;
const TO = BASE + 15 * DAY + 7 * HOUR + 40 * 60_000;

const DIMENSIONS: Record<Dimension, (run: Run) => string | null> = {
  CONFIGURATION: (run) => run.configuration,
  OWNER: (run) => run.owner,
  STATUS: (run) => run.status,
  TERMINATION_REASON: (run) => run.terminationReason,
};
const KEY_ORDER: Dimension[] = ['CONFIGURATION', 'OWNER', 'STATUS', 'TERMINATION_REASON'];

/** The start of the bucket holding t, computed by calendar (weeks from the local Monday), not by the service's formula. */
function bucketOf(t: number, bucket: Bucket, offsetMinutes: number): number {
  const shift = offsetMinutes * 60_000;
  const local = t + shift;
  if (bucket === 'HOUR') return Math.floor(local / HOUR) * HOUR - shift;
  const dayStart = Math.floor(local / DAY) * DAY;
  if (bucket === 'DAY') return dayStart - shift;
  const sinceMonday = (new Date(dayStart).getUTCDay() + 6) % 7;
  return dayStart - sinceMonday * DAY - shift;
}

function nextBucket(start: number, bucket: Bucket): number {
  return start + (bucket === 'HOUR' ? HOUR : bucket === 'DAY' ? DAY : 7 * DAY);
}

interface Row {
  bucketStart: string | null;
  configuration: string | null;
  owner: string | null;
  status: string | null;
  terminationReason: string | null;
  runs: number;
}

interface Ask {
  groupBy: Dimension[];
  bucket?: Bucket;
  offset?: number;
  from?: number;
  to?: number;
  first?: number;
}

/** The expected answer, computed here: groups by runs descending then key (null first), buckets filled. */
function expected(all: readonly Run[], ask: Ask): { groups: Row[]; truncated: boolean } {
  const from = ask.from ?? FROM;
  const to = ask.to ?? TO;
  const offset = ask.offset ?? 0;
  const inRange = all.filter((run) => run.createdAt >= from && run.createdAt < to);
  const dims = KEY_ORDER.filter((d) => ask.groupBy.includes(d));
  const groups = new Map<string, { key: Array<string | null>; runs: Run[] }>();
  for (const run of inRange) {
    const key = dims.map((d) => DIMENSIONS[d](run));
    const id = JSON.stringify(key);
    const group = groups.get(id) ?? { key, runs: [] };
    group.runs.push(run);
    groups.set(id, group);
  }
  const compareKeys = (a: Array<string | null>, b: Array<string | null>) => {
    for (let i = 0; i < a.length; i += 1) {
      const left = a[i] ?? null;
      const right = b[i] ?? null;
      if (left === right) continue;
      if (left === null) return -1;
      if (right === null) return 1;
      return left < right ? -1 : 1;
    }
    return 0;
  };
  const ordered = [...groups.values()].sort(
    (a, b) => b.runs.length - a.runs.length || compareKeys(a.key, b.key),
  );
  const first = ask.first ?? 100;
  const kept = ordered.slice(0, first);
  const upper = (value: string | null) => (value === null ? null : value.toUpperCase());
  const rowOf = (key: Array<string | null>, bucketStart: string | null, count: number): Row => {
    const value = (d: Dimension) => (dims.includes(d) ? (key[dims.indexOf(d)] ?? null) : null);
    return {
      bucketStart,
      configuration: value('CONFIGURATION'),
      owner: value('OWNER'),
      status: upper(value('STATUS')),
      terminationReason: upper(value('TERMINATION_REASON')),
      runs: count,
    };
  };
  const rows = kept.flatMap((group) => {
    const bucket = ask.bucket;
    if (!bucket) return [rowOf(group.key, null, group.runs.length)];
    const out: Row[] = [];
    for (let start = bucketOf(from, bucket, offset); start < to; start = nextBucket(start, bucket)) {
      const count = group.runs.filter((run) => bucketOf(run.createdAt, bucket, offset) === start).length;
      out.push(rowOf(group.key, new Date(start).toISOString(), count));
    }
    return out;
  });
  return { groups: rows, truncated: ordered.length > first };
}

const STATS = `query ($groupBy: [RunGroupBy!]!, $bucket: TimeBucket, $filter: RunStatsFilter, $first: Int! = 100,
  $offset: Int! = 0) {
  runStats(groupBy: $groupBy, bucket: $bucket, filter: $filter, first: $first, utcOffsetMinutes: $offset) {
    groups { bucketStart configuration owner status terminationReason runs }
    truncated
  }
}`;

const range = (from = FROM, to = TO) => ({
  createdAfter: new Date(from).toISOString(),
  createdBefore: new Date(to).toISOString(),
});

/** Every non-empty combination of the four dimensions, in a given order and reversed. */
function combinations(): Dimension[][] {
  const all: Dimension[][] = [];
  for (let mask = 1; mask < 16; mask += 1) {
    const dims = KEY_ORDER.filter((_, i) => mask & (1 << i));
    all.push(mask % 2 === 0 ? dims.reverse() : dims);
  }
  return all;
}

describe.each(backendNames)('run statistics (%s)', (backend) => {
  let api: TestApi;
  const data = buildRuns();
  const statements: string[] = [];
  const statsStatements = () => statements.filter((statement) => /from runs r\b/.test(statement));

  beforeAll(async () => {
    api = await openTestApi(backend, { onQuery: (statement) => statements.push(statement) });
    await api.db.insert(runs).values(
      data.map((run) => ({
        uuid: crypto.randomUUID(),
        owner: run.owner,
        configuration: run.configuration,
        status: run.status,
        terminationReason: run.terminationReason,
        createdAt: new Date(run.createdAt),
      })),
    );
  }, 120_000);
  afterAll(async () => api?.dispose());
  rollbackEach(() => api);

  async function ask(variables: Record<string, unknown>, as?: AskAs) {
    const result = await api.query<{ runStats: { groups: Row[]; truncated: boolean } }>(STATS, variables, as);
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data?.runStats ?? { groups: [], truncated: false };
  }

  it('counts every grouping, alone and in pairs, threes and all four, in the documented order', async () => {
    const groupings = combinations();
    expect(groupings).toHaveLength(15);
    for (const groupBy of groupings) {
      const answer = await ask({ groupBy, filter: range(), first: 500 });
      expect(answer, groupBy.join(',')).toEqual(expected(data, { groupBy, first: 500 }));
    }
    // The data set is varied enough to mean something: ties, runs without a reason, edges.
    const byReason = expected(data, { groupBy: ['TERMINATION_REASON'] }).groups;
    expect(byReason.some((g) => g.terminationReason === null && g.runs > 0)).toBe(true);
    const inRange = data.filter((run) => run.createdAt >= FROM && run.createdAt < TO).length;
    expect(byReason.reduce((sum, g) => sum + g.runs, 0)).toBe(inRange);
    expect(inRange).toBeLessThan(data.length);
  });

  it('answers HOUR, DAY and WEEK series for every pair, each bucket present, empty ones at zero', async () => {
    const pairs = combinations().filter((dims) => dims.length === 2);
    expect(pairs).toHaveLength(6);
    const hourTo = BASE + 2 * DAY + 3 * HOUR + 5 * 60_000;
    for (const groupBy of pairs) {
      for (const bucket of ['DAY', 'WEEK'] as const) {
        const answer = await ask({ groupBy, bucket, filter: range(), first: 500 });
        expect(answer, `${groupBy.join(',')} ${bucket}`).toEqual(
          expected(data, { groupBy, bucket, first: 500 }),
        );
      }
      const hours = await ask({ groupBy, bucket: 'HOUR', filter: range(FROM, hourTo), first: 500 });
      expect(hours, `${groupBy.join(',')} HOUR`).toEqual(
        expected(data, { groupBy, bucket: 'HOUR', to: hourTo, first: 500 }),
      );
    }
    const weeks = await ask({ groupBy: ['STATUS'], bucket: 'WEEK', filter: range() });
    // 2026-11-02 is a Monday: three weeks, the rows of a group together, buckets ascending.
    expect(weeks.groups.slice(0, 3).map((g) => g.bucketStart)).toEqual([
      '2026-11-02T00:00:00.000Z',
      '2026-11-09T00:00:00.000Z',
      '2026-11-16T00:00:00.000Z',
    ]);
    const days = await ask({ groupBy: ['OWNER'], bucket: 'DAY', filter: range() });
    expect(days.groups.some((g) => g.runs === 0)).toBe(true);
    const totals = new Map<string, number>();
    for (const g of days.groups) totals.set(String(g.owner), (totals.get(String(g.owner)) ?? 0) + g.runs);
    expect([...totals.values()]).toEqual([...totals.values()].sort((a, b) => b - a));
  });

  it('aligns buckets at a UTC offset: days at +05:30 and -03:00, weeks on the local Monday', async () => {
    for (const [bucket, offset] of [
      ['DAY', 330],
      ['DAY', -180],
      ['WEEK', 60],
      ['HOUR', 330],
    ] as const) {
      const to = bucket === 'HOUR' ? FROM + 3 * DAY : TO;
      for (const groupBy of [['STATUS', 'TERMINATION_REASON'], ['CONFIGURATION']] as Dimension[][]) {
        const answer = await ask({ groupBy, bucket, offset, filter: range(FROM, to), first: 500 });
        expect(answer, `${bucket} ${offset}`).toEqual(
          expected(data, { groupBy, bucket, offset, to, first: 500 }),
        );
      }
    }
    const local = await ask({ groupBy: ['OWNER'], bucket: 'DAY', offset: 330, filter: range() });
    expect(local.groups.every((g) => g.bucketStart?.endsWith('T18:30:00.000Z'))).toBe(true);
  });

  it('filters by statuses, configurations and owners', async () => {
    const filter = {
      ...range(),
      statuses: ['FAILED', 'RUNNING'],
      configurations: ['triage', 'docs'],
      owners: ['alice', 'bob'],
    };
    const picked = data.filter(
      (run) =>
        ['failed', 'running'].includes(run.status) &&
        ['triage', 'docs'].includes(run.configuration) &&
        ['alice', 'bob'].includes(run.owner),
    );
    for (const groupBy of [
      ['STATUS', 'TERMINATION_REASON'],
      ['OWNER', 'CONFIGURATION'],
    ] as Dimension[][]) {
      expect(await ask({ groupBy, filter })).toEqual(expected(picked, { groupBy }));
    }
    expect(await ask({ groupBy: ['OWNER'], filter: { ...range(), owners: ['nobody'] } })).toEqual({
      groups: [],
      truncated: false,
    });
  });

  it('counts the 30 days up to now without a range, and the 30 days before createdBefore with only that', async () => {
    const now = Date.now();
    const configuration = 'window-check';
    const at = [now - 60_000, now - 29 * DAY, now - 31 * DAY, now + HOUR, now - 45 * DAY];
    await api.db.insert(runs).values(
      at.map((t) => ({
        uuid: crypto.randomUUID(),
        owner: 'alice',
        configuration,
        status: 'running',
        createdAt: new Date(t),
      })),
    );
    const recent = await ask({ groupBy: ['CONFIGURATION'], filter: { configurations: [configuration] } });
    expect(recent.groups).toEqual([expect.objectContaining({ configuration, runs: 2 })]);
    const before = new Date(now - 20 * DAY).toISOString();
    const older = await ask({
      groupBy: ['CONFIGURATION'],
      filter: { configurations: [configuration], createdBefore: before },
    });
    // [now - 50 days, now - 20 days): the runs 29, 31 and 45 days old.
    expect(older.groups).toEqual([expect.objectContaining({ configuration, runs: 3 })]);
  });

  it('counts only its own runs for an actor without read_all_runs, whatever owners it asks for', async () => {
    const ownOnly = { actor: 'bob', permissions: ['read_own_runs'] as const };
    const bobs = data.filter((run) => run.owner === 'bob');
    for (const bucket of [undefined, 'HOUR', 'DAY', 'WEEK'] as const) {
      const to = bucket === 'HOUR' ? FROM + 2 * DAY : TO;
      const groupBy: Dimension[] = ['OWNER', 'STATUS'];
      const answer = await ask({ groupBy, bucket, filter: range(FROM, to), first: 500 }, ownOnly);
      expect(answer).toEqual(expected(bobs, { groupBy, bucket, to, first: 500 }));
      expect(new Set(answer.groups.map((g) => g.owner))).toEqual(new Set(['bob']));
    }
    expect(
      await ask({ groupBy: ['CONFIGURATION'], filter: { ...range(), owners: ['bob', 'alice'] } }, ownOnly),
    ).toEqual(expected(bobs, { groupBy: ['CONFIGURATION'] }));
    // Another owner's runs, or no read permission at all (record only): nothing, as if there were none.
    const none = { groups: [], truncated: false };
    statements.length = 0;
    expect(await ask({ groupBy: ['OWNER'], filter: { ...range(), owners: ['alice'] } }, ownOnly)).toEqual(
      none,
    );
    expect(
      await ask({ groupBy: ['OWNER'], filter: range() }, { actor: 'bob', permissions: ['record'] }),
    ).toEqual(none);
    // ... and without a statement that could count them.
    expect(statsStatements()).toEqual([]);
  });

  it('counts, ranks and cuts in one statement, with a bucket or without', async () => {
    for (const bucket of [undefined, 'DAY'] as const) {
      statements.length = 0;
      await ask({ groupBy: ['CONFIGURATION', 'STATUS'], bucket, filter: range(), first: 2 });
      expect(statsStatements()).toHaveLength(1);
      expect(statsStatements()[0]).toMatch(/group by/i);
      expect(statsStatements()[0]).toMatch(/dense_rank\(\)/i);
    }
  });

  it('cuts to first groups and says so; with buckets, first counts groups, each with all its buckets', async () => {
    const groupBy: Dimension[] = ['CONFIGURATION', 'OWNER'];
    const all = expected(data, { groupBy }).groups.length;
    expect(all).toBeGreaterThan(3);
    for (const first of [1, 3, all - 1, all, all + 1]) {
      const answer = await ask({ groupBy, filter: range(), first });
      expect(answer).toEqual(expected(data, { groupBy, first }));
      expect(answer.truncated).toBe(first < all);
    }
    const series = await ask({ groupBy: ['STATUS'], bucket: 'DAY', filter: range(), first: 2 });
    expect(series).toEqual(expected(data, { groupBy: ['STATUS'], bucket: 'DAY', first: 2 }));
    expect(series.truncated).toBe(true);
    expect(new Set(series.groups.map((g) => g.status)).size).toBe(2);
    expect(series.groups).toHaveLength(2 * 16);
  });

  it('refuses bad input with the codes of toolOutcomeStats, and answers no data', async () => {
    const refusal = async (variables: Record<string, unknown>) => {
      const result = await api.query(STATS, variables);
      expect(result.data).toBeNull();
      return result.errors?.map((e) => [e.extensions?.code, e.extensions?.field]);
    };
    expect(await refusal({ groupBy: [] })).toEqual([['VALUE_EMPTY', 'groupBy']]);
    expect(await refusal({ groupBy: ['OWNER', 'STATUS', 'OWNER'] })).toEqual([['VALUE_INVALID', 'groupBy']]);
    expect(await refusal({ groupBy: ['OWNER'], first: 0 })).toEqual([['VALUE_OUT_OF_RANGE', 'first']]);
    expect(await refusal({ groupBy: ['OWNER'], first: 501 })).toEqual([['VALUE_OUT_OF_RANGE', 'first']]);
    expect(await refusal({ groupBy: ['OWNER'], filter: range(TO, FROM) })).toEqual([
      ['RANGE_EMPTY', 'filter'],
    ]);
    expect(await refusal({ groupBy: ['OWNER'], filter: range(FROM, FROM) })).toEqual([
      ['RANGE_EMPTY', 'filter'],
    ]);
    expect(await refusal({ groupBy: ['OWNER'], filter: range(FROM, FROM + 400 * DAY + 1) })).toEqual([
      ['RANGE_TOO_LONG', 'filter'],
    ]);
    expect(await refusal({ groupBy: ['OWNER'], bucket: 'DAY', offset: 841 })).toEqual([
      ['VALUE_OUT_OF_RANGE', 'utcOffsetMinutes'],
    ]);
    expect(await refusal({ groupBy: ['OWNER'], bucket: 'HOUR', offset: -841 })).toEqual([
      ['VALUE_OUT_OF_RANGE', 'utcOffsetMinutes'],
    ]);
    expect(
      await refusal({ groupBy: ['OWNER'], bucket: 'HOUR', filter: range(FROM, FROM + 100 * DAY) }),
    ).toEqual([['TOO_MANY_BUCKETS', 'bucket']]);
    // The limits themselves are accepted.
    await ask({
      groupBy: ['OWNER'],
      first: 500,
      bucket: 'DAY',
      offset: -840,
      filter: range(FROM, FROM + 400 * DAY),
    });
    await ask({ groupBy: ['OWNER'], first: 1, bucket: 'HOUR', offset: 840 });
  });
});
