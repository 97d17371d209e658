import { ToolCancel } from '../domain/tool-result.ts';

/** Stable codes of the MCP transport's faults. */
export const McpFault = {
  RefusedHost: 'MCP_REFUSED_HOST',
  RefusedCommand: 'MCP_REFUSED_COMMAND',
  TransportFailure: 'MCP_TRANSPORT_FAILURE',
  HttpStatus: 'MCP_HTTP_STATUS',
  MalformedResponse: 'MCP_MALFORMED_RESPONSE',
  RpcError: 'MCP_RPC_ERROR',
  UnsupportedContentType: 'MCP_UNSUPPORTED_CONTENT_TYPE',
  MissingCredential: 'MCP_MISSING_CREDENTIAL',
  /** A header references a variable not on RUNLEDGER_MCP_HEADER_ENV: it is not read, nothing is sent. */
  HeaderEnvNotAllowed: 'MCP_HEADER_ENV_NOT_ALLOWED',
  DeadlineExhausted: 'MCP_DEADLINE_EXHAUSTED',
  /** The server was alive but answered nothing, not even a ping, while a call waited. */
  ServerUnresponsive: 'MCP_SERVER_UNRESPONSIVE',
  CallCancelled: ToolCancel.RunCancelled,
  /** runledger itself stopped while the call was on the wire: a cut-off, not the server's failure. */
  ServiceStopping: ToolCancel.ServiceStopping,
  /**
   * The server no longer knows the session (HTTP 404 to a request that carried
   * its id, or a 400 that blames the id: restarted, or expired idle): the
   * request was not processed.
   */
  SessionExpired: 'MCP_SESSION_EXPIRED',
} as const;

export type McpFaultCode = (typeof McpFault)[keyof typeof McpFault];

const MAX_REMOTE_TEXT = 200;

/** Text that came from the other side: control characters out, at most 200 characters. */
export function clipRemoteText(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  return clean.length > MAX_REMOTE_TEXT ? `${clean.slice(0, MAX_REMOTE_TEXT - 1)}…` : clean;
}

/**
 * Every fault of the MCP transport. Made only through the named factories;
 * only `forCancelledCall` sets the cancellation flag, and `isCancellation()`
 * is the one place that says what "cancelled" means. No code comparison does.
 */
export class McpTransportError extends Error {
  readonly #cancellation: boolean;

  private constructor(
    readonly code: McpFaultCode,
    message: string,
    cancellation = false,
  ) {
    super(message);
    this.name = 'McpTransportError';
    this.#cancellation = cancellation;
  }

  isCancellation(): boolean {
    return this.#cancellation;
  }

  /** The operator's settings do not let this host be contacted; `reason` says why. */
  static refusedHost(reason: string): McpTransportError {
    return new McpTransportError(McpFault.RefusedHost, `refused host: ${clipRemoteText(reason)}`);
  }

  /** The operator's settings do not let this program be started. */
  static refusedCommand(reason: string): McpTransportError {
    return new McpTransportError(McpFault.RefusedCommand, `refused command: ${clipRemoteText(reason)}`);
  }

  static transportFailure(detail: string): McpTransportError {
    return new McpTransportError(McpFault.TransportFailure, `transport failure: ${clipRemoteText(detail)}`);
  }

  /** The server went away while calls waited: its process exited, or it closed the stream or connection. */
  static serverGone(how: string): McpTransportError {
    return new McpTransportError(McpFault.TransportFailure, `the server ${clipRemoteText(how)}`);
  }

  static serverUnresponsive(waitedMs: number): McpTransportError {
    return new McpTransportError(
      McpFault.ServerUnresponsive,
      `the server stopped answering: no message, not even to a ping, for ${waitedMs} ms`,
    );
  }

  static httpStatus(status: number, body: string): McpTransportError {
    const text = clipRemoteText(body);
    return new McpTransportError(McpFault.HttpStatus, `HTTP ${status}${text ? `: ${text}` : ''}`);
  }

  static malformedResponse(detail: string): McpTransportError {
    return new McpTransportError(McpFault.MalformedResponse, `malformed response: ${clipRemoteText(detail)}`);
  }

  /** A JSON-RPC error answer; the SDK's own `MCP error <code>: ` prefixes are dropped, however many. */
  static rpcError(code: number, message: string): McpTransportError {
    const bare = message.replace(/^(?:MCP error -?\d+: )+/, '');
    return new McpTransportError(McpFault.RpcError, `JSON-RPC error ${code}: ${clipRemoteText(bare)}`);
  }

  static unsupportedContentType(contentType: string): McpTransportError {
    return new McpTransportError(
      McpFault.UnsupportedContentType,
      `the server answered with the unsupported content type ${clipRemoteText(contentType) || '(none)'}`,
    );
  }

  /** The server refused the credential sent (HTTP 401 or 403). */
  static refusedCredential(status: number): McpTransportError {
    return new McpTransportError(
      McpFault.MissingCredential,
      `the server refused the credential (HTTP ${status})`,
    );
  }

  /** No credential, or one the server refused; `detail` says which header, or what the server said. */
  static missingCredential(detail: string): McpTransportError {
    return new McpTransportError(McpFault.MissingCredential, `no credential for ${clipRemoteText(detail)}`);
  }

  /** A header references an environment variable that is not set: named, its value never shown. */
  static unsetCredential(header: string, variable: string): McpTransportError {
    return new McpTransportError(
      McpFault.MissingCredential,
      `no credential for header ${header}: the environment variable ${variable} is not set`,
    );
  }

  /** A header references a variable the operator does not let headers read; `reason` names both. */
  static headerEnvNotAllowed(reason: string): McpTransportError {
    return new McpTransportError(McpFault.HeaderEnvNotAllowed, clipRemoteText(reason));
  }

  static exhaustedDeadline(timeoutMs: number): McpTransportError {
    return new McpTransportError(McpFault.DeadlineExhausted, `no answer within ${timeoutMs} ms`);
  }

  static forCancelledCall(): McpTransportError {
    return new McpTransportError(McpFault.CallCancelled, 'the call was cancelled', true);
  }

  /** The call was cut off because runledger stopped: a cancellation too, not the server's doing. */
  static forStoppingService(): McpTransportError {
    return new McpTransportError(
      McpFault.ServiceStopping,
      'the call was cut off because runledger stopped',
      true,
    );
  }

  /** The server refused the session's id (`status` 404, or 400): it restarted or let the session expire. */
  static sessionExpired(status = 404): McpTransportError {
    return new McpTransportError(
      McpFault.SessionExpired,
      `the server no longer knows the session (HTTP ${status})`,
    );
  }
}
