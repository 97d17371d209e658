import { type ExecutionResult, GraphQLError } from 'graphql';
import { maskError, type Plugin } from 'graphql-yoga';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { DomainError, ForbiddenError, InvalidInputError, KeyNotActiveError } from '../domain/errors.ts';
import { RequestLimits } from '../domain/limits.ts';

/**
 * Every error a client sees, in one place: the stable codes, the refusals of
 * this layer, and how every other error (a domain refusal, a protection's
 * refusal, an unexpected fault) gets its code on the way out.
 */

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
  QueryTooLarge: 'QUERY_TOO_LARGE',
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

/** The one answer to a body over the limit, whatever its framing (Content-Length or chunked). */
export const requestTooLarge = {
  status: 413,
  code: ErrorCode.RequestTooLarge,
  message: `the request body is over ${RequestLimits.maxBodyBytes} bytes`,
} as const;

export function badUserInput(message: string, field?: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: { code: ErrorCode.BadUserInput, ...(field ? { field } : {}) },
  });
}

/** A cursor handed back to a list with another filter or order than the one that made it. */
export const CURSOR_FILTER_MISMATCH = 'CURSOR_FILTER_MISMATCH';

export function cursorFilterMismatch(): GraphQLError {
  return new GraphQLError('after is a cursor of this list under another filter; start again without it', {
    extensions: { code: ErrorCode.BadUserInput, field: 'after', reason: CURSOR_FILTER_MISMATCH },
  });
}

function rebuilt(error: GraphQLError, message: string, extensions: GraphQLError['extensions']): GraphQLError {
  return new GraphQLError(message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions,
  });
}

function withCode(error: GraphQLError, code: string): GraphQLError {
  return rebuilt(error, error.message, { ...error.extensions, code });
}

/** The protections' refusals, told apart by their messages, each with its own code. */
const LIMIT_CODES: Array<[RegExp, string]> = [
  [/Query depth limit of/, 'QUERY_TOO_DEEP'],
  [/Query Cost limit of/, 'QUERY_TOO_COSTLY'],
  [/Aliases limit of/, 'TOO_MANY_ALIASES'],
  [/Token limit of/, 'QUERY_TOO_LARGE'],
  [/Directives limit of/, 'TOO_MANY_DIRECTIVES'],
];

/** Yoga's own refusals that have a name of ours: one answer, whichever layer refused. */
const RENAMED: Record<string, { code: string; message: string }> = {
  REQUEST_ENTITY_TOO_LARGE: requestTooLarge,
};

function stableCode(error: GraphQLError): GraphQLError {
  for (const [pattern, code] of LIMIT_CODES) if (pattern.test(error.message)) return withCode(error, code);
  const renamed = RENAMED[String(error.extensions?.code)];
  if (renamed) return rebuilt(error, renamed.message, { ...error.extensions, code: renamed.code });
  if (error.extensions?.code) return error;
  // Without a path the error came before any resolver ran: variables that could
  // not be coerced (a string for an Int, Infinity for a Float) are the client's input.
  return error.path ? withCode(error, ErrorCode.Internal) : withCode(error, ErrorCode.BadUserInput);
}

/** Extensions that carry internals (the original error, a stack): never sent, in any mode. */
const INTERNAL_EXTENSIONS = new Set(['originalError', 'stack', 'stacktrace', 'exception']);

/** graphql-js's hints name fields, arguments, types and enum values the client did not ask about. */
const SUGGESTION = /\s*Did you mean [^?]*\?/g;

/** What a client may see of an error: a stable code, no internals, no suggestions in production. */
function publicError(error: GraphQLError, production: boolean): GraphQLError {
  const coded = stableCode(error);
  const extensions = Object.fromEntries(
    Object.entries(coded.extensions).filter(([key]) => !INTERNAL_EXTENSIONS.has(key)),
  );
  const stripped = Object.keys(extensions).length < Object.keys(coded.extensions).length;
  const http = extensions.http;
  if (stripped && typeof http === 'object' && http !== null && 'spec' in http) {
    // Yoga keeps a body that is not JSON at 400 only while it sees the parser's error; say 400 outright.
    extensions.http = { ...http, spec: false };
  }
  const message = production ? coded.message.replace(SUGGESTION, '') : coded.message;
  return message === coded.message && !stripped ? coded : rebuilt(coded, message, extensions);
}

function isExecutionResult(value: unknown): value is ExecutionResult {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(Symbol.asyncIterator in value)
  );
}

/** Every error a client sees carries a stable `extensions.code` and nothing internal. */
/**
 * A domain refusal that reached the top (a query's, or one a mutation's union
 * does not list), as a GraphQL error that keeps its `code`, and its `field`
 * or `permission` when it names one.
 */
function fromDomainError(error: GraphQLError): GraphQLError {
  const domain = error.originalError;
  if (!(domain instanceof DomainError)) return error;
  const named =
    domain instanceof InvalidInputError && domain.field !== null
      ? { field: domain.field }
      : domain instanceof ForbiddenError
        ? { permission: domain.permission }
        : domain instanceof KeyNotActiveError
          ? { http: { status: 401, headers: { 'www-authenticate': 'Bearer' } } }
          : {};
  // Without the original error: this is the client's refusal, for yoga neither to mask nor to log.
  return new GraphQLError(domain.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    extensions: { code: domain.code, ...named },
  });
}

export function useStableErrorCodes(production: boolean): Plugin {
  return {
    // A subscription's refusals come before its first event (RUN_NOT_FOUND, a limit): the same codes.
    onSubscribe: () => ({
      onSubscribeResult: ({ result, setResult }) => {
        if (!isExecutionResult(result)) {
          // And within each event: a private field denied is FORBIDDEN there as in a query.
          return {
            onNext: ({ result: event, setResult: setEvent }) => {
              if (!event.errors?.length) return;
              setEvent({
                ...event,
                errors: event.errors.map((error) => fromDomainError(error as GraphQLError)),
              });
            },
          };
        }
        if (!result.errors?.length) return;
        setResult({
          ...result,
          errors: result.errors.map((error) => fromDomainError(error as GraphQLError)),
        });
      },
    }),
    // Runs before yoga's masking (user plugins come first): domain refusals are answered, not masked.
    onExecute: () => ({
      onExecuteDone: ({ result, setResult }) => {
        if (!isExecutionResult(result) || !result.errors?.length) return;
        setResult({
          ...result,
          errors: result.errors.map((error) => fromDomainError(error as GraphQLError)),
        });
      },
    }),
    onResultProcess: ({ result, setResult }) => {
      if (!isExecutionResult(result) || !result.errors?.length) return;
      setResult({
        ...result,
        errors: result.errors.map((error) => publicError(error as GraphQLError, production)),
      });
    },
  };
}

/** Yoga's masking, with a code on what it masks. */
export const maskUnexpectedError: typeof maskError = (error, message) => {
  if (isDatabaseUnavailable(error)) return databaseUnavailable();
  // Never in "development" mode: that mode would put the original error and its stack in the answer.
  const masked = maskError(error, message, false);
  // Only what was actually masked is internal; a client's GraphQLError passes through as it is.
  return masked !== error && masked instanceof GraphQLError && !masked.extensions?.code
    ? withCode(masked, ErrorCode.Internal)
    : masked;
};
