import { useCallback, useEffect, useRef, useState } from 'react';
import { useParams } from 'react-router';
import { useClient, useMutation, useQuery } from 'urql';
import { onEnd, pipe, subscribe } from 'wonka';
import { errorCode } from '../client.ts';
import {
  ErrorNote,
  OutcomeCountsText,
  OutcomeText,
  ReasonText,
  ScrollingTable,
  Section,
  StatusText,
  usePageTitle,
} from '../components.tsx';
import type {
  ViewerRunEventsSubscription,
  ViewerRunHeaderFragment,
  ViewerTimelineRowFragment,
} from '../gql/graphql.ts';
import { useWords } from '../locale.ts';
import {
  CancelRunMutation,
  RunEventsSubscription,
  RunHeaderQuery,
  RunPageQuery,
  StepDetailQuery,
  TimelineAfterQuery,
} from '../operations.ts';
import { useSession } from '../session.ts';

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);
/** Pauses before the live stream is taken up again after it was lost: 1 s, doubling, at most 5 s. */
const RECONNECT_FIRST_MS = 1_000;
const RECONNECT_MOST_MS = 5_000;

type CallProgress = NonNullable<ViewerRunEventsSubscription['runEvents']['progress']>;

/** Entries by sequence, in order, each once (a live page and a fetched page may overlap). */
function merged(
  entries: readonly ViewerTimelineRowFragment[],
  more: readonly ViewerTimelineRowFragment[],
): ViewerTimelineRowFragment[] {
  const bySequence = new Map(entries.map((entry) => [entry.sequence, entry]));
  for (const entry of more) bySequence.set(entry.sequence, entry);
  return [...bySequence.values()].sort((a, b) => a.sequence - b.sequence);
}

