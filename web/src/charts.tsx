import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { ScrollingTable } from './components.tsx';
import { useWords } from './locale.ts';

// The charts, in a module of their own: only the chart pages load the chart library.

/** Bar colours: cancelled in a neutral colour, apart from the failures. */
export const OUTCOME_COLOURS = { ok: '#2e7d32', failed: '#c62828', cancelled: '#8d8d8d' } as const;

/**
 * Each outcome's fill: a colour and a texture (ok solid, failed striped,
 * cancelled dotted), so that ok and failed differ without colour too (to a
 * deuteranope they are alike in hue); the legend shows the same swatches.
 */
const OUTCOME_FILLS = {
  ok: OUTCOME_COLOURS.ok,
  failed: 'url(#outcome-failed)',
  cancelled: 'url(#outcome-cancelled)',
} as const;

function OutcomePatterns() {
  return (
    <defs>
      <pattern
        id="outcome-failed"
        width="6"
        height="6"
        patternUnits="userSpaceOnUse"
        patternTransform="rotate(45)"
      >
        <rect width="6" height="6" fill={OUTCOME_COLOURS.failed} />
        <rect width="2" height="6" fill="#ffffff" fillOpacity="0.55" />
      </pattern>
      <pattern id="outcome-cancelled" width="6" height="6" patternUnits="userSpaceOnUse">
        <rect width="6" height="6" fill={OUTCOME_COLOURS.cancelled} />
        <circle cx="3" cy="3" r="1.3" fill="#ffffff" fillOpacity="0.8" />
      </pattern>
    </defs>
  );
}

/** Legend entries in the page's text colour (a series' colour as text reads at 2:1 to 3:1), beside their swatch. */
const legendText = (value: string) => <span className="legend-text">{value}</span>;

/**
 * The numbers a chart draws, as a table behind a disclosure: for a screen
 * reader, and for anyone who wants the figures rather than the bars.
 */
function ChartTable({ columns, rows }: { columns: readonly string[]; rows: readonly (readonly string[])[] }) {
  const { t } = useWords();
  return (
    <details className="chart-table">
      <summary>{t('viewer.chart.asTable')}</summary>
      <ScrollingTable label={t('viewer.chart.asTable')}>
        <table>
          <thead>
            <tr>
              <th scope="col">{t('viewer.chart.period')}</th>
              {columns.map((column) => (
                <th key={column} scope="col">
                  {column}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map(([period = '', ...cells]) => (
              <tr key={period}>
                <th scope="row">{period}</th>
                {cells.map((cell, i) => (
                  <td key={columns[i]} className="number">
                    {cell}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollingTable>
    </details>
  );
}

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
  const outcomes = ['ok', 'failed', 'cancelled'] as const;
  return (
    <figure className="chart" aria-label={title}>
      <figcaption>{title}</figcaption>
      <ResponsiveContainer width="100%" height={260}>
        <BarChart data={data} margin={{ top: 8, right: 16, bottom: 8, left: 0 }}>
          <OutcomePatterns />
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="day" />
          <YAxis allowDecimals={false} tickFormatter={(value: number) => f.number(value)} />
          <Tooltip formatter={(value) => f.number(Number(value))} isAnimationActive={false} />
          <Legend itemSorter={null} formatter={legendText} />
          {(['ok', 'failed'] as const).map((outcome) => (
            <Bar
              key={outcome}
              dataKey={outcome}
              name={t(`runs.detail.outcome.${outcome}`)}
              stackId="finished"
              fill={OUTCOME_FILLS[outcome]}
              isAnimationActive={false}
            />
          ))}
          <Bar
            dataKey="cancelled"
            name={t('runs.detail.outcome.cancelled')}
            stackId="cancelled"
            fill={OUTCOME_FILLS.cancelled}
            isAnimationActive={false}
          />
        </BarChart>
      </ResponsiveContainer>
      <ChartTable
        columns={outcomes.map((outcome) => t(`runs.detail.outcome.${outcome}`))}
        rows={data.map((row) => [row.day, ...outcomes.map((outcome) => f.number(row[outcome]))])}
      />
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
          <Legend itemSorter={null} formatter={legendText} />
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
      <ChartTable
        columns={keys.map(label)}
        rows={[...byBucket.values()].map((entry) => [
          String(entry.day),
          ...keys.map((key) => f.number(Number(entry[key]) || 0)),
        ])}
      />
    </figure>
  );
}
