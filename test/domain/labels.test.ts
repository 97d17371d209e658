import { describe, expect, it } from 'vitest';
import { LOCALES, OUTCOME_LABELS, outcomeLabel, outcomeLabelKey } from '../../src/domain/labels.ts';
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
