import { GraphQLError } from 'graphql';

/** Stable `extensions.code` values clients can match on. */
export const ErrorCode = {
  BadUserInput: 'BAD_USER_INPUT',
  Internal: 'INTERNAL_SERVER_ERROR',
  Unauthenticated: 'UNAUTHENTICATED',
  Forbidden: 'FORBIDDEN',
  DatabaseUnavailable: 'DATABASE_UNAVAILABLE',
  /** HTTP refusals, before GraphQL reads the request. */
  BadRequest: 'BAD_REQUEST',
  RequestTooLarge: 'REQUEST_TOO_LARGE',
  RequestTimeout: 'REQUEST_TIMEOUT',
  HeadersTooLarge: 'HEADERS_TOO_LARGE',
} as const;

/** What a client is told to wait before retrying while the database cannot be reached. */
export const RETRY_AFTER_SECONDS = 5;

/** HTTP 503 with Retry-After: the request was fine, the database did not answer. */
export function databaseUnavailable(): GraphQLError {
  return new GraphQLError('the database is unavailable; retry later', {
    extensions: {
      code: ErrorCode.DatabaseUnavailable,
      http: { status: 503, headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } },
    },
  });
}

export function badUserInput(message: string, field?: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: { code: ErrorCode.BadUserInput, ...(field ? { field } : {}) },
  });
}
