import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { GuardedFetch } from './guarded-fetch.ts';
import { McpTransportError } from './transport-error.ts';

/** The SDK's wording around a Streamable HTTP error, which says nothing the fault's own message does not. */
const HTTP_ERROR_PREFIX = /^Streamable HTTP error: (?:Error POSTing to endpoint: |Failed to [^:]+: )?/;

/**
 * A JSON-RPC error's words that blame the session id: the reference server's "Bad Request: No valid
 * session ID provided", the SDK's "Session not found" and "Mcp-Session-Id header is required".
 */
const NAMES_THE_SESSION = /\bsession\b/i;
/** The SDK's server with one transport for all clients, restarted: it knows no session at all. */
const KNOWS_NO_SESSION = /\bserver not initiali[sz]ed\b/i;

/** The JSON-RPC error an HTTP error's body holds, if it is one. */
function rpcErrorIn(body: string): { code: number; message: string } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || !('error' in parsed)) return null;
  const { error } = parsed;
  if (typeof error !== 'object' || error === null || !('code' in error) || !('message' in error)) return null;
  const { code, message } = error;
  return typeof code === 'number' && typeof message === 'string' ? { code, message } : null;
}

/**
 * The HTTP status with which a server refused the session id, or null when
 * the error is something else. A 404 is the refusal MCP's Streamable HTTP
 * transport defines; servers in use (the reference server among them) answer
 * 400 instead, so a 400 counts when its JSON-RPC error blames the session,
 * and only then: any other 400 may have been about the request itself. The
 * SDK keeps a non-2xx answer as a StreamableHTTPError: the status as `code`,
 * the body in the message. The caller checks that a session id was sent.
 */
export function sessionRefusalStatus(error: unknown): number | null {
  if (!(error instanceof StreamableHTTPError)) return null;
  if (error.code === 404) return 404;
  if (error.code !== 400) return null;
  const answer = rpcErrorIn(error.message.replace(HTTP_ERROR_PREFIX, ''));
  if (!answer) return null;
  return NAMES_THE_SESSION.test(answer.message) || KNOWS_NO_SESSION.test(answer.message) ? 400 : null;
}

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
