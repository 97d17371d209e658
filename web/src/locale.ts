import { useCallback } from 'react';
import { useTranslation } from 'react-i18next';
import { useSearchParams } from 'react-router';
import type { Locale } from '../../src/domain/labels.ts';
import { type Formatters, formatters } from './format.ts';
import { localeOf } from './i18n.ts';

/** The page's language, from `?lang=` (kept in the URL, so a link shows the same language). */
export function useLocale(): Locale {
  const [params] = useSearchParams();
  return localeOf(params.get('lang'));
}

/** A path inside the viewer that keeps the page's language. */
export function useLocalPath(): (path: string, query?: URLSearchParams) => string {
  const locale = useLocale();
  return useCallback(
    (path: string, query = new URLSearchParams()) => {
      const next = new URLSearchParams(query);
      if (locale !== 'en') next.set('lang', locale);
      else next.delete('lang');
      const search = next.toString();
      return search ? `${path}?${search}` : path;
    },
    [locale],
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
