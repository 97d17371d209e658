import { Kind } from 'graphql';
import { parseDateTime } from '../../domain/date-time.ts';
import { builder } from '../builder.ts';
import { badUserInput } from '../errors.ts';

function parseDate(value: unknown): Date {
  const date = parseDateTime(value);
  if (date) return date;
  throw badUserInput(
    'DateTime must be an ISO 8601 date-time with an offset from 1970-01-01 to 9999-12-31, e.g. 2026-12-01T09:30:00Z',
  );
}

builder.scalarType('DateTime', {
  description:
    'An instant, as an ISO 8601 string in UTC (e.g. 2026-12-01T09:30:00.000Z). Input takes any offset; the date must exist and lie from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z.',
  serialize: (value) => (typeof value === 'string' ? value : value.toISOString()),
  parseValue: parseDate,
  parseLiteral: (ast) => parseDate(ast.kind === Kind.STRING ? ast.value : null),
});

function parseSafeInt(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  throw badUserInput('SafeInt must be an integer from -(2^53 - 1) to 2^53 - 1');
}

builder.scalarType('SafeInt', {
  description:
    'An integer from -(2^53 - 1) to 2^53 - 1 (9,007,199,254,740,991), serialised as a JSON number, which every JSON and JavaScript client reads exactly. For counters that can pass the 32-bit range of Int: token totals and tool call counts.',
  serialize: (value) => {
    // An unsafe integer would reach clients rounded: better an error than a wrong count.
    if (!Number.isSafeInteger(value)) throw new Error(`${String(value)} is not a safe integer`);
    return value;
  },
  parseValue: parseSafeInt,
  parseLiteral: (ast) => parseSafeInt(ast.kind === Kind.INT ? Number(ast.value) : null),
});
