import { Kind } from 'graphql';
import { builder } from '../builder.ts';
import { badUserInput } from '../errors.ts';

function parseDate(value: unknown): Date {
  if (
    typeof value === 'string' &&
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value)
  ) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw badUserInput('DateTime must be an ISO 8601 date-time with an offset, e.g. 2026-12-01T09:30:00Z');
}

builder.scalarType('DateTime', {
  description: 'An instant, as an ISO 8601 string in UTC (e.g. 2026-12-01T09:30:00.000Z).',
  serialize: (value) => value.toISOString(),
  parseValue: parseDate,
  parseLiteral: (ast) => parseDate(ast.kind === Kind.STRING ? ast.value : null),
});