export function RunPage() {
  const { uuid = '' } = useParams();
  const { t, f, locale } = useWords();
  usePageTitle(t('viewer.run.title', { uuid: uuid.slice(0, 8) }));
  const client = useClient();
  const { viewer } = useSession();
  const [{ data, error, fetching }] = useQuery({
    query: RunPageQuery,
    variables: { uuid, locale: locale === 'de' ? 'DE' : 'EN' },
  });
  const [run, setRun] = useState<ViewerRunHeaderFragment | null>(null);
  const [entries, setEntries] = useState<ViewerTimelineRowFragment[]>([]);
  const [hasMore, setHasMore] = useState(false);
  const [live, setLive] = useState<'live' | 'reconnecting'>('live');
  // The latest progress of each call on the wire, by call; a stored step ends what it reported.
  const [progress, setProgress] = useState<ReadonlyMap<string, CallProgress>>(new Map());
  const cursor = useRef<string | null>(null);
  const pulling = useRef<Promise<void> | null>(null);
  const pullAgain = useRef(false);

  /** Reads every entry after the last one held, a page at a time, one reader at once. */
  const pull = useCallback(() => {
    if (pulling.current) {
      pullAgain.current = true;
      return pulling.current;
    }
    pulling.current = (async () => {
      try {
        do {
          pullAgain.current = false;
          const result = await client
            .query(TimelineAfterQuery, {
              uuid,
              locale: locale === 'de' ? 'DE' : 'EN',
              after: cursor.current,
            })
            .toPromise();
          const page = result.data?.run?.timelinePage;
          if (!page) return;
          setEntries((held) =>
            merged(
              held,
              page.edges.map((edge) => edge.node),
            ),
          );
          setHasMore(page.pageInfo.hasNextPage);
          cursor.current = page.pageInfo.endCursor ?? cursor.current;
          if (page.pageInfo.hasNextPage) pullAgain.current = true;
        } while (pullAgain.current);
      } finally {
        pulling.current = null;
      }
    })();
    return pulling.current;
  }, [client, uuid, locale]);

  // A fresh answer (another run, another language) replaces what the page held.
  useEffect(() => {
    if (!data?.run) return;
    setRun(data.run);
    setEntries(data.run.timelinePage.edges.map((edge) => edge.node));
    setHasMore(data.run.timelinePage.pageInfo.hasNextPage);
    cursor.current = data.run.timelinePage.pageInfo.endCursor ?? null;
    // The rest of a long timeline follows, a page at a time, while the first page is on screen.
    if (data.run.timelinePage.pageInfo.hasNextPage) void pull();
  }, [data, pull]);

  // Live while the run runs: each event updates the header; a new step brings its timeline line.
  // Followed from the first answer of an open run until its stream ends with the run terminal (a call in
  // flight when the run was cancelled still records its step on the stream).
  const [following, setFollowing] = useState(false);
  useEffect(() => {
    if (data?.run) setFollowing(!TERMINAL.has(data.run.status));
  }, [data]);
  // The last step held: a stream taken up again starts after it, and the service sends what was missed.
  const heldSequence = useRef<number | null>(null);
  heldSequence.current = entries.at(-1)?.sequence ?? null;
  // A progress message is private: asked only with a key that may read it, else it is an error.
  const payloads = viewer.permissions.includes('READ_PAYLOADS');
  // Taking the stream up again: each attempt subscribes anew (after the header is read again).
  const [attempt, setAttempt] = useState(0);
  // The last step that arrived live, said to a screen reader (politely: after what it is reading).
  const [arrived, setArrived] = useState<number | null>(null);
  const lostInARow = useRef(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new attempt subscribes anew
  useEffect(() => {
    if (!following) return;
    let current = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    /** The stream ended or failed while the run is open: say so, and try again after a pause. */
    const lost = () => {
      if (!current) return;
      current = false;
      setLive('reconnecting');
      const wait = Math.min(RECONNECT_FIRST_MS * 2 ** lostInARow.current, RECONNECT_MOST_MS);
      lostInARow.current += 1;
      timer = setTimeout(async () => {
        // The header first: the run may have ended meanwhile (then nothing is taken up again).
        const header = await client.query(RunHeaderQuery, { uuid }).toPromise();
        const now = header.data?.run;
        if (now) {
          setRun(now);
          void pull();
          if (TERMINAL.has(now.status)) return setFollowing(false);
        }
        setAttempt((n) => n + 1);
      }, wait);
    };
    const subscription = pipe(
      client.subscription(RunEventsSubscription, { uuid, afterSequence: heldSequence.current, payloads }),
      onEnd(lost),
      subscribe((result) => {
        if (result.error) return lost();
        const event = result.data?.runEvents;
        if (!event) return;
        lostInARow.current = 0;
        setLive('live');
        setRun(event.run);
        const report = event.progress;
        if (report) setProgress((held) => new Map(held).set(report.callId, report));
        if (event.step) {
          setProgress(new Map());
          setArrived(event.step.sequence);
          void pull();
        }
      }),
    );
    setLive((state) => (state === 'reconnecting' ? state : 'live'));
    return () => {
      current = false;
      clearTimeout(timer);
      subscription.unsubscribe();
    };
  }, [client, uuid, following, payloads, pull, attempt]);
  // Live again once the stream is back: the first event says so, or a second without an error.
  useEffect(() => {
    if (live !== 'reconnecting' || attempt === 0) return;
    const timer = setTimeout(() => setLive((state) => (state === 'reconnecting' ? 'live' : state)), 1_000);
    return () => clearTimeout(timer);
  }, [live, attempt]);

  const [cancelState, cancel] = useMutation(CancelRunMutation);
  const statusRef = useRef<HTMLElement>(null);
  const [cancelRefusal, setCancelRefusal] = useState<string | null>(null);
  async function cancelRun() {
    if (!window.confirm(t('viewer.run.cancelConfirm'))) return;
    setCancelRefusal(null);
    const result = await cancel({ uuid });
    const answer = result.data?.cancelRun;
    if (answer?.__typename === 'CancelRunSuccess') {
      setRun(answer.data);
      // The Cancel button is gone: focus goes to the status it changed.
      statusRef.current?.focus();
    } else
      setCancelRefusal(
        answer && 'code' in answer ? answer.code : result.error ? errorCode(result.error) : 'UNKNOWN',
      );
  }

  if (error) return <ErrorNote error={error} />;
  if (!data && fetching) return <p className="note">{t('viewer.loading')}</p>;
  if (!data?.run || !run) return <p className="note">{t('viewer.run.notFound')}</p>;

  const mayCancel =
    !TERMINAL.has(run.status) &&
    (viewer.permissions.includes('CANCEL_ANY_RUN') ||
      (viewer.permissions.includes('CANCEL_OWN_RUNS') && run.owner === viewer.actor));
  return (
    <>
      <header className="run-header">
        <p className="visually-hidden" role="status" aria-live="polite">
          {arrived !== null && t('viewer.run.stepArrived', { sequence: arrived })}
        </p>
        <h1>
          {t('viewer.run.title', { uuid: run.uuid })} <CopyButton text={run.uuid} />
        </h1>
        <dl>
          <dt>{t('viewer.column.status')}</dt>
          <dd data-testid="run-status" tabIndex={-1} ref={statusRef}>
            <StatusText status={run.status} />
            {/* A reason that only says the status again ("cancelled · cancelled") is left out. */}
            {run.terminationReason && run.terminationReason.toLowerCase() !== run.status.toLowerCase() && (
              <>
                {' · '}
                <ReasonText reason={run.terminationReason} />
              </>
            )}
            {!TERMINAL.has(run.status) && (
              <span className={live} role="status">
                {t(`viewer.run.${live}`)}
              </span>
            )}
          </dd>
          <dt>{t('viewer.column.configuration')}</dt>
          <dd>{run.configuration}</dd>
          <dt>{t('viewer.column.owner')}</dt>
          <dd>{run.owner}</dd>
          <dt>{t('viewer.run.rounds')}</dt>
          <dd>{f.number(run.rounds)}</dd>
          <dt>{t('viewer.run.tokens')}</dt>
          <dd>
            {t('viewer.run.tokensDetail', {
              total: f.number(run.totalTokens),
              prompt: f.number(run.promptTokens),
              completion: f.number(run.completionTokens),
            })}
          </dd>
          <dt>{t('viewer.column.cost')}</dt>
          <dd>{f.cost(run.estimatedCost)}</dd>
          <dt>{t('viewer.column.created')}</dt>
          <dd>{f.dateTime(run.createdAt)}</dd>
          <dt>{t('viewer.column.finished')}</dt>
          <dd>{f.dateTime(run.finishedAt)}</dd>
          <dt>{t('viewer.column.toolCalls')}</dt>
          <dd>
            <OutcomeCountsText counts={run.toolOutcomeCounts} />
          </dd>
          <dt>{t('viewer.column.failureRate')}</dt>
          {/* Failed of the finished calls: a cancelled call is in neither. */}
          <dd data-testid="run-failure-rate">
            {run.toolOutcomeCounts.failureRate == null
              ? t('viewer.none')
              : f.percent(run.toolOutcomeCounts.failureRate)}
          </dd>
        </dl>
        {mayCancel && (
          <button type="button" className="danger" onClick={cancelRun} disabled={cancelState.fetching}>
            {t('viewer.run.cancel')}
          </button>
        )}
        {cancelRefusal && (
          <p role="alert" className="error">
            {t('viewer.run.cancelRefused', { code: cancelRefusal })}
          </p>
        )}
      </header>
      <Section
        title={`${t('viewer.run.timeline')} · ${t('viewer.run.steps', { count: f.number(entries.length) })}`}
      >
        {entries.length === 0 ? (
          <p className="note" data-testid="timeline-empty">
            {TERMINAL.has(run.status) ? t('viewer.run.noSteps') : t('viewer.run.noStepsYet')}
          </p>
        ) : (
          <Timeline entries={entries} />
        )}
        {hasMore && <p className="note">{t('viewer.loading')}</p>}
        {progress.size > 0 && !TERMINAL.has(run.status) && (
          <div className="on-the-wire" data-testid="calls-on-the-wire">
            <h3>{t('viewer.run.onTheWire')}</h3>
            <ul>
              {[...progress.values()].map((report) => (
                <li key={report.callId} data-testid="call-progress">
                  <progress value={report.progress} max={report.total ?? undefined} />{' '}
                  {report.total === null || report.total === undefined
                    ? t('viewer.run.progressOpen', {
                        call: `${report.server}/${report.toolName}`,
                        progress: f.number(report.progress),
                      })
                    : t('viewer.run.progress', {
                        call: `${report.server}/${report.toolName}`,
                        progress: f.number(report.progress),
                        total: f.number(report.total),
                      })}
                  {report.message ? ` · ${report.message}` : ''}
                </li>
              ))}
            </ul>
          </div>
        )}
      </Section>
    </>
  );
}

/** Where each step lies in the run's time: from its start (occurredAt − durationMs) to its end, for the waterfall. */
interface Span {
  first: number;
  length: number;
}

function spanOf(entries: readonly ViewerTimelineRowFragment[]): Span {
  const ends = entries.map((entry) => new Date(String(entry.occurredAt)).getTime());
  const starts = entries.map((entry, i) => (ends[i] ?? 0) - entry.durationMs);
  const first = Math.min(...starts);
  return { first, length: Math.max(1, Math.max(...ends) - first) };
}

/** A step's bar in the waterfall: decorative, its numbers are in the row. */
function StepBar({ entry, span }: { entry: ViewerTimelineRowFragment; span: Span }) {
  const end = new Date(String(entry.occurredAt)).getTime();
  const left = Math.min(((end - entry.durationMs - span.first) / span.length) * 100, 99.5);
  const width = Math.min(Math.max((entry.durationMs / span.length) * 100, 0.5), 100 - left);
  return (
    <span className="waterfall" aria-hidden="true">
      <span
        className={`bar outcome-${entry.outcome?.toLowerCase() ?? 'none'}`}
        style={{ left: `${left}%`, width: `${width}%` }}
      />
    </span>
  );
}

function Timeline({ entries }: { entries: readonly ViewerTimelineRowFragment[] }) {
  const { t } = useWords();
  const span = spanOf(entries);
  return (
    <ScrollingTable label={t('viewer.run.timeline')}>
      <table className="timeline" data-testid="timeline">
        <thead>
          <tr>
            <th className="number">#</th>
            <th>{t('viewer.column.time')}</th>
            <th>{t('viewer.column.kind')}</th>
            <th className="number">{t('viewer.column.round')}</th>
            <th className="number">{t('viewer.column.ms')}</th>
            <th>{t('viewer.column.outcome')}</th>
            <th>{t('viewer.column.details')}</th>
            <th>
              <span className="visually-hidden">{t('viewer.run.stepDetail')}</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <TimelineRow key={entry.sequence} entry={entry} span={span} />
          ))}
        </tbody>
      </table>
    </ScrollingTable>
  );
}

