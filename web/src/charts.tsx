import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { useWords } from './locale.ts';

// The charts, in a module of their own: only the chart pages load the chart library.

/** Bar colours: cancelled in a neutral colour, apart from the failures. */
export const OUTCOME_COLOURS = { ok: '#2e7d32', failed: '#c62828', cancelled: '#8d8d8d' } as const;

export interface OutcomeBucket {
  bucketStart: string;
  ok: number;
  failed: number;
  cancelled: number;
}

/**
 * Calls by outcome per bucket: ok and failed stacked in one bar, cancelled in a
 * bar of its own beside it, so a cancel is never read as part of the failures.
 */
export function OutcomeChart({ buckets, title }: { buckets: readonly OutcomeBucket[]; title: string }) {
  const { t, f } = useWords();
  const data = buckets.map((bucket) => ({ ...bucket, day: f.day(bucket.bucketStart) }));
  return (
    <figure className="chart" aria-label={title}>
      <figcaption>{title}</figcaption>
      <ResponsiveContainer width="100%" height={260}>
        <BarChart data={data} margin={{ top: 8, right: 16, bottom: 8, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="day" />
          <YAxis allowDecimals={false} tickFormatter={(value: number) => f.number(value)} />
          <Tooltip formatter={(value) => f.number(Number(value))} isAnimationActive={false} />
          <Legend itemSorter={null} />
          {(['ok', 'failed'] as const).map((outcome) => (
            <Bar
              key={outcome}
              dataKey={outcome}
              name={t(`runs.detail.outcome.${outcome}`)}
              stackId="finished"
              fill={OUTCOME_COLOURS[outcome]}
              isAnimationActive={false}
            />
          ))}
          <Bar
            dataKey="cancelled"
            name={t('runs.detail.outcome.cancelled')}
            stackId="cancelled"
            fill={OUTCOME_COLOURS.cancelled}
            isAnimationActive={false}
          />
        </BarChart>
      </ResponsiveContainer>
    </figure>
  );
}

const SERIES_COLOURS = [
  '#1f77b4',
  '#2e7d32',
  '#c62828',
  '#8d8d8d',
  '#ff7f0e',
  '#9467bd',
  '#17becf',
  '#bcbd22',
  '#e377c2',
  '#7f7f7f',
];

/** Counts per bucket, stacked by one key (a status, a termination reason). */
export function StackedChart({
  title,
  rows,
  label,
  colour,
}: {
  title: string;
  rows: readonly { bucketStart: string; key: string; count: number }[];
  label: (key: string) => string;
  colour?: (key: string) => string | undefined;
}) {
  const { f } = useWords();
  const keys = [...new Set(rows.map((row) => row.key))].sort();
  const byBucket = new Map<string, Record<string, number | string>>();
  for (const row of [...rows].sort((a, b) => a.bucketStart.localeCompare(b.bucketStart))) {
    const entry = byBucket.get(row.bucketStart) ?? { day: f.day(row.bucketStart) };
    entry[row.key] = (Number(entry[row.key]) || 0) + row.count;
    byBucket.set(row.bucketStart, entry);
  }
  return (
    <figure className="chart" aria-label={title}>
      <figcaption>{title}</figcaption>
      <ResponsiveContainer width="100%" height={260}>
        <BarChart data={[...byBucket.values()]} margin={{ top: 8, right: 16, bottom: 8, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="day" />
          <YAxis allowDecimals={false} tickFormatter={(value: number) => f.number(value)} />
          <Tooltip formatter={(value) => f.number(Number(value))} isAnimationActive={false} />
          <Legend itemSorter={null} />
          {keys.map((key, index) => (
            <Bar
              key={key}
              dataKey={key}
              name={label(key)}
              stackId="all"
              fill={colour?.(key) ?? SERIES_COLOURS[index % SERIES_COLOURS.length]}
              isAnimationActive={false}
            />
          ))}
        </BarChart>
      </ResponsiveContainer>
    </figure>
  );
}
