import { type FormEvent, useMemo } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import {
  ErrorNote,
  OutcomeCountsText,
  ReasonText,
  ScrollingTable,
  Section,
  StatusText,
  usePageTitle,
} from '../components.tsx';
import type { RunFilter, RunStatus, ToolOutcome, ViewerRunRowFragment } from '../gql/graphql.ts';
import { useLocalPath, useWords } from '../locale.ts';
import { RunsPageQuery } from '../operations.ts';

/** Rows per page of recent runs. */
const PAGE_SIZE = 20;
const STATUSES: readonly RunStatus[] = [
  'QUEUED',
  'RUNNING',
  'WAITING_FOR_APPROVAL',
  'WAITING_FOR_INPUT',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
];
const OUTCOMES: readonly ToolOutcome[] = ['OK', 'FAILED', 'CANCELLED'];
const WAITING: RunFilter = { statuses: ['WAITING_FOR_APPROVAL', 'WAITING_FOR_INPUT'] };

/** The filter the URL holds: ?status=FAILED&configuration=docs-writer&outcome=CANCELLED. */
function filterOf(params: URLSearchParams): RunFilter {
  const filter: RunFilter = {};
  const status = params.get('status');
  if (status && (STATUSES as readonly string[]).includes(status)) filter.statuses = [status as RunStatus];
  const configuration = params.get('configuration')?.trim();
  if (configuration) filter.configurations = [configuration];
  const outcome = params.get('outcome');
  if (outcome && (OUTCOMES as readonly string[]).includes(outcome))
    filter.hasToolOutcome = outcome as ToolOutcome;
  return filter;
}

export function RunsPage() {
  const { t, f } = useWords();
  usePageTitle(t('viewer.nav.runs'));
  const to = useLocalPath();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const filter = useMemo(() => filterOf(params), [params]);
  const after = params.get('after');
  const offset = Math.max(0, Number(params.get('from') ?? 0) || 0);
  const [{ data, error, fetching }] = useQuery({
    query: RunsPageQuery,
    variables: { first: PAGE_SIZE, after, filter, waiting: WAITING },
  });

  function applyFilter(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const next = new URLSearchParams();
    for (const name of ['status', 'configuration', 'outcome']) {
      const value = String(form.get(name) ?? '').trim();
      if (value) next.set(name, value);
    }
    navigate(to('/runs', next));
  }

  const pageQuery = (cursor: string | null, from: number) => {
    const next = new URLSearchParams(params);
    next.delete('lang');
    if (cursor) next.set('after', cursor);
    else next.delete('after');
    if (from > 0) next.set('from', String(from));
    else next.delete('from');
    return to('/runs', next);
  };

  // While the next page loads the previous one stays on screen, dimmed.
  const runs = data?.runs;
  const waiting = data?.waiting;
  return (
    <>
      {waiting && waiting.edges.length > 0 && (
        <Section title={`${t('viewer.runs.waiting')} (${f.number(waiting.totalCount)})`}>
          <RunTable runs={waiting.edges.map((edge) => edge.node)} label="waiting" />
        </Section>
      )}
      <Section title={t('viewer.runs.recent')}>
        <form
          className="filters"
          onSubmit={applyFilter}
          key={params.toString()}
          aria-label={t('viewer.runs.filters')}
        >
          <label>
            {t('viewer.runs.filter.status')}
            <select name="status" defaultValue={params.get('status') ?? ''}>
              <option value="">{t('viewer.runs.filter.any')}</option>
              {STATUSES.map((status) => (
                <option key={status} value={status}>
                  {t(`viewer.status.${status.toLowerCase()}`)}
                </option>
              ))}
            </select>
          </label>
          <label>
            {t('viewer.runs.filter.configuration')}
            <input name="configuration" defaultValue={params.get('configuration') ?? ''} />
          </label>
          <label>
            {t('viewer.runs.filter.outcome')}
            <select name="outcome" defaultValue={params.get('outcome') ?? ''}>
              <option value="">{t('viewer.runs.filter.any')}</option>
              {OUTCOMES.map((outcome) => (
                <option key={outcome} value={outcome}>
                  {t(`runs.detail.outcome.${outcome.toLowerCase()}`)}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">{t('viewer.runs.filter.apply')}</button>
          <Link to={to('/runs')}>{t('viewer.runs.filter.clear')}</Link>
        </form>
        {error && <ErrorNote error={error} />}
        {!runs && fetching && <p className="note">{t('viewer.loading')}</p>}
        {runs && (
          <>
            <p className="total" data-testid="runs-total">
              {runs.edges.length === 0
                ? t('viewer.runs.empty')
                : t('viewer.runs.range', {
                    from: f.number(offset + 1),
                    to: f.number(offset + runs.edges.length),
                    total: f.number(runs.totalCount),
                  })}
            </p>
            <div className={fetching ? 'stale' : undefined} aria-busy={fetching}>
              <RunTable runs={runs.edges.map((edge) => edge.node)} label="recent" />
            </div>
            <nav className="paging">
              {after && <Link to={pageQuery(null, 0)}>{t('viewer.runs.firstPage')}</Link>}
              {runs.pageInfo.hasNextPage && runs.pageInfo.endCursor && (
                <Link to={pageQuery(runs.pageInfo.endCursor, offset + runs.edges.length)} rel="next">
                  {t('viewer.runs.nextPage')}
                </Link>
              )}
            </nav>
          </>
        )}
      </Section>
    </>
  );
}

function RunTable({ runs, label }: { runs: readonly ViewerRunRowFragment[]; label: string }) {
  const { t, f } = useWords();
  const to = useLocalPath();
  return (
    <ScrollingTable label={t(`viewer.runs.${label}`)}>
      <table className="runs" data-testid={`runs-${label}`}>
        <thead>
          <tr>
            <th>{t('viewer.column.run')}</th>
            <th>{t('viewer.column.configuration')}</th>
            <th>{t('viewer.column.owner')}</th>
            <th>{t('viewer.column.status')}</th>
            <th>{t('viewer.column.reason')}</th>
            <th>{t('viewer.column.created')}</th>
            <th>{t('viewer.column.finished')}</th>
            <th className="number">{t('viewer.column.cost')}</th>
            <th>{t('viewer.column.toolCalls')}</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => (
            <tr key={run.id} data-run={run.uuid}>
              <td>
                <Link to={to(`/runs/${run.uuid}`)} className="uuid">
                  {run.uuid.slice(0, 8)}
                </Link>
              </td>
              <td>{run.configuration}</td>
              <td>{run.owner}</td>
              <td>
                <StatusText status={run.status} />
              </td>
              <td>
                <ReasonText reason={run.terminationReason} />
              </td>
              <td>{f.dateTime(run.createdAt)}</td>
              <td>{f.dateTime(run.finishedAt)}</td>
              <td className="number">{f.cost(run.estimatedCost)}</td>
              <td>
                <OutcomeCountsText counts={run.toolOutcomeCounts} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollingTable>
  );
}
