import { isStorableText } from '../domain/bounding.ts';
import { badUserInput } from './errors.ts';

/**
 * Filter values of queries, refused (BAD_USER_INPUT) when PostgreSQL could not
 * hold them: a U+0000 would fail the statement, and a lone surrogate would
 * silently match U+FFFD instead.
 */
export function storableStrings<T extends readonly string[] | null | undefined>(values: T, field: string): T {
  for (const value of values ?? []) {
    if (!isStorableText(value)) {
      throw badUserInput(`${field} is not well-formed Unicode, or holds U+0000`, field);
    }
  }
  return values;
}
