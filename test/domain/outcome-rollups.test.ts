import { describe, expect, it } from 'vitest';
import {
  movedParts,
  OUTCOME_ROLLUPS,
  oneRowPerGroup,
  planOutcomeStats,
  type RollupGrain,
  type RollupRequest,
  rollupFor,
} from '../../src/domain/outcome-rollups.ts';
import type { OutcomeDimension } from '../../src/domain/outcome-stats.ts';
import { bucketIndex, bucketSpec } from '../../src/domain/time-buckets.ts';

const at = (iso: string) => new Date(iso);
const request = (overrides: Partial<RollupRequest> = {}): RollupRequest => ({
  groupBy: [],
  filteredBy: [],
  outcomeFilter: false,
  range: { from: at('2026-03-01T10:17:00Z'), to: at('2026-03-09T05:40:00Z') },
  spec: null,
  ...overrides,
});
const sources = (plan: ReturnType<typeof planOutcomeStats>) => plan.map((segment) => segment.source);
/** A plan in short: `+` counted, `-` taken away, the source, and the range as month-day and time, UTC. */
const signed = (plan: ReturnType<typeof planOutcomeStats>) =>
  plan.map(
    ({ from, to, source, subtract }) =>
      `${subtract ? '-' : '+'}${source} ${from.toISOString().slice(5, 16)} ${to.toISOString().slice(5, 16)}`,
  );

