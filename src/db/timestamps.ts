import { type IsoInstant, isoInstant } from '../domain/date-time.ts';

const DASH = 45;
const SPACE = 32;
const COLON = 58;
const DOT = 46;

/**
 * A timestamptz as both drivers return it (PostgreSQL's text; a Date from a
 * driver that parses it) as the DateTime scalar writes it. The usual text, a
 * server in UTC with the ISO date style (`2026-12-03 05:18:10.123456+00`), is
 * rewritten as text: a Date and its toISOString for each of thousands of
 * timeline rows cost more than the rest of a line. Any other form (another
 * time zone or date style, a year past 9999) goes through Date. Both keep
 * whole milliseconds, dropping the microseconds.
 */
export function isoInstantOfTimestamp(value: string | Date): IsoInstant {
  if (typeof value !== 'string') return isoInstant(value);
  const length = value.length;
  if (
    length >= 22 &&
    length <= 29 &&
    value.charCodeAt(4) === DASH &&
    value.charCodeAt(7) === DASH &&
    value.charCodeAt(10) === SPACE &&
    value.charCodeAt(13) === COLON &&
    value.charCodeAt(16) === COLON &&
    value.endsWith('+00') &&
    (length === 22 || (length >= 24 && value.charCodeAt(19) === DOT))
  ) {
    const millis = length === 22 ? '000' : `${value.slice(20, length - 3)}00`.slice(0, 3);
    return `${value.slice(0, 10)}T${value.slice(11, 19)}.${millis}Z` as IsoInstant;
  }
  return isoInstant(new Date(value));
}
