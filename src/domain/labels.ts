import type { ToolOutcome } from './tool-outcome.ts';

export const LOCALES = ['en', 'de'] as const;
export type Locale = (typeof LOCALES)[number];

export type OutcomeLabelKey = `runs.detail.outcome.${ToolOutcome}`;

export function outcomeLabelKey(outcome: ToolOutcome): OutcomeLabelKey {
  return `runs.detail.outcome.${outcome}`;
}

export const OUTCOME_LABELS: Readonly<Record<Locale, Readonly<Record<OutcomeLabelKey, string>>>> = {
  en: {
    'runs.detail.outcome.ok': 'ok',
    'runs.detail.outcome.failed': 'failed',
    'runs.detail.outcome.cancelled': 'cancelled',
  },
  de: {
    'runs.detail.outcome.ok': 'ok',
    'runs.detail.outcome.failed': 'fehlgeschlagen',
    'runs.detail.outcome.cancelled': 'abgebrochen',
  },
};

export function outcomeLabel(outcome: ToolOutcome, locale: Locale = 'en'): string {
  return OUTCOME_LABELS[locale][outcomeLabelKey(outcome)];
}