/** One line of the timeline, and on demand the step in full below it. */
function TimelineRow({ entry, span }: { entry: ViewerTimelineRowFragment; span: Span }) {
  const { t, f } = useWords();
  const [open, setOpen] = useState(false);
  const detailId = `step-${entry.sequence}-detail`;
  return (
    <>
      <tr data-sequence={entry.sequence} data-outcome={entry.outcome?.toLowerCase() ?? ''}>
        <td className="number">{entry.sequence}</td>
        <td>{f.time(entry.occurredAt)}</td>
        <td>{t(`runs.detail.kind.${entry.kind.toLowerCase()}`)}</td>
        <td className="number">{entry.round}</td>
        <td className="number">
          {f.number(entry.durationMs)}
          <StepBar entry={entry} span={span} />
        </td>
        <td className="outcome-cell">
          <OutcomeText outcome={entry.outcome} />
        </td>
        <td className="detail">{entry.detail}</td>
        <td>
          <button
            type="button"
            className="link"
            aria-expanded={open}
            aria-controls={detailId}
            onClick={() => setOpen((shown) => !shown)}
          >
            {open ? t('viewer.run.hideStep') : t('viewer.run.showStep')}
          </button>
        </td>
      </tr>
      {open && (
        <tr id={detailId} className="step-detail" data-testid="step-detail">
          <td colSpan={8}>
            <StepDetail id={entry.step.id} />
          </td>
        </tr>
      )}
    </>
  );
}

