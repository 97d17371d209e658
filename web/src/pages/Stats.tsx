import { useQuery } from 'urql';
import { StackedChart } from '../charts.tsx';
import { browserUtcOffsetMinutes, daysAgo, ErrorNote, usePageTitle } from '../components.tsx';
import { useWords } from '../locale.ts';
import { RunStatsQuery } from '../operations.ts';

const PERIOD_DAYS = 30;
const STATUS_COLOURS: Readonly<Record<string, string>> = {
  COMPLETED: '#2e7d32',
  FAILED: '#c62828',
  CANCELLED: '#8d8d8d',
  RUNNING: '#1f77b4',
  QUEUED: '#9467bd',
  WAITING_FOR_APPROVAL: '#ff7f0e',
  WAITING_FOR_INPUT: '#bcbd22',
};

/** A cancel is grey, as on every screen: never the colour of a failure. */
const REASON_COLOURS: Readonly<Record<string, string>> = {
  COMPLETED: '#2e7d32',
  CANCELLED: '#8d8d8d',
  PROVIDER_FAILED: '#c62828',
};

export function StatsPage() {
  const { t } = useWords();
  usePageTitle(t('viewer.nav.stats'));
  const [{ data, error, fetching }] = useQuery({
    query: RunStatsQuery,
    variables: { since: daysAgo(PERIOD_DAYS), utcOffsetMinutes: browserUtcOffsetMinutes() },
  });
  if (error) return <ErrorNote error={error} />;
  if (!data) return fetching ? <p className="note">{t('viewer.loading')}</p> : null;
  const rowsOf = (
    groups: readonly { bucketStart?: string | null; runs: number }[],
    key: (index: number) => string,
  ) =>
    groups.flatMap((group, index) =>
      group.bucketStart ? [{ bucketStart: group.bucketStart, key: key(index), count: group.runs }] : [],
    );
  return (
    <>
      <h1>
        {t('viewer.stats.title')} <small>{t('viewer.servers.period', { days: PERIOD_DAYS })}</small>
      </h1>
      <StackedChart
        title={t('viewer.stats.byStatus')}
        rows={rowsOf(data.byStatus.groups, (index) => data.byStatus.groups[index]?.status ?? '')}
        label={(status) => t(`viewer.status.${status.toLowerCase()}`)}
        colour={(status) => STATUS_COLOURS[status]}
      />
      <StackedChart
        title={t('viewer.stats.byReason')}
        rows={rowsOf(data.byReason.groups, (index) => data.byReason.groups[index]?.terminationReason ?? '')}
        label={(reason) => t(`viewer.reason.${reason.toLowerCase()}`)}
        colour={(reason) => REASON_COLOURS[reason]}
      />
      {(data.byStatus.truncated || data.byReason.truncated) && (
        <p className="note">{t('viewer.stats.truncated')}</p>
      )}
    </>
  );
}
