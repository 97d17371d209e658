import type { ReactNode } from 'react';
import { useEffect } from 'react';
import { useSearchParams } from 'react-router';
import { LOCALES } from '../../src/domain/labels.ts';
import { errorCode, type RequestError } from './client.ts';
import { useLocale, useWords } from './locale.ts';

/** An outcome as the label table words it; the class colours it (cancelled is never red). */
export function OutcomeText({ outcome }: { outcome: string | null | undefined }) {
  const { t } = useWords();
  if (!outcome) return null;
  const key = outcome.toLowerCase();
  return <span className={`outcome outcome-${key}`}>{t(`runs.detail.outcome.${key}`)}</span>;
}

export function StatusText({ status }: { status: string }) {
  const { t } = useWords();
  const key = status.toLowerCase();
  return <span className={`status status-${key}`}>{t(`viewer.status.${key}`)}</span>;
}

export function ReasonText({ reason }: { reason: string | null | undefined }) {
  const { t } = useWords();
  return reason ? <span className="reason">{t(`viewer.reason.${reason.toLowerCase()}`)}</span> : null;
}

/** A run's or a group's tool calls: ok · failed · cancelled, each in its own words. */
export function OutcomeCountsText({ counts }: { counts: { ok: number; failed: number; cancelled: number } }) {
  const { f } = useWords();
  return (
    <span className="counts">
      {(['ok', 'failed', 'cancelled'] as const).map((outcome) => (
        <span
          key={outcome}
          className={`count outcome-${outcome}${counts[outcome] === 0 ? ' zero' : ''}`}
          data-outcome={outcome}
        >
          {f.number(counts[outcome])} <OutcomeText outcome={outcome} />
        </span>
      ))}
    </span>
  );
}

/** A refusal or outage as the service coded it. */
export function ErrorNote({ error }: { error: RequestError }) {
  const { t } = useWords();
  const permission = error.graphQLErrors[0]?.extensions?.permission;
  return (
    <p role="alert" className="error">
      {typeof permission === 'string'
        ? t('viewer.forbidden', { permission })
        : t('viewer.error', { code: errorCode(error) })}
    </p>
  );
}

/** The page's title, for the tab, the history and a screen reader: what the page shows, then the product. */
export function usePageTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} – runledger`;
  }, [title]);
}

/**
 * A table that scrolls sideways in its own region when the screen is
 * narrower than it, so that the page never does; focusable, so that a
 * keyboard can scroll it too.
 */
export function ScrollingTable({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
    <section className="table-scroll" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}

export function Section({ title, children }: { title: ReactNode; children: ReactNode }) {
  return (
    <section>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

/** Switches the language in place: the choice is kept in the URL (`?lang=de`, `?lang=en`). */
export function LanguageSwitch() {
  const { t } = useWords();
  const locale = useLocale();
  const [params, setParams] = useSearchParams();
  return (
    <label className="language">
      {t('viewer.language')}{' '}
      <select
        value={locale}
        onChange={(event) => {
          // Kept in the URL whichever it is: the browser's own language may be the other one.
          const next = new URLSearchParams(params);
          next.set('lang', event.target.value);
          setParams(next);
        }}
      >
        {LOCALES.map((code) => (
          <option key={code} value={code}>
            {code === 'en' ? 'English' : 'Deutsch'}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Where day buckets start: the browser's midnight. */
export function browserUtcOffsetMinutes(): number {
  return -new Date().getTimezoneOffset();
}

/** Midnight (the browser's) `days` days ago, as an instant. */
export function daysAgo(days: number): string {
  const start = new Date();
  start.setHours(0, 0, 0, 0);
  start.setDate(start.getDate() - days + 1);
  return start.toISOString();
}
