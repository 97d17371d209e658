import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/domain/errors.ts';
import { checkRunGroupBy, type RunStatsCell, runStatsPage } from '../../src/domain/run-stats.ts';
import { bucketIndices, bucketSpec, bucketStart, statsWindow } from '../../src/domain/time-buckets.ts';

const NOW = new Date('2026-12-03T10:00:00Z');

function refusal(work: () => unknown): [string, string | null] | null {
  try {
    work();
    return null;
  } catch (error) {
    if (error instanceof InvalidInputError) return [error.code, error.field];
    throw error;
  }
}

describe('the time window of a statistics query', () => {
  it('defaults to the 30 days up to now, or before the given end, and checks in one order', () => {
    const window = statsWindow({ after: null, before: null, bucket: null, utcOffsetMinutes: 0 }, NOW);
    expect(window).toEqual({ range: { from: new Date('2026-11-03T10:00:00Z'), to: NOW }, spec: null });
    // A bad range is refused before a bad offset; an offset without a bucket is not read.
    const reversed = { after: NOW, before: new Date(NOW.getTime() - 1), bucket: 'day' as const };
    expect(refusal(() => statsWindow({ ...reversed, utcOffsetMinutes: 9_999 }, NOW))).toEqual([
      'RANGE_EMPTY',
      'filter',
    ]);
    expect(
      refusal(() => statsWindow({ after: null, before: null, bucket: null, utcOffsetMinutes: 9_999 }, NOW)),
    ).toBeNull();
    expect(
      refusal(() => statsWindow({ after: null, before: null, bucket: 'hour', utcOffsetMinutes: 841 }, NOW)),
    ).toEqual(['VALUE_OUT_OF_RANGE', 'utcOffsetMinutes']);
    const longAgo = new Date(NOW.getTime() - 200 * 86_400_000);
    expect(
      refusal(() => statsWindow({ after: longAgo, before: null, bucket: 'hour', utcOffsetMinutes: 0 }, NOW)),
    ).toEqual(['TOO_MANY_BUCKETS', 'bucket']);
  });

  it('names the ends of the range as the query calls them', () => {
    expect(() =>
      statsWindow({ after: NOW, before: NOW, bucket: null, utcOffsetMinutes: 0 }, NOW, {
        after: 'createdAfter',
        before: 'createdBefore',
      }),
    ).toThrow('createdAfter must be before createdBefore');
  });

  it('lists every bucket of the range, partial ones at both ends, weeks from Monday at the offset', () => {
    const spec = bucketSpec('week', 60);
    const range = { from: new Date('2026-11-04T12:00:00Z'), to: new Date('2026-11-16T00:00:00Z') };
    // Monday 00:00 at UTC+01:00 is Sunday 23:00 UTC; the range ends one hour after the third week starts.
    expect(bucketIndices(spec, range).map((index) => bucketStart(spec, index).toISOString())).toEqual([
      '2026-11-01T23:00:00.000Z',
      '2026-11-08T23:00:00.000Z',
      '2026-11-15T23:00:00.000Z',
    ]);
  });
});

describe('a page of run statistics', () => {
  const key = { configuration: null, owner: null, terminationReason: null } as const;
  const cell = (
    status: 'running' | 'failed',
    groupRank: number,
    bucket: number | null,
    runs: number,
  ): RunStatsCell => ({
    ...key,
    status,
    groupRank,
    bucket,
    runs,
  });

  it('refuses an empty groupBy and a dimension named twice', () => {
    expect(refusal(() => checkRunGroupBy([]))).toEqual(['VALUE_EMPTY', 'groupBy']);
    expect(refusal(() => checkRunGroupBy(['status', 'owner', 'status']))).toEqual([
      'VALUE_INVALID',
      'groupBy',
    ]);
    expect(checkRunGroupBy(['terminationReason', 'owner'])).toEqual(['terminationReason', 'owner']);
  });

  it('keeps first groups in rank order, says when one more came, and fills the empty buckets', () => {
    const spec = bucketSpec('day', 0);
    const range = { from: new Date('2026-11-02T06:00:00Z'), to: new Date('2026-11-04T06:00:00Z') };
    const [first] = bucketIndices(spec, range);
    const day = first ?? 0;
    const cells = [cell('failed', 1, day, 2), cell('failed', 1, day + 2, 3), cell('running', 2, day + 1, 1)];
    const page = runStatsPage(cells, { range, spec }, 1);
    expect(page.truncated).toBe(true);
    expect(page.groups.map((g) => [g.status, g.bucketStart?.toISOString(), g.runs])).toEqual([
      ['failed', '2026-11-02T00:00:00.000Z', 2],
      ['failed', '2026-11-03T00:00:00.000Z', 0],
      ['failed', '2026-11-04T00:00:00.000Z', 3],
    ]);
    const whole = runStatsPage(
      [cell('failed', 1, null, 5), cell('running', 2, null, 1)],
      { range, spec: null },
      2,
    );
    expect(whole).toEqual({
      groups: [
        { ...key, status: 'failed', bucketStart: null, runs: 5 },
        { ...key, status: 'running', bucketStart: null, runs: 1 },
      ],
      truncated: false,
    });
  });
});
