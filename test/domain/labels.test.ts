import { describe, expect, it } from 'vitest';
import {
  LABELS,
  LOCALES,
  label,
  OUTCOME_LABELS,
  outcomeLabel,
  outcomeLabelKey,
} from '../../src/domain/labels.ts';
import { TOOL_OUTCOMES } from '../../src/domain/tool-outcome.ts';

describe('outcome labels', () => {
  it('English: ok, failed, cancelled', () => {
    expect(outcomeLabel('ok', 'en')).toBe('ok');
    expect(outcomeLabel('failed', 'en')).toBe('failed');
    expect(outcomeLabel('cancelled', 'en')).toBe('cancelled');
  });

  it('English is the default locale', () => {
    expect(outcomeLabel('failed')).toBe('failed');
    expect(outcomeLabel('cancelled')).toBe('cancelled');
  });

  it('German: ok, fehlgeschlagen, abgebrochen', () => {
    expect(outcomeLabel('ok', 'de')).toBe('ok');
    expect(outcomeLabel('failed', 'de')).toBe('fehlgeschlagen');
    expect(outcomeLabel('cancelled', 'de')).toBe('abgebrochen');
  });

  it('a cancelled call is never labelled as failed, in any locale', () => {
    for (const locale of LOCALES) {
      expect(outcomeLabel('cancelled', locale)).not.toBe(outcomeLabel('failed', locale));
    }
  });

  it.each(TOOL_OUTCOMES)('the label key of %s is runs.detail.outcome.<outcome>', (outcome) => {
    expect(outcomeLabelKey(outcome)).toBe(`runs.detail.outcome.${outcome}`);
  });

  it('the label keys, spelled out', () => {
    expect(outcomeLabelKey('ok')).toBe('runs.detail.outcome.ok');
    expect(outcomeLabelKey('failed')).toBe('runs.detail.outcome.failed');
    expect(outcomeLabelKey('cancelled')).toBe('runs.detail.outcome.cancelled');
  });

  it('the locales are en and de', () => {
    expect([...LOCALES]).toEqual(['en', 'de']);
    expect(Object.keys(OUTCOME_LABELS).sort()).toEqual(['de', 'en']);
  });

  it.each(['en', 'de'] as const)('the %s labels have exactly one key per tool outcome', (locale) => {
    const expected = TOOL_OUTCOMES.map((outcome) => `runs.detail.outcome.${outcome}`).sort();
    expect(Object.keys(OUTCOME_LABELS[locale]).sort()).toEqual(expected);
    for (const outcome of TOOL_OUTCOMES) {
      const label = OUTCOME_LABELS[locale][outcomeLabelKey(outcome)];
      expect(typeof label).toBe('string');
      expect(label.length).toBeGreaterThan(0);
    }
  });
});

describe('the one label table', () => {
  it('holds every key in every locale, each with the placeholders of the English text', () => {
    const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
    const keys = Object.keys(LABELS.en).sort();
    for (const locale of LOCALES) {
      expect(Object.keys(LABELS[locale]).sort()).toEqual(keys);
      for (const key of keys as Array<keyof (typeof LABELS)['en']>) {
        expect(LABELS[locale][key], `${locale} ${key}`).not.toBe('');
        expect(placeholders(LABELS[locale][key]), `${locale} ${key}`).toEqual(placeholders(LABELS.en[key]));
      }
    }
    // The outcome labels are read from it, not kept beside it.
    for (const locale of LOCALES) {
      for (const outcome of TOOL_OUTCOMES) {
        expect(OUTCOME_LABELS[locale][outcomeLabelKey(outcome)]).toBe(
          LABELS[locale][outcomeLabelKey(outcome)],
        );
      }
    }
  });

  it('fills in placeholders once, leaving a value that looks like one as it is', () => {
    expect(label('de', 'runs.detail.finish', { reason: '{count}' })).toBe('Ende: {count}');
    expect(label('en', 'runs.detail.tokens', { in: 3, out: 4 })).toBe('3 in / 4 out tokens');
  });
});
