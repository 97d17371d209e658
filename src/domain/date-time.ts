import { isInstantInRange } from './limits.ts';

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-](\d{2}):(\d{2}))$/;

/**
 * An ISO 8601 date-time with an offset, as an instant, or null when it is not
 * one: the calendar date must exist (no 2026-02-30, which `Date` would roll
 * over into March), hours 00-23, minutes and seconds 00-59, offsets under 24
 * hours, and the instant within 1970-01-01T00:00:00Z..9999-12-31T23:59:59.999Z.
 */
export function parseDateTime(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const match = DATE_TIME.exec(value);
  if (!match) return null;
  const [, year, month, day, hour, minute, second = '0', , , offsetHours = '0', offsetMinutes = '0'] = match;
  const [y, mo, d] = [Number(year), Number(month), Number(day)];
  const calendar = new Date(Date.UTC(y, mo - 1, d));
  if (
    calendar.getUTCFullYear() !== y ||
    calendar.getUTCMonth() !== mo - 1 ||
    calendar.getUTCDate() !== d ||
    Number(hour) > 23 ||
    Number(minute) > 59 ||
    Number(second) > 59 ||
    Number(offsetHours) > 23 ||
    Number(offsetMinutes) > 59
  ) {
    return null;
  }
  const date = new Date(value);
  return Number.isNaN(date.getTime()) || !isInstantInRange(date) ? null : date;
}

/**
 * An instant written as the DateTime scalar writes it: ISO 8601 in UTC with
 * milliseconds (2026-12-01T09:30:00.000Z), what `Date.prototype.toISOString`
 * gives. Lines read in bulk carry instants in this form, made once from the
 * database's text rather than through a Date each.
 */
export type IsoInstant = string & { readonly isoInstant: unique symbol };

export function isoInstant(date: Date): IsoInstant {
  return date.toISOString() as IsoInstant;
}
