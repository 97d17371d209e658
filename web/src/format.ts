import { EXACT_BELOW_MS } from '../../src/domain/duration-histogram.ts';
import type { Locale } from '../../src/domain/labels.ts';
import { INTL_LOCALE } from './i18n.ts';

/** Dates, numbers, percentages and cost as the locale writes them. */
export function formatters(locale: Locale) {
  const tag = INTL_LOCALE[locale];
  const dateTime = new Intl.DateTimeFormat(tag, { dateStyle: 'medium', timeStyle: 'medium' });
  const time = new Intl.DateTimeFormat(tag, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const day = new Intl.DateTimeFormat(tag, { month: 'short', day: 'numeric' });
  const number = new Intl.NumberFormat(tag);
  // A percentile read from a histogram is within 14 %: two significant digits say what it knows.
  const estimate = new Intl.NumberFormat(tag, { maximumSignificantDigits: 2 });
  const percent = new Intl.NumberFormat(tag, { style: 'percent', maximumFractionDigits: 1 });
  // Runs cost fractions of a cent: up to four decimals, never fewer than two.
  const cost = new Intl.NumberFormat(tag, {
    style: 'currency',
    currency: 'USD',
    minimumFractionDigits: 2,
    maximumFractionDigits: 4,
  });
  return {
    dateTime: (iso: string | null | undefined) => (iso ? dateTime.format(new Date(iso)) : ''),
    time: (iso: string) => time.format(new Date(iso)),
    day: (iso: string) => day.format(new Date(iso)),
    number: (value: number) => number.format(value),
    /** A duration percentile: exact below EXACT_BELOW_MS, else an estimate, marked and rounded as one. */
    percentileMs: (value: number) =>
      value < EXACT_BELOW_MS ? `${number.format(value)} ms` : `≈ ${estimate.format(value)} ms`,
    percent: (value: number | null | undefined) => (value == null ? '' : percent.format(value)),
    cost: (value: number) => cost.format(value),
  };
}

export type Formatters = ReturnType<typeof formatters>;
