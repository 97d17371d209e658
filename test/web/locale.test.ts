import { describe, expect, it } from 'vitest';
import { formatters } from '../../web/src/format.ts';
import { pageLocale, preferredLocale } from '../../web/src/i18n.ts';

describe("the viewer's language", () => {
  it("is the first of the browser's languages it speaks, by primary tag, else English", () => {
    expect(preferredLocale(['de-DE', 'en-US'])).toBe('de');
    expect(preferredLocale(['de-AT'])).toBe('de');
    expect(preferredLocale(['fr-FR', 'de'])).toBe('de');
    expect(preferredLocale(['fr-FR', 'es'])).toBe('en');
    expect(preferredLocale([])).toBe('en');
  });

  it('is what ?lang= names when it names one the viewer speaks', () => {
    expect(pageLocale('en', ['de-DE'])).toBe('en');
    expect(pageLocale('de', ['en-US'])).toBe('de');
    expect(pageLocale('xx', ['de-DE'])).toBe('de');
    expect(pageLocale(null, ['de-CH'])).toBe('de');
  });
});

describe('a duration percentile', () => {
  it('is exact below 12 ms, and above an estimate, marked and cut to two significant digits', () => {
    expect(formatters('en').percentileMs(7)).toBe('7 ms');
    expect(formatters('en').percentileMs(2204)).toBe('≈ 2,200 ms');
    expect(formatters('de').percentileMs(2204)).toBe('≈ 2.200 ms');
    expect(formatters('en').percentileMs(12)).toBe('≈ 12 ms');
  });
});