describe('which rollup answers which statistics request', () => {
  it('picks the smallest rollup whose key holds every field grouped or filtered by', () => {
    const cases: Array<[OutcomeDimension[], string, string]> = [
      [[], 'serverDaily', 'serverHourly'],
      [['server'], 'serverDaily', 'serverHourly'],
      [['tool'], 'serverToolDaily', 'ownerConfigurationServerToolHourly'],
      [['server', 'tool'], 'serverToolDaily', 'ownerConfigurationServerToolHourly'],
      [['configuration'], 'ownerConfigurationDaily', 'ownerConfigurationHourly'],
      [['owner'], 'ownerConfigurationDaily', 'ownerConfigurationHourly'],
      [['owner', 'configuration'], 'ownerConfigurationDaily', 'ownerConfigurationHourly'],
      [['owner', 'tool'], 'ownerToolDaily', 'ownerConfigurationServerToolHourly'],
      [['owner', 'server'], 'ownerConfigurationServerDaily', 'ownerConfigurationServerToolHourly'],
      [['configuration', 'server'], 'ownerConfigurationServerDaily', 'ownerConfigurationServerToolHourly'],
      [['configuration', 'tool'], 'ownerConfigurationServerToolDaily', 'ownerConfigurationServerToolHourly'],
      [
        ['owner', 'server', 'tool'],
        'ownerConfigurationServerToolDaily',
        'ownerConfigurationServerToolHourly',
      ],
      [
        ['owner', 'configuration', 'server', 'tool'],
        'ownerConfigurationServerToolDaily',
        'ownerConfigurationServerToolHourly',
      ],
    ];
    for (const [fields, daily, hourly] of cases) {
      expect([fields, rollupFor('day', fields)?.name]).toEqual([fields, daily]);
      expect([fields, rollupFor('hour', fields)?.name]).toEqual([fields, hourly]);
    }
    // Every field of every combination has a rollup at both grains that holds it.
    for (const grain of ['day', 'hour'] as const)
      expect(rollupFor(grain, ['owner', 'configuration', 'server', 'tool'])?.dimensions).toHaveLength(4);
  });

  it('counts a filter as a field needed, as a grouping is: an actor who sees its own runs reads an owner rollup', () => {
    const own = planOutcomeStats(request({ groupBy: ['server'], filteredBy: ['owner'] }));
    expect(new Set(sources(own))).toEqual(
      new Set([
        'raw',
        'ownerConfigurationServerToolHourly',
        'ownerConfigurationServerDaily',
        'ownerServerWeekly',
      ]),
    );
    const byTool = planOutcomeStats(request({ groupBy: ['tool'], filteredBy: ['owner'] }));
    expect(sources(byTool)).toContain('ownerToolDaily');
    const everyone = planOutcomeStats(request({ groupBy: ['server'] }));
    expect(new Set(sources(everyone))).toEqual(new Set(['raw', 'serverHourly', 'serverDaily']));
  });

  it('cuts the range into partial hours from run_steps, whole hours and whole UTC days, covering it once', () => {
    // 10:17 on March 1 to 05:40 on March 9: the first edge (13 h 43 min) is read as the whole day
    // less its first 10 h 17 min, the last (5 h 40 min) as it is, each partial hour the same way.
    expect(signed(planOutcomeStats(request({ groupBy: ['configuration'] })))).toEqual([
      '-raw 03-01T10:00 03-01T10:17',
      '-raw 03-09T05:40 03-09T06:00',
      '-ownerConfigurationHourly 03-01T00:00 03-01T10:00',
      '+ownerConfigurationHourly 03-09T00:00 03-09T06:00',
      '+ownerConfigurationDaily 03-01T00:00 03-02T00:00',
      '+ownerConfigurationWeekly 03-02T00:00 03-09T00:00',
    ]);
    // Edges of at most half a unit are read as they are.
    expect(
      signed(
        planOutcomeStats(
          request({
            groupBy: ['configuration'],
            range: { from: at('2026-03-01T14:35:00Z'), to: at('2026-03-03T09:25:00Z') },
          }),
        ),
      ),
    ).toEqual([
      '+raw 03-01T14:35 03-01T15:00',
      '+raw 03-03T09:00 03-03T09:25',
      '+ownerConfigurationHourly 03-01T15:00 03-02T00:00',
      '+ownerConfigurationHourly 03-03T00:00 03-03T09:00',
      '+ownerConfigurationDaily 03-02T00:00 03-03T00:00',
    ]);
    // A range that ends now: its last edge is read as the whole week less the part yet to come,
    // each level less its rest (rows of the future: none to read), where it read days and hours.
    expect(
      signed(
        planOutcomeStats(
          request({
            groupBy: ['configuration'],
            range: { from: at('2026-03-01T14:35:00Z'), to: at('2026-03-12T09:25:00Z') },
            now: at('2026-03-12T09:25:00Z'),
          }),
        ),
      ),
    ).toEqual([
      '+raw 03-01T14:35 03-01T15:00',
      '-raw 03-12T09:25 03-12T10:00',
      '+ownerConfigurationHourly 03-01T15:00 03-02T00:00',
      '-ownerConfigurationHourly 03-12T10:00 03-13T00:00',
      '-ownerConfigurationDaily 03-13T00:00 03-16T00:00',
      '+ownerConfigurationWeekly 03-02T00:00 03-16T00:00',
    ]);
    // Bounds on whole days: the daily rollup alone.
    const whole = planOutcomeStats(
      request({ range: { from: at('2026-03-01T00:00:00Z'), to: at('2026-03-05T00:00:00Z') } }),
    );
    expect(whole).toEqual([
      { from: at('2026-03-01T00:00:00Z'), to: at('2026-03-05T00:00:00Z'), source: 'serverDaily' },
    ]);
  });

  it('counts every instant of any range once, in its own bucket, counting what is taken away and moved, with every rollup segment on whole units of its grain', () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    const fields: OutcomeDimension[] = ['owner', 'configuration', 'server', 'tool'];
    const specs = [
      null,
      bucketSpec('hour', 0),
      bucketSpec('day', 0),
      bucketSpec('week', 0),
      bucketSpec('day', 120),
      bucketSpec('day', -600),
      bucketSpec('week', -180),
      bucketSpec('week', 60),
      bucketSpec('hour', -300),
    ];
    const unitMs = { hour: 3_600_000, day: 86_400_000, week: 7 * 86_400_000 } as const;
    const anchorMs = { hour: 0, day: 0, week: 4 * 86_400_000 } as const;
    const unitStart = (t: number, grain: RollupGrain) =>
      Math.floor((t - anchorMs[grain]) / unitMs[grain]) * unitMs[grain] + anchorMs[grain];
    let readsAllTime = 0;
    for (let round = 0; round < 500; round += 1) {
      const from = Date.parse('2026-01-01T00:00:00Z') + random(40 * 86_400_000);
      const to = from + 1 + random(random(2) === 0 ? 3 * 86_400_000 : 60 * 86_400_000);
      // A grouping read from all of time (in ranges holding most recorded days) in a quarter of the rounds.
      const groupBy = random(4) === 0 ? fields.slice(random(2)) : fields.filter(() => random(2) === 0);
      const filteredBy = fields.filter(() => random(3) === 0);
      const spec = random(3) === 0 ? null : (specs[random(specs.length)] ?? null);
      // Days holding every call recorded, around the range or within it: calls lie only there.
      const firstDay = Math.floor((from - random(10 * 86_400_000)) / 86_400_000) * 86_400_000;
      const recorded =
        random(2) === 0
          ? {
              from: new Date(firstDay),
              to: new Date(Math.ceil(to / 86_400_000) * 86_400_000 + 86_400_000 * (random(3) - 1)),
            }
          : null;
      const plan = planOutcomeStats(
        request({
          groupBy,
          filteredBy,
          range: { from: new Date(from), to: new Date(to) },
          spec,
          // Now at the end of the range, within it or long after it: the plans differ, never the counts.
          ...[{ now: new Date(to) }, { now: new Date(to - random(86_400_000)) }, {}][random(3)],
          ...(recorded ? { recorded } : {}),
        }),
      );
      const bucketOf = (t: number) => (spec ? bucketIndex(spec, new Date(t)) : 0);
      // Where the plan counts a call at instant t: a rollup's row at the start of its unit, a row of
      // run_steps at t, a moved row in its own bucket and taken away from its unit's.
      const counted = (t: number) => {
        const buckets = new Map<number, number>();
        const count = (bucket: number, calls: number) => {
          buckets.set(bucket, (buckets.get(bucket) ?? 0) + calls);
          if (buckets.get(bucket) === 0) buckets.delete(bucket);
        };
        for (const segment of plan) {
          if (t < segment.from.getTime() || t >= segment.to.getTime()) continue;
          const sign = segment.subtract ? -1 : 1;
          const grain = OUTCOME_ROLLUPS.find((each) => each.name === segment.source)?.grain;
          // A row of all time has no bucket: it is read only without buckets.
          const own = bucketOf(grain && grain !== 'all' ? unitStart(t, grain) : t);
          if (!segment.movedFrom) count(own, sign);
          else if (own !== bucketOf(unitStart(t, segment.movedFrom))) {
            count(own, sign);
            count(bucketOf(unitStart(t, segment.movedFrom)), -sign);
          }
        }
        return Object.fromEntries(buckets);
      };
      const bounds = [
        ...new Set(plan.flatMap((segment) => [segment.from.getTime(), segment.to.getTime()])),
        from,
        to,
      ].sort((a, b) => a - b);
      // Instants at every bound, just before it, and between bounds, at each whole hour between them.
      const instants = new Set<number>();
      for (let i = 0; i < bounds.length; i += 1) {
        const bound = bounds[i] ?? 0;
        instants.add(bound).add(bound - 1);
        for (let t = bound + 1_800_000; t < (bounds[i + 1] ?? bound); t += 3_600_000 * (1 + random(20)))
          instants.add(t);
      }
      // No call lies outside the recorded days.
      const callAt = (t: number) => !recorded || (recorded.from.getTime() <= t && t < recorded.to.getTime());
      for (const t of [...instants].filter(callAt))
        expect([from, to, spec, t, counted(t)]).toEqual([
          from,
          to,
          spec,
          t,
          from <= t && t < to ? { [bucketOf(t)]: 1 } : {},
        ]);
      if (sources(plan).includes('ownerConfigurationServerToolAllTime')) readsAllTime += 1;
      for (const segment of plan) {
        const rollup = OUTCOME_ROLLUPS.find((each) => each.name === segment.source);
        if (!rollup || rollup.grain === 'all') continue;
        for (const edge of [segment.from, segment.to])
          expect([segment.source, (edge.getTime() - anchorMs[rollup.grain]) % unitMs[rollup.grain]]).toEqual([
            segment.source,
            0,
          ]);
      }
    }
    // The random ranges read all of time in some rounds, so those plans were counted too.
    expect(readsAllTime).toBeGreaterThan(3);
  });

  it('lists the parts of units that lie past a bucket boundary: the rows a moved segment moves', () => {
    const days = { from: at('2026-03-01T00:00:00Z'), to: at('2026-03-04T00:00:00Z') };
    // Days at UTC+02:00 end at 22:00 UTC: the last two hours of each UTC day lie in the next.
    expect(movedParts(days, 'day', bucketSpec('day', 120))).toEqual([
      { from: at('2026-03-01T22:00:00Z'), to: at('2026-03-02T00:00:00Z') },
      { from: at('2026-03-02T22:00:00Z'), to: at('2026-03-03T00:00:00Z') },
      { from: at('2026-03-03T22:00:00Z'), to: at('2026-03-04T00:00:00Z') },
    ]);
    // Weeks at UTC-03:00 start on Monday 03:00 UTC: only the Monday of the days straddles two.
    expect(
      movedParts(
        { from: at('2026-03-01T00:00:00Z'), to: at('2026-03-08T00:00:00Z') },
        'day',
        bucketSpec('week', -180),
      ),
    ).toEqual([{ from: at('2026-03-02T03:00:00Z'), to: at('2026-03-03T00:00:00Z') }]);
    expect(movedParts(days, 'day', bucketSpec('day', 0))).toEqual([]);
  });

  it('reads no whole unit past the last instant a DateTime holds, to cover the end of 9999', () => {
    const last = at('9999-12-31T23:59:59.999Z');
    const plan = planOutcomeStats(
      request({ groupBy: ['server'], range: { from: at('9999-12-01T00:00:00Z'), to: last } }),
    );
    expect(Math.max(...plan.map((segment) => segment.to.getTime()))).toBe(last.getTime());
    expect(plan.every((segment) => !segment.subtract)).toBe(true);
  });

  it('reads whole weeks (from Monday, 00:00 UTC) from a weekly rollup only when its key is no wider than the daily one', () => {
    const range = { from: at('2026-03-01T10:17:00Z'), to: at('2026-03-19T05:40:00Z') };
    expect(signed(planOutcomeStats(request({ groupBy: ['owner', 'server'], range })))).toEqual([
      '-raw 03-01T10:00 03-01T10:17',
      '-raw 03-19T05:40 03-19T06:00',
      '-ownerConfigurationServerToolHourly 03-01T00:00 03-01T10:00',
      '+ownerConfigurationServerToolHourly 03-19T00:00 03-19T06:00',
      '+ownerConfigurationServerDaily 03-01T00:00 03-02T00:00',
      '+ownerConfigurationServerDaily 03-16T00:00 03-19T00:00',
      '+ownerServerWeekly 03-02T00:00 03-16T00:00',
    ]);
    // Five days of a week at an edge: the whole week less two days.
    expect(
      signed(
        planOutcomeStats(
          request({
            groupBy: ['owner', 'server'],
            range: { from: at('2026-03-04T00:00:00Z'), to: at('2026-03-21T00:00:00Z') },
          }),
        ),
      ),
    ).toEqual([
      '-ownerConfigurationServerDaily 03-02T00:00 03-04T00:00',
      '-ownerConfigurationServerDaily 03-21T00:00 03-23T00:00',
      '+ownerServerWeekly 03-02T00:00 03-23T00:00',
    ]);
    // Each grouping of fields of the run's key and the server reads the narrowest weekly rollup that holds them.
    for (const [groupBy, weekly] of [
      [['owner'], 'ownerWeekly'],
      [['configuration', 'server'], 'configurationServerWeekly'],
      [['server', 'owner'], 'ownerServerWeekly'],
      [['owner', 'configuration', 'server'], 'ownerConfigurationServerWeekly'],
      [['tool', 'owner'], 'ownerToolWeekly'],
      [['tool', 'server'], 'serverToolWeekly'],
      [['tool', 'configuration'], 'configurationToolWeekly'],
      [['owner', 'tool', 'configuration'], 'ownerConfigurationToolWeekly'],
    ] as const)
      expect(sources(planOutcomeStats(request({ groupBy, range })))).toContain(weekly);
    // By tool alone: the weeks of the (server, tool) rollup, keyed as its daily one, not those of (owner, tool).
    expect(new Set(sources(planOutcomeStats(request({ groupBy: ['tool'], range }))))).toEqual(
      new Set(['raw', 'ownerConfigurationServerToolHourly', 'serverToolDaily', 'serverToolWeekly']),
    );
    // An actor who sees only its own runs filters by owner: by tool, the weeks keyed by owner and tool.
    expect(
      new Set(sources(planOutcomeStats(request({ groupBy: ['tool'], filteredBy: ['owner'], range })))),
    ).toContain('ownerToolWeekly');
    // By configuration and tool for such an actor: the weeks keyed by owner, configuration and tool.
    expect(
      sources(
        planOutcomeStats(request({ groupBy: ['configuration', 'tool'], filteredBy: ['owner'], range })),
      ),
    ).toContain('ownerConfigurationToolWeekly');
    // By server alone the (day, server) rollup is narrower than any weekly one: no weeks.
    expect(new Set(sources(planOutcomeStats(request({ groupBy: ['server'], range }))))).toEqual(
      new Set(['raw', 'serverHourly', 'serverDaily']),
    );
    expect(new Set(sources(planOutcomeStats(request({ groupBy: ['configuration'], range }))))).toEqual(
      new Set(['raw', 'ownerConfigurationHourly', 'ownerConfigurationDaily', 'ownerConfigurationWeekly']),
    );
    // Less than a whole week: days.
    expect(
      sources(
        planOutcomeStats(
          request({
            groupBy: ['owner', 'server'],
            range: { from: at('2026-03-03T00:00:00Z'), to: at('2026-03-09T00:00:00Z') },
          }),
        ),
      ),
    ).toEqual(['ownerConfigurationServerDaily']);
  });

  it('counts whole weeks keyed by every field only for counts alone, and only where they hold at most half the daily rows', () => {
    // Four whole weeks, from Monday 2026-03-02, and days around them.
    const range = { from: at('2026-02-27T00:00:00Z'), to: at('2026-04-01T00:00:00Z') };
    const plan = (groupBy: OutcomeDimension[], extra: Partial<RollupRequest> = {}) =>
      new Set(sources(planOutcomeStats(request({ groupBy, range, countsOnly: true, ...extra }))));
    // Its keys have calls on several days of a week (as on 40 owners, 20 servers of 10 tools): weeks.
    const dense = { ownerConfigurationServerToolDaily: 565_164, ownerConfigurationServerToolWeekly: 196_944 };
    for (const groupBy of [
      ['owner', 'server', 'tool'],
      ['configuration', 'server', 'tool'],
      ['owner', 'configuration', 'server', 'tool'],
    ] as OutcomeDimension[][])
      expect([groupBy, plan(groupBy, { rollupRows: dense })]).toEqual([
        groupBy,
        new Set(['ownerConfigurationServerToolDaily', 'ownerConfigurationServerToolWeekly']),
      ]);
    expect(
      plan(['owner', 'server', 'tool'], {
        rollupRows: {
          ownerConfigurationServerToolDaily: 200_000,
          ownerConfigurationServerToolWeekly: 100_000,
        },
      }),
    ).toContain('ownerConfigurationServerToolWeekly');
    // A call or two a key and week (300 owners, 40 servers of 15 tools): the days.
    expect(
      plan(['owner', 'server', 'tool'], {
        rollupRows: {
          ownerConfigurationServerToolDaily: 818_611,
          ownerConfigurationServerToolWeekly: 633_830,
        },
      }),
    ).toEqual(new Set(['ownerConfigurationServerToolDaily']));
    expect(
      plan(['owner', 'server', 'tool'], {
        rollupRows: {
          ownerConfigurationServerToolDaily: 200_000,
          ownerConfigurationServerToolWeekly: 100_001,
        },
      }),
    ).toEqual(new Set(['ownerConfigurationServerToolDaily']));
    // Without estimates, weeks: a weekly row never holds more than the days it sums.
    expect(plan(['owner', 'server', 'tool'])).toContain('ownerConfigurationServerToolWeekly');
    expect(
      plan(['owner', 'server', 'tool'], { rollupRows: { ownerConfigurationServerToolDaily: 818_611 } }),
    ).toContain('ownerConfigurationServerToolWeekly');
    // It keeps no histograms: a request that reads them reads the days.
    expect(plan(['owner', 'server', 'tool'], { countsOnly: false, rollupRows: dense })).toEqual(
      new Set(['ownerConfigurationServerToolDaily']),
    );
    // A weekly rollup that keeps histograms is read whatever the estimates, keyed as its daily tier
    // or by fewer fields, and before it.
    for (const countsOnly of [false, true])
      expect(
        plan(['owner', 'configuration', 'server'], {
          countsOnly,
          rollupRows: { ownerConfigurationServerDaily: 200_000, ownerConfigurationServerWeekly: 190_000 },
        }),
      ).toEqual(new Set(['ownerConfigurationServerDaily', 'ownerConfigurationServerWeekly']));
    expect(
      plan(['owner', 'configuration', 'tool'], {
        countsOnly: false,
        rollupRows: { ownerConfigurationServerToolDaily: 200_000, ownerConfigurationToolWeekly: 190_000 },
      }),
    ).toContain('ownerConfigurationToolWeekly');
    expect(plan(['owner', 'configuration', 'tool'], { rollupRows: dense })).toContain(
      'ownerConfigurationToolWeekly',
    );
  });

  it('leaves out every part of a range that lies outside the hours on record, where no call lies', () => {
    // Up to now on a Wednesday: its week is read whole (from Monday 03-02) less the rest, yet to come.
    const range = { from: at('2026-02-04T10:30:00Z'), to: at('2026-03-04T10:30:00Z') };
    const now = range.to;
    const plan = (recorded?: { from: Date; to: Date }) =>
      signed(
        planOutcomeStats(
          request({ groupBy: ['owner', 'server'], range, now, ...(recorded ? { recorded } : {}) }),
        ),
      );
    const everyPart = plan();
    expect(everyPart).toContain('-ownerConfigurationServerDaily 03-05T00:00 03-09T00:00');
    expect(everyPart).toContain('-ownerConfigurationServerToolHourly 03-04T11:00 03-05T00:00');
    // The last call in the hour up to 10:00 on 03-04, the first on 01-20: the parts after and before go.
    const recorded = { from: at('2026-01-20T00:00:00Z'), to: at('2026-03-04T10:00:00Z') };
    const onRecord = plan(recorded);
    expect(onRecord).toEqual(
      everyPart.filter(
        (part) =>
          !part.includes('03-05T00:00 03-09T00:00') &&
          !part.includes('03-04T11:00 03-05T00:00') &&
          !part.includes('03-04T10:30 03-04T11:00'),
      ),
    );
    expect(onRecord.length).toBeLessThan(everyPart.length);
    // Parts that reach into the hours on record stay whole.
    expect(plan({ from: recorded.from, to: at('2026-03-04T11:00:00Z') })).toContain(
      '-raw 03-04T10:30 03-04T11:00',
    );
  });

  it('reads whole hours of one server from run_steps, by its server index, where the hourly rollup holds every key', () => {
    const ofOneServer = planOutcomeStats(request({ groupBy: ['tool'], filteredBy: ['server'] }));
    expect(signed(ofOneServer)).toEqual([
      '-raw 03-01T00:00 03-01T10:17',
      '+raw 03-09T00:00 03-09T05:40',
      '+serverToolDaily 03-01T00:00 03-02T00:00',
      '+serverToolWeekly 03-02T00:00 03-09T00:00',
    ]);
    // A field of the run is not in run_steps: the hourly rollup reads it.
    expect(
      new Set(sources(planOutcomeStats(request({ groupBy: ['tool'], filteredBy: ['server', 'owner'] })))),
    ).toEqual(new Set(['raw', 'ownerConfigurationServerToolHourly', 'ownerConfigurationServerToolDaily']));
    // Without a server filter, or with a narrower hourly rollup, the hours come from the rollup.
    expect(sources(planOutcomeStats(request({ groupBy: ['tool'] })))).toContain(
      'ownerConfigurationServerToolHourly',
    );
    expect(sources(planOutcomeStats(request({ filteredBy: ['server'] })))).toContain('serverHourly');
  });

  it('reads days from daily rollups for DAY and WEEK buckets at UTC and at whole-hour offsets, hours for HOUR buckets', () => {
    const week = planOutcomeStats(request({ groupBy: ['tool'], spec: bucketSpec('week', 0) }));
    expect(sources(week)).toContain('serverToolDaily');
    const weekByOwnerAndServer = planOutcomeStats(
      request({ groupBy: ['owner', 'server'], spec: bucketSpec('week', 0) }),
    );
    expect(sources(weekByOwnerAndServer)).toContain('ownerServerWeekly');
    expect(
      sources(planOutcomeStats(request({ groupBy: ['owner', 'server'], spec: bucketSpec('day', 0) }))),
    ).not.toContain('ownerServerWeekly');
    // Weeks at UTC+01:00: whole weeks too, the hour past each week's end moved to the next.
    const weekAtOffset = planOutcomeStats(
      request({
        groupBy: ['owner', 'server'],
        spec: bucketSpec('week', 60),
        range: { from: at('2026-02-01T10:17:00Z'), to: at('2026-03-09T05:40:00Z') },
      }),
    );
    expect(weekAtOffset.filter((segment) => segment.source === 'ownerServerWeekly')).not.toEqual([]);
    expect(weekAtOffset.filter((segment) => segment.movedFrom === 'week')).not.toEqual([]);
    const hourly = planOutcomeStats(request({ groupBy: ['server'], spec: bucketSpec('hour', 0) }));
    expect(new Set(sources(hourly))).toEqual(new Set(['raw', 'serverHourly']));
    // Buckets at a whole-hour offset read whole UTC days too, and move the hours past a bucket's end.
    for (const spec of [bucketSpec('day', 120), bucketSpec('week', -180)]) {
      const plan = planOutcomeStats(request({ groupBy: ['server'], spec }));
      expect(new Set(sources(plan))).toEqual(new Set(['raw', 'serverHourly', 'serverDaily']));
      expect(plan.filter((segment) => segment.movedFrom)).toEqual(
        plan
          .filter((segment) => segment.source === 'serverDaily')
          .map((segment) => ({ ...segment, source: 'serverHourly', movedFrom: 'day' })),
      );
    }
  });

  it('reads run_steps whole for an outcome filter, an offset that is not a whole hour, and less than a whole hour', () => {
    const { from, to } = request().range;
    for (const asked of [
      request({ outcomeFilter: true }),
      request({ spec: bucketSpec('day', 330) }),
      request({ spec: bucketSpec('hour', 45) }),
      request({ range: { from: at('2026-03-01T10:17:00Z'), to: at('2026-03-01T10:59:00Z') } }),
      request({ range: { from: at('2026-03-01T10:17:00Z'), to: at('2026-03-01T11:30:00Z') } }),
    ]) {
      const plan = planOutcomeStats(asked);
      expect(plan).toHaveLength(1);
      expect(plan[0]?.source).toBe('raw');
      if (asked.range === request().range) expect(plan[0]).toMatchObject({ from, to });
    }
  });

  it('reads rows without summing them only when each row is a group: its unit, aligned, its key grouped or one value', () => {
    const byName = (name: string) => {
      const found = OUTCOME_ROLLUPS.find((rollup) => rollup.name === name);
      if (!found) throw new Error(name);
      return found;
    };
    const hourly = byName('serverHourly');
    const daily = byName('serverToolDaily');
    const ask = (
      groupBy: OutcomeDimension[],
      singleValued: OutcomeDimension[],
      spec: RollupRequest['spec'],
    ) => ({
      groupBy,
      singleValued,
      spec,
    });
    expect(oneRowPerGroup(hourly, ask(['server'], [], bucketSpec('hour', 0)))).toBe(true);
    expect(oneRowPerGroup(hourly, ask(['server'], [], bucketSpec('hour', -180)))).toBe(true);
    expect(oneRowPerGroup(hourly, ask([], ['server'], bucketSpec('hour', 0)))).toBe(true);
    expect(oneRowPerGroup(hourly, ask([], [], bucketSpec('hour', 0)))).toBe(false);
    expect(oneRowPerGroup(hourly, ask(['server'], [], bucketSpec('day', 0)))).toBe(false);
    expect(oneRowPerGroup(hourly, ask(['server'], [], null))).toBe(false);
    expect(oneRowPerGroup(daily, ask(['tool'], ['server'], bucketSpec('day', 0)))).toBe(true);
    expect(oneRowPerGroup(daily, ask(['tool'], [], bucketSpec('day', 0)))).toBe(false);
    expect(oneRowPerGroup(daily, ask(['server', 'tool'], [], bucketSpec('day', 120)))).toBe(false);
    expect(oneRowPerGroup(daily, ask(['server', 'tool'], [], bucketSpec('week', 0)))).toBe(false);
    const weekly = byName('ownerConfigurationServerWeekly');
    const everyKeyOfWeekly = ['owner', 'configuration', 'server'] as OutcomeDimension[];
    expect(oneRowPerGroup(weekly, ask(everyKeyOfWeekly, [], bucketSpec('week', 0)))).toBe(true);
    expect(oneRowPerGroup(weekly, ask(everyKeyOfWeekly, [], bucketSpec('week', 60)))).toBe(false);
    expect(oneRowPerGroup(weekly, ask(['owner', 'server'], [], bucketSpec('week', 0)))).toBe(false);
  });

  it('lists each rollup once, by name, at an hour, a day, a week or all of time', () => {
    const names = OUTCOME_ROLLUPS.map((rollup) => rollup.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(OUTCOME_ROLLUPS.map((rollup) => rollup.grain))).toEqual(
      new Set(['day', 'hour', 'week', 'all']),
    );
  });

  it('counts a range from the rollup of all time with the fewest rows, where it holds fewer than the coarsest rollup of the range holds there; histograms from one keyed as the coarsest', () => {
    const recorded = { from: at('2026-01-05T00:00:00Z'), to: at('2026-04-06T00:00:00Z') };
    const range = { from: at('2026-01-06T10:30:00Z'), to: at('2026-04-05T10:30:00Z') };
    const now = range.to;
    // Rows as on 300 owners, 120 configurations, 40 servers of 15 tools over 90 days.
    const rollupRows = {
      ownerServerWeekly: 150_000,
      serverToolWeekly: 7_800,
      configurationToolWeekly: 25_194,
      ownerConfigurationToolWeekly: 163_657,
      ownerConfigurationServerToolDaily: 818_061,
      configurationServerAllTime: 9_000,
      ownerServerAllTime: 12_000,
      ownerConfigurationToolAllTime: 13_500,
      ownerConfigurationServerAllTime: 35_858,
      configurationServerToolAllTime: 70_938,
      ownerServerToolAllTime: 147_501,
      ownerConfigurationServerToolAllTime: 284_995,
    };
    // A rollup of all time, when one reads the range, comes first in the plan.
    const whole = (groupBy: OutcomeDimension[], extra: Partial<RollupRequest> = {}) =>
      sources(
        planOutcomeStats(request({ groupBy, range, now, recorded, rollupRows, countsOnly: true, ...extra })),
      )[0];
    expect(whole(['owner', 'server'])).toBe('ownerServerAllTime');
    // Without a rollup of all time keyed by exactly its fields, one keyed by more, if it holds fewer rows.
    expect(whole(['owner', 'server'], { rollupRows: { ...rollupRows, ownerServerAllTime: 200_000 } })).toBe(
      'ownerConfigurationServerAllTime',
    );
    expect(whole(['owner', 'server', 'tool'])).toBe('ownerServerToolAllTime');
    expect(whole(['configuration', 'tool'])).toBe('ownerConfigurationToolAllTime');
    expect(whole(['owner', 'configuration', 'server', 'tool'])).toBe('ownerConfigurationServerToolAllTime');
    // Fewer rows in the weekly rollup by server and tool than in any of all time: the range's own plan.
    expect(whole(['server', 'tool'])).not.toMatch(/AllTime$/);
    // Histograms: only a rollup that keeps them, keyed by no field the coarsest lacks.
    expect(whole(['owner', 'server', 'tool'], { countsOnly: false })).toBe(
      'ownerConfigurationServerToolAllTime',
    );
    expect(whole(['owner', 'server'], { countsOnly: false })).not.toMatch(/AllTime$/);
    // Without estimates, counts alone: the first rollup of all time keyed by no field the coarsest lacks.
    expect(whole(['owner', 'server', 'tool'], { rollupRows: {} })).toBe('ownerServerToolAllTime');
    expect(whole(['server', 'tool'], { rollupRows: {} })).not.toMatch(/AllTime$/);
  });

  it('reads a range holding most of the recorded days as every call less those outside it, for groupings only the rollups keyed by every field count', () => {
    const recorded = { from: at('2026-01-05T00:00:00Z'), to: at('2026-04-06T00:00:00Z') };
    const ninetyDays = { from: at('2026-01-06T10:30:00Z'), to: at('2026-04-05T10:30:00Z') };
    const now = at('2026-04-05T10:30:00Z');
    const plan = planOutcomeStats(
      request({ groupBy: ['owner', 'server', 'tool'], range: ninetyDays, now, recorded }),
    );
    expect(signed(plan)).toEqual([
      '+ownerConfigurationServerToolAllTime 01-05T00:00 04-06T00:00',
      '-raw 01-06T10:00 01-06T10:30',
      '-ownerConfigurationServerToolHourly 01-06T00:00 01-06T10:00',
      '-ownerConfigurationServerToolDaily 01-05T00:00 01-06T00:00',
      '-raw 04-05T10:30 04-05T11:00',
      '-ownerConfigurationServerToolHourly 04-05T11:00 04-06T00:00',
    ]);
    // Fewer recorded days inside than outside, buckets, an outcome filter: the range alone.
    for (const other of [
      request({
        groupBy: ['owner', 'server', 'tool'],
        range: ninetyDays,
        now,
        recorded: { ...recorded, from: at('2025-06-01T00:00:00Z') },
      }),
      request({
        groupBy: ['owner', 'server', 'tool'],
        range: ninetyDays,
        now,
        recorded,
        spec: bucketSpec('day', 0),
      }),
      request({
        groupBy: ['owner', 'server', 'tool'],
        range: ninetyDays,
        now,
        recorded,
        outcomeFilter: true,
      }),
    ])
      expect(sources(planOutcomeStats(other))).not.toContain('ownerConfigurationServerToolAllTime');
    // A grouping a weekly rollup keyed by fewer fields counts reads that one, not the rows of every key.
    for (const groupBy of [
      ['owner', 'server'],
      ['configuration', 'tool'],
      ['server'],
    ] as OutcomeDimension[][])
      expect([
        groupBy,
        sources(planOutcomeStats(request({ groupBy, range: ninetyDays, now, recorded }))),
      ]).not.toContainEqual(expect.arrayContaining(['ownerConfigurationServerToolAllTime']));
    // Every grouping of server and tool with owner or configuration does, and an own-runs actor's.
    for (const groupBy of [
      ['owner', 'server', 'tool'],
      ['configuration', 'server', 'tool'],
      ['owner', 'configuration', 'server', 'tool'],
    ] as OutcomeDimension[][])
      expect(sources(planOutcomeStats(request({ groupBy, range: ninetyDays, now, recorded })))).toContain(
        'ownerConfigurationServerToolAllTime',
      );
    expect(
      sources(
        planOutcomeStats(
          request({
            groupBy: ['server', 'tool'],
            filteredBy: ['owner', 'configuration'],
            range: ninetyDays,
            now,
            recorded,
          }),
        ),
      ),
    ).toContain('ownerConfigurationServerToolAllTime');
  });
});
