import { Link, useParams } from 'react-router';
import { useQuery } from 'urql';
import { OutcomeChart } from '../charts.tsx';
import {
  browserUtcOffsetMinutes,
  daysAgo,
  ErrorNote,
  OutcomeCountsText,
  ScrollingTable,
  Section,
  usePageTitle,
} from '../components.tsx';
import { useLocalPath, useWords } from '../locale.ts';
import { ServersPageQuery, ServerToolsQuery } from '../operations.ts';

/** The period the servers pages cover. */
const PERIOD_DAYS = 30;
/** A server needs this many calls in the period to be ranked by failure rate: one failure of one call is no trend. */
const MIN_CALLS_TO_RANK = 20;

interface Row {
  name: string;
  href?: string;
  counts: { ok: number; failed: number; cancelled: number; total: number; failureRate?: number | null };
  p95DurationMs?: number | null;
}

function StatsTable({
  rows,
  nameColumn,
  testId,
}: {
  rows: readonly Row[];
  nameColumn: string;
  testId: string;
}) {
  const { t, f } = useWords();
  return (
    <ScrollingTable label={nameColumn}>
      <table className="stats" data-testid={testId}>
        <thead>
          <tr>
            <th>{nameColumn}</th>
            <th className="number">{t('viewer.column.calls')}</th>
            <th>{t('viewer.column.toolCalls')}</th>
            <th className="number">{t('viewer.column.failureRate')}</th>
            <th className="number">{t('viewer.column.p95')}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.name} data-name={row.name}>
              <td>{row.href ? <Link to={row.href}>{row.name}</Link> : row.name}</td>
              <td className="number" data-field="total">
                {f.number(row.counts.total)}
              </td>
              <td>
                <OutcomeCountsText counts={row.counts} />
              </td>
              <td className="number" data-field="failureRate">
                {f.percent(row.counts.failureRate)}
              </td>
              <td className="number" title={row.p95DurationMs == null ? undefined : t('viewer.estimate')}>
                {row.p95DurationMs == null ? '' : f.percentileMs(row.p95DurationMs)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollingTable>
  );
}

function bucketsOf(
  groups: readonly {
    bucketStart?: string | null;
    counts: { ok: number; failed: number; cancelled: number };
  }[],
) {
  return groups.flatMap((group) =>
    group.bucketStart ? [{ bucketStart: group.bucketStart, ...group.counts }] : [],
  );
}

export function ServersPage() {
  const { t, f } = useWords();
  usePageTitle(t('viewer.nav.servers'));
  const to = useLocalPath();
  const [{ data, error, fetching }] = useQuery({
    query: ServersPageQuery,
    variables: {
      since: daysAgo(PERIOD_DAYS),
      minCalls: MIN_CALLS_TO_RANK,
      utcOffsetMinutes: browserUtcOffsetMinutes(),
    },
  });
  if (error) return <ErrorNote error={error} />;
  if (!data) return fetching ? <p className="note">{t('viewer.loading')}</p> : null;
  const servers = data.perServer.groups.map((group) => ({
    name: group.server ?? '',
    href: to(`/servers/${encodeURIComponent(group.server ?? '')}`),
    counts: group.counts,
    p95DurationMs: group.p95DurationMs,
  }));
  return (
    <>
      <h1>
        {t('viewer.servers.title')} <small>{t('viewer.servers.period', { days: PERIOD_DAYS })}</small>
      </h1>
      <p className="note">{t('viewer.servers.cancelledApart')}</p>
      <OutcomeChart title={t('viewer.servers.chart')} buckets={bucketsOf(data.series.groups)} />
      <Section title={t('viewer.servers.failMost', { count: f.number(MIN_CALLS_TO_RANK) })}>
        {data.failMost.groups.length === 0 ? (
          <p className="note">{t('viewer.servers.noneFailing')}</p>
        ) : (
          <ol className="fail-most" data-testid="fail-most">
            {data.failMost.groups.map((group) => (
              <li key={group.server} data-name={group.server}>
                <Link to={to(`/servers/${encodeURIComponent(group.server ?? '')}`)}>{group.server}</Link>{' '}
                {f.percent(group.counts.failureRate)} ({f.number(group.counts.failed)} /{' '}
                {f.number(group.counts.total)})
              </li>
            ))}
          </ol>
        )}
      </Section>
      <Section title={t('viewer.servers.table')}>
        {servers.length === 0 ? (
          <p className="note">{t('viewer.servers.empty')}</p>
        ) : (
          <StatsTable rows={servers} nameColumn={t('viewer.column.server')} testId="servers" />
        )}
      </Section>
    </>
  );
}

export function ServerPage() {
  const { server = '' } = useParams();
  const { t } = useWords();
  usePageTitle(t('viewer.servers.tools', { server }));
  const to = useLocalPath();
  const [{ data, error, fetching }] = useQuery({
    query: ServerToolsQuery,
    variables: { server, since: daysAgo(PERIOD_DAYS), utcOffsetMinutes: browserUtcOffsetMinutes() },
  });
  if (error) return <ErrorNote error={error} />;
  if (!data) return fetching ? <p className="note">{t('viewer.loading')}</p> : null;
  const tools = data.perTool.groups.map((group) => ({
    name: group.toolName ?? '',
    counts: group.counts,
    p95DurationMs: group.p95DurationMs,
  }));
  return (
    <>
      <p>
        <Link to={to('/servers')}>← {t('viewer.servers.all')}</Link>
      </p>
      <h1>
        {t('viewer.servers.tools', { server })}{' '}
        <small>{t('viewer.servers.period', { days: PERIOD_DAYS })}</small>
      </h1>
      <p className="note">{t('viewer.servers.cancelledApart')}</p>
      <OutcomeChart
        title={t('viewer.servers.chartFor', { server })}
        buckets={bucketsOf(data.series.groups)}
      />
      {tools.length === 0 ? (
        <p className="note">{t('viewer.servers.empty')}</p>
      ) : (
        <StatsTable rows={tools} nameColumn={t('viewer.column.tool')} testId="tools" />
      )}
    </>
  );
}
