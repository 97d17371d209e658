import { describe, expect, it } from 'vitest';
import {
  type Measured,
  pruneViews,
  type Query,
  queryCost,
  selectGreedy,
  type View,
  viewName,
  weighedRows,
} from '../../bench/lattice.ts';

// A data set of 90 days and 900,000 calls: run_steps alone reads 2 rows' worth a call.
const views = {
  serverDaily: { span: 'day', fields: ['server'] },
  serverWeekly: { span: 'week', fields: ['server'] },
  ownerDaily: { span: 'day', fields: ['owner'] },
  everyKeyHourly: { span: 'hour', fields: ['owner', 'configuration', 'server', 'tool'] },
  serverAllTime: { span: 'all', fields: ['server'] },
} satisfies Record<string, View>;
const rows: Record<string, number> = {
  serverDaily: 9_000,
  serverWeekly: 1_300,
  ownerDaily: 90_000,
  ownerConfigurationServerToolHourly: 800_000,
  serverAllTime: 100,
};
const measured: Measured = {
  shape: 'toy',
  calls: 900_000,
  days: 90,
  rows: new Map(Object.entries(rows)),
  batchRowsPerCall: new Map([
    ['serverDaily', 0.01],
    ['serverWeekly', 0.005],
    ['ownerDaily', 0.1],
    ['ownerConfigurationServerToolHourly', 1],
    ['serverAllTime', 0.001],
  ]),
};
const byServer = (days: number, bucket: Query['bucket'] = null): Query => ({
  name: `by server, ${days} days`,
  needed: ['server'],
  share: 1,
  days,
  bucket,
});

describe('the lattice of rollups', () => {
  it('names views as the catalogue names rollups', () => {
    expect(viewName(views.everyKeyHourly)).toBe('ownerConfigurationServerToolHourly');
    expect(viewName({ span: 'day', fields: [] })).toBe('everyCallDaily');
  });

  it('reads run_steps, a call joined to its run, where no chosen view covers a request', () => {
    expect(queryCost(byServer(30), [], measured)).toBe(900_000 * (30 / 90) * 2);
    expect(queryCost(byServer(30), [views.ownerDaily], measured)).toBe(600_000);
    expect(queryCost({ ...byServer(30), share: 0.25 }, [], measured)).toBe(150_000);
  });

  it('cuts a range into weeks, days and edge hours, each from the cheapest view that covers it', () => {
    // 30 days: 28 in weeks, 1.5 in days, half a day in hours (run_steps: no hourly view by server).
    const cost = queryCost(byServer(30), [views.serverDaily, views.serverWeekly], measured);
    const expected = (1_300 * 28) / 90 + (9_000 * 1.5) / 90 + 900_000 * (0.5 / 90) * 2;
    expect(cost).toBeCloseTo(expected, 6);
    // Daily buckets cannot read weeks.
    expect(queryCost(byServer(30, 'day'), [views.serverWeekly], measured)).toBe(600_000);
  });

  it('reads a range holding most of the data set as all of time less the days outside it', () => {
    const cost = queryCost(byServer(80), [views.serverAllTime, views.serverDaily], measured);
    // 10 days outside: 7 in a week read from the days, 2.5 in days, half a day from run_steps.
    expect(cost).toBeCloseTo(100 + (9_000 * 9.5) / 90 + 900_000 * (0.5 / 90) * 2, 6);
    // Not for a range of less than half the data set, nor for time buckets.
    expect(queryCost(byServer(40), [views.serverAllTime], measured)).toBe(800_000);
    expect(queryCost(byServer(80, 'week'), [views.serverAllTime], measured)).toBe(1_600_000);
    // Without a view of all time, or one that does not cover it, nothing is read as all of time.
    expect(queryCost(byServer(90), [], measured)).toBe(1_800_000);
    expect(queryCost({ ...byServer(90), needed: ['tool'] }, [views.serverAllTime], measured)).toBe(1_800_000);
  });

  it('adds the view of the largest benefit per share of the budgets it takes first, within both budgets', () => {
    const sets = [{ measured, queries: [byServer(30), byServer(7, 'hour')] }];
    const candidates = Object.values(views);
    // By server over 30 days, the days save the most (run_steps' 600,000 rows to 13,000) for a table; the
    // hours of every field then save the hourly series (140,000 to 62,000) more for their two tables
    // than the weeks save the days (30,000 rows).
    const steps = selectGreedy(candidates, sets, { tables: 4, foldMicros: 1_000 });
    expect(steps.map((step) => viewName(step.view))).toEqual([
      'serverDaily',
      'ownerConfigurationServerToolHourly',
      'serverWeekly',
    ]);
    // Two tables: the hourly view keyed by every field takes two (its histograms beside it), over the budget.
    const tight = selectGreedy(candidates, sets, { tables: 2, foldMicros: 1_000 });
    expect(tight.map((step) => viewName(step.view))).toEqual(['serverDaily', 'serverWeekly']);
    // And the fold's budget: the hourly view costs 22.5 µs a call.
    const cheap = selectGreedy(candidates, sets, { tables: 5, foldMicros: 20 });
    expect(cheap.map((step) => viewName(step.view))).toEqual(['serverDaily', 'serverWeekly']);
    const roomy = selectGreedy(candidates, sets, { tables: 5, foldMicros: 1_000 });
    // Every step leaves fewer rows to read than the one before.
    const left = roomy.map((step) => step.left.toy ?? 1);
    expect(left).toEqual([...left].sort((a, b) => b - a));
  });

  it('weighs the rows past a budget in full and those within it a hundredth', () => {
    expect(weighedRows(50_000, 0)).toBe(50_000);
    expect(weighedRows(50_000, 30_000)).toBe(20_000 + 300);
    expect(weighedRows(10_000, 30_000)).toBe(100);
  });

  it('prunes the dearest views without which no request reads more than it did, or than the budget', () => {
    const sets = [{ measured, queries: [byServer(30), byServer(7, 'hour')] }];
    const from = [views.serverDaily, views.serverWeekly, views.everyKeyHourly, views.ownerDaily];
    // The daily view by owner serves neither request; every other one is needed to read no more.
    expect(pruneViews(from, sets, 0).map(viewName)).toEqual([
      'serverDaily',
      'serverWeekly',
      'ownerConfigurationServerToolHourly',
    ]);
    // With 50,000 rows allowed, the days (the dearer of the two) go: the 30 days read 40,000 from the
    // weeks and run_steps. The hourly series would read 140,000 without its view (62,000 with it).
    expect(pruneViews(from, sets, 50_000).map(viewName)).toEqual([
      'serverWeekly',
      'ownerConfigurationServerToolHourly',
    ]);
  });
});
