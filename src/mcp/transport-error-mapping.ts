import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { GuardedFetch } from './guarded-fetch.ts';
import { McpTransportError } from './transport-error.ts';

/** The SDK's wording around a Streamable HTTP error, which says nothing the fault's own message does not. */
const HTTP_ERROR_PREFIX = /^Streamable HTTP error: (?:Error POSTing to endpoint: |Failed to [^:]+: )?/;

/**
 * What an error of the SDK or the network means, as one transport fault.
 * Cancel and deadline are not decided here: the caller knows which of its
 * own signals fired. `what`: the request that waited, for the SDK's timeout.
 */
export function asTransportError(
  error: unknown,
  guard: GuardedFetch | null,
  what: string,
): McpTransportError {
  if (error instanceof McpTransportError) return error;
  if (guard?.refusal) return guard.refusal;
  if (error instanceof StreamableHTTPError) {
    const detail = error.message.replace(HTTP_ERROR_PREFIX, '');
    if (error.code === 401 || error.code === 403) return McpTransportError.refusedCredential(error.code);
    if (error.code === -1 && detail.startsWith('Unexpected content type: ')) {
      return McpTransportError.unsupportedContentType(detail.slice('Unexpected content type: '.length));
    }
    return error.code !== undefined && error.code > 0
      ? McpTransportError.httpStatus(error.code, detail)
      : McpTransportError.transportFailure(detail);
  }
  if (error instanceof McpError) {
    if (error.code === ErrorCode.ConnectionClosed)
      return McpTransportError.serverGone('closed the connection');
    if (error.code === ErrorCode.RequestTimeout)
      return McpTransportError.transportFailure(`no answer to ${what}`);
    return McpTransportError.rpcError(error.code, error.message);
  }
  // A connection the server dropped before its answer began ("socket hang up").
  if (error instanceof Error && (error as NodeJS.ErrnoException).code === 'ECONNRESET') {
    return McpTransportError.serverGone('closed the connection before it answered');
  }
  if (error instanceof SyntaxError) return McpTransportError.malformedResponse(error.message);
  if (error instanceof Error && error.name === 'ZodError') {
    return McpTransportError.malformedResponse('the answer does not have the shape MCP gives it');
  }
  return McpTransportError.transportFailure(error instanceof Error ? error.message : String(error));
}
