import { useCallback } from 'react';
import { useTranslation } from 'react-i18next';
import { useSearchParams } from 'react-router';
import type { Locale } from '../../src/domain/labels.ts';
import { type Formatters, formatters } from './format.ts';
import { localeOf, pageLocale } from './i18n.ts';

/** The languages the browser prefers, most preferred first. */
const browserLanguages = (): readonly string[] =>
  navigator.languages?.length ? navigator.languages : [navigator.language];

/**
 * The page's language: `?lang=` when the reader chose one (kept in the URL, so
 * a link shows the same language), else the browser's preference.
 */
export function useLocale(): Locale {
  const [params] = useSearchParams();
  return pageLocale(params.get('lang'), browserLanguages());
}

/** A path inside the viewer that keeps the language the reader chose, if any. */
export function useLocalPath(): (path: string, query?: URLSearchParams) => string {
  const [params] = useSearchParams();
  const chosen = params.get('lang');
  return useCallback(
    (path: string, query = new URLSearchParams()) => {
      const next = new URLSearchParams(query);
      if (chosen !== null) next.set('lang', localeOf(chosen));
      else next.delete('lang');
      const search = next.toString();
      return search ? `${path}?${search}` : path;
    },
    [chosen],
  );
}

/** The translation function and the locale's formats. */
export function useWords(): {
  t: (key: string, values?: Record<string, unknown>) => string;
  locale: Locale;
  f: Formatters;
} {
  const { t } = useTranslation();
  const locale = useLocale();
  return { t: (key, values) => t(key, values ?? {}), locale, f: formatters(locale) };
}
