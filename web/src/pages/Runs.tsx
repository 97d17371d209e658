import { type FormEvent, useEffect, useMemo, useState } from 'react';
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
import { RunFilterNamesQuery, RunsPageQuery } from '../operations.ts';

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

/** A run's full id, as the API names runs. */
const RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** How often the list asks again while the tab is shown: a run that starts elsewhere appears by itself. */
const REFRESH_MS = 15_000;
/** The names offered in the filters: those of the last year's runs. */
const NAMES_SINCE_MS = 365 * 86_400_000;
/** Separates the cursors of the pages before this one in the URL (?back=), for Previous page. */
const TRAIL_SEPARATOR = ' ';

/** A day typed in a date field (yyyy-mm-dd) as the instant it starts, in the reader's time zone; `end`: the next day's. */
function dayStart(day: string, end = false): string | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!match) return undefined;
  const start = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + (end ? 1 : 0));
  return Number.isNaN(start.getTime()) ? undefined : start.toISOString();
}

/** The filter the URL holds: ?status=FAILED&configuration=docs-writer&owner=bob&outcome=CANCELLED&from=…&to=…. */
function filterOf(params: URLSearchParams): RunFilter {
  const filter: RunFilter = {};
  const status = params.get('status');
  if (status && (STATUSES as readonly string[]).includes(status)) filter.statuses = [status as RunStatus];
  const configuration = params.get('configuration')?.trim();
  if (configuration) filter.configurations = [configuration];
  const owner = params.get('owner')?.trim();
  if (owner) filter.owners = [owner];
  const outcome = params.get('outcome');
  if (outcome && (OUTCOMES as readonly string[]).includes(outcome))
    filter.hasToolOutcome = outcome as ToolOutcome;
  const createdAfter = dayStart(params.get('since') ?? '');
  if (createdAfter) filter.createdAfter = createdAfter;
  const createdBefore = dayStart(params.get('until') ?? '', true);
  if (createdBefore) filter.createdBefore = createdBefore;
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
  const [{ data, error, fetching }, refresh] = useQuery({
    query: RunsPageQuery,
    variables: { first: PAGE_SIZE, after, filter, waiting: WAITING },
  });

  const [names] = useQuery({
    query: RunFilterNamesQuery,
    variables: { since: useMemo(() => new Date(Date.now() - NAMES_SINCE_MS).toISOString(), []) },
  });
  const [wrongId, setWrongId] = useState(false);

  // Asked again every REFRESH_MS while the tab is shown: new runs appear without a reload.
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') refresh({ requestPolicy: 'network-only' });
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [refresh]);

  function applyFilter(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    // A run's id goes straight to the run.
    const id = String(form.get('run') ?? '').trim();
    if (id) {
      setWrongId(!RUN_ID.test(id));
      if (RUN_ID.test(id)) navigate(to(`/runs/${id.toLowerCase()}`));
      return;
    }
    setWrongId(false);
    const next = new URLSearchParams();
    for (const name of ['status', 'configuration', 'owner', 'outcome', 'since', 'until']) {
      const value = String(form.get(name) ?? '').trim();
      if (value) next.set(name, value);
    }
    navigate(to('/runs', next));
  }

  /** The cursors of the pages before this one, oldest first ('' for the first page). */
  const trail = params.get('back')?.split(TRAIL_SEPARATOR) ?? [];
  const pageQuery = (cursor: string | null, from: number, back: readonly string[]) => {
    const next = new URLSearchParams(params);
    next.delete('lang');
    if (cursor) next.set('after', cursor);
    else next.delete('after');
    if (from > 0) next.set('from', String(from));
    else next.delete('from');
    if (back.length > 0) next.set('back', back.join(TRAIL_SEPARATOR));
    else next.delete('back');
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
          <NameFilter
            name="configuration"
            label={t('viewer.runs.filter.configuration')}
            value={params.get('configuration')}
            names={names.data?.configurations.groups.map((group) => group.configuration)}
          />
          <NameFilter
            name="owner"
            label={t('viewer.runs.filter.owner')}
            value={params.get('owner')}
            names={names.data?.owners.groups.map((group) => group.owner)}
          />
          <label>
            {t('viewer.runs.filter.since')}
            <input name="since" type="date" defaultValue={params.get('since') ?? ''} />
          </label>
          <label>
            {t('viewer.runs.filter.until')}
            <input name="until" type="date" defaultValue={params.get('until') ?? ''} />
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
          <label>
            {t('viewer.runs.filter.run')}
            <input name="run" spellCheck={false} placeholder="00000000-0000-4000-8000-000000000000" />
          </label>
          <button type="submit">{t('viewer.runs.filter.apply')}</button>
          <Link to={to('/runs')}>{t('viewer.runs.filter.clear')}</Link>
          {wrongId && (
            <p role="alert" className="error">
              {t('viewer.runs.filter.wrongId')}
            </p>
          )}
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
              {after && <Link to={pageQuery(null, 0, [])}>{t('viewer.runs.firstPage')}</Link>}
              {after && (
                <Link
                  to={pageQuery(trail.at(-1) || null, Math.max(0, offset - PAGE_SIZE), trail.slice(0, -1))}
                  rel="prev"
                >
                  {t('viewer.runs.previousPage')}
                </Link>
              )}
              {runs.pageInfo.hasNextPage && runs.pageInfo.endCursor && (
                <Link
                  to={pageQuery(runs.pageInfo.endCursor, offset + runs.edges.length, [...trail, after ?? ''])}
                  rel="next"
                >
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

/** A filter by a name, offering the names there are as it is typed (a datalist). */
function NameFilter({
  name,
  label,
  value,
  names = [],
}: {
  name: string;
  label: string;
  value: string | null;
  names?: readonly (string | null)[];
}) {
  const list = `run-${name}-names`;
  return (
    <>
      <label>
        {label}
        <input name={name} list={list} defaultValue={value ?? ''} />
      </label>
      <datalist id={list}>{names.map((known) => known && <option key={known} value={known} />)}</datalist>
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
