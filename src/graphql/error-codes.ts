import { type ExecutionResult, GraphQLError } from 'graphql';
import { maskError, type Plugin } from 'graphql-yoga';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { databaseUnavailable, ErrorCode } from './errors.ts';
import { requestTooLarge } from './protection.ts';

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
export function useStableErrorCodes(production: boolean): Plugin {
  return {
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
