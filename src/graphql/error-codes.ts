import { type ExecutionResult, GraphQLError } from 'graphql';
import { maskError, type Plugin } from 'graphql-yoga';
import { ErrorCode } from './errors.ts';

function withCode(error: GraphQLError, code: string): GraphQLError {
  if (error.extensions?.code) return error;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, code },
  });
}

/**
 * Every error a client sees carries a stable `extensions.code`. Variables that
 * cannot be coerced (a string for an Int, Infinity for a Float) fail before any
 * resolver runs and come without a path: they are the client's input.
 */
export function useStableErrorCodes(): Plugin {
  return {
    onExecute: () => ({
      onExecuteDone: ({ result, setResult }) => {
        const single = result as ExecutionResult;
        if (!single.errors?.length || Symbol.asyncIterator in (result as object)) return;
        setResult({
          ...single,
          errors: single.errors.map((error) =>
            error.path ? error : withCode(error, ErrorCode.BadUserInput),
          ),
        });
      },
    }),
  };
}

/** Yoga's masking, with a code on what it masks. */
export const maskUnexpectedError: typeof maskError = (error, message, isDev) => {
  const masked = maskError(error, message, isDev);
  return masked instanceof GraphQLError ? withCode(masked, ErrorCode.Internal) : masked;
};