/**
 * A step in full: the causes it states, its metadata, and its payload
 * (arguments, result, messages) to a key with read_payloads; to any other key
 * a note of the permission it lacks.
 */
function StepDetail({ id }: { id: string }) {
  const { t } = useWords();
  const { viewer } = useSession();
  const payloads = viewer.permissions.includes('READ_PAYLOADS');
  const [{ data, error }] = useQuery({ query: StepDetailQuery, variables: { id, payloads } });
  if (error) return <ErrorNote error={error} />;
  const step = data?.node && 'id' in data.node ? data.node : null;
  if (!step) return <p className="note">{t('viewer.loading')}</p>;
  return (
    <dl className="step-facts">
      {step.failureCode && (
        <>
          <dt>{t('viewer.run.failureCode')}</dt>
          <dd>{step.failureCode}</dd>
        </>
      )}
      {step.cancelCode && (
        <>
          <dt>{t('viewer.run.cancelCode')}</dt>
          <dd>{step.cancelCode}</dd>
        </>
      )}
      <dt>{t('viewer.run.metadata')}</dt>
      <dd>
        <pre>{JSON.stringify(step.metadata, null, 2)}</pre>
      </dd>
      <dt>{t('viewer.run.payload')}</dt>
      <dd>
        {payloads ? (
          <pre data-testid="step-payload">{JSON.stringify(step.payload ?? null, null, 2)}</pre>
        ) : (
          <p className="note">{t('viewer.forbidden', { permission: 'read_payloads' })}</p>
        )}
      </dd>
    </dl>
  );
}

/** Copies a text (a run's id) to the clipboard, and says it did. */
function CopyButton({ text }: { text: string }) {
  const { t } = useWords();
  const [copied, setCopied] = useState(false);
  async function copy() {
    await navigator.clipboard.writeText(text);
    setCopied(true);
    setTimeout(() => setCopied(false), 2_000);
  }
  return (
    <button type="button" className="copy" onClick={() => void copy()}>
      {copied ? t('viewer.run.copied') : t('viewer.run.copyId')}
    </button>
  );
}
