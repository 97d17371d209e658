import { GraphQLError } from 'graphql';

/** Stable `extensions.code` values clients can match on. */
export const ErrorCode = {
  BadUserInput: 'BAD_USER_INPUT',
  Internal: 'INTERNAL_SERVER_ERROR',
  Unauthenticated: 'UNAUTHENTICATED',
  Forbidden: 'FORBIDDEN',
  /** HTTP refusals, before GraphQL reads the request. */
  BadRequest: 'BAD_REQUEST',
  RequestTooLarge: 'REQUEST_TOO_LARGE',
  RequestTimeout: 'REQUEST_TIMEOUT',
  HeadersTooLarge: 'HEADERS_TOO_LARGE',
} as const;

export function badUserInput(message: string, field?: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: { code: ErrorCode.BadUserInput, ...(field ? { field } : {}) },
  });
}
