import { type ExecutionResult, GraphQLError } from 'graphql';
import { maskError, type Plugin } from 'graphql-yoga';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { databaseUnavailable, ErrorCode } from './errors.ts';

function withCode(error: GraphQLError, code: string): GraphQLError {
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, code },
  });
}

/** The protections' refusals, told apart by their messages, each with its own code. */
const LIMIT_CODES: Array<[RegExp, string]> = [
  [/Query depth limit of/, 'QUERY_TOO_DEEP'],
  [/Query Cost limit of/, 'QUERY_TOO_COSTLY'],
  [/Aliases limit of/, 'TOO_MANY_ALIASES'],
  [/Token limit of/, 'QUERY_TOO_LARGE'],
  [/Directives limit of/, 'TOO_MANY_DIRECTIVES'],
];

function stableCode(error: GraphQLError): GraphQLError {
  for (const [pattern, code] of LIMIT_CODES) if (pattern.test(error.message)) return withCode(error, code);
  if (error.extensions?.code) return error;
  // Without a path the error came before any resolver ran: variables that could
  // not be coerced (a string for an Int, Infinity for a Float) are the client's input.
  return error.path ? withCode(error, ErrorCode.Internal) : withCode(error, ErrorCode.BadUserInput);
}

function isExecutionResult(value: unknown): value is ExecutionResult {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(Symbol.asyncIterator in value)
  );
}

/** Every error a client sees carries a stable `extensions.code`. */
export function useStableErrorCodes(): Plugin {
  return {
    onResultProcess: ({ result, setResult }) => {
      if (!isExecutionResult(result) || !result.errors?.length) return;
      setResult({ ...result, errors: result.errors.map((error) => stableCode(error as GraphQLError)) });
    },
  };
}

/** Yoga's masking, with a code on what it masks. */
export const maskUnexpectedError: typeof maskError = (error, message, isDev) => {
  if (isDatabaseUnavailable(error)) return databaseUnavailable();
  const masked = maskError(error, message, isDev);
  // Only what was actually masked is internal; a client's GraphQLError passes through as it is.
  return masked !== error && masked instanceof GraphQLError && !masked.extensions?.code
    ? withCode(masked, ErrorCode.Internal)
    : masked;
};
