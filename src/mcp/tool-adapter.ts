import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { type McpServerConfig, parseCredentialReference } from '../domain/mcp-server.ts';
import type { JsonValue, ToolArtifact } from '../domain/tool-result.ts';
import { ToolResult } from '../domain/tool-result.ts';
import { GuardedFetch } from './guarded-fetch.ts';
import type { McpPolicy } from './outbound-policy.ts';
import { type McpFaultCode, McpTransportError } from './transport-error.ts';

/** How long a cut-off call's connection stays open for its cancellation to reach the server. */
const CANCEL_GRACE_MS = 1_000;

/** What became of one attempt at a call: the result, whether the server answered, how long it took. */
export interface ToolCallAttempt {
  result: ToolResult;
  /** True when the server answered at all (an isError answer included). */
  answered: boolean;
  latencyMs: number;
  /** The stable code of the fault when the call did not come back ok or isError; null otherwise. */
  fault: McpFaultCode | null;
}

/** The value of each header, read from the environment now: a reference, never a stored secret. */
function resolvedHeaders(server: McpServerConfig): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { name, value } of server.headers) {
    const reference = parseCredentialReference(value);
    if (!reference) throw McpTransportError.missingCredential(`header ${name}`);
    const secret = process.env[reference.variable];
    if (!secret) throw McpTransportError.unsetCredential(name, reference.variable);
    headers[name] = reference.scheme ? `${reference.scheme} ${secret}` : secret;
  }
  return headers;
}

/** The transport, if the operator's settings allow this server: checked at every call, not only at registration. */
function transportFor(server: McpServerConfig, policy: McpPolicy, guard: GuardedFetch): Transport {
  if (server.transport === 'stdio') {
    if (!server.command) throw McpTransportError.transportFailure(`${server.identifier} has no command`);
    const refusal = policy.commandRefusal(server.command, server.args);
    if (refusal) throw McpTransportError.refusedCommand(refusal);
    return new StdioClientTransport({
      command: server.command,
      args: [...server.args],
      env: policy.childEnvironment(),
      stderr: 'ignore',
    });
  }
  return new StreamableHTTPClientTransport(new URL(server.url ?? ''), {
    fetch: guard.fetch,
    requestInit: { headers: resolvedHeaders(server) },
  });
}

/** What went wrong, as one transport error. Which signal fired decides cancel against deadline. */
function asTransportError(
  error: unknown,
  cancel: AbortSignal,
  deadline: AbortSignal,
  timeoutMs: number,
  guard: GuardedFetch,
) {
  if (error instanceof McpTransportError) return error;
  if (guard.refusal) return guard.refusal;
  if (cancel.aborted) return McpTransportError.forCancelledCall();
  if (deadline.aborted) return McpTransportError.exhaustedDeadline(timeoutMs);
  if (error instanceof StreamableHTTPError) {
    if (error.code === 401 || error.code === 403) return McpTransportError.missingCredential(error.message);
    if (error.code === 415) return McpTransportError.unsupportedContentType(error.message);
    return error.code
      ? McpTransportError.httpStatus(error.code, error.message)
      : McpTransportError.transportFailure(error.message);
  }
  if (error instanceof McpError) {
    if (error.code === -32001) return McpTransportError.exhaustedDeadline(timeoutMs);
    return McpTransportError.rpcError(error.code, error.message);
  }
  if (error instanceof SyntaxError) return McpTransportError.malformedResponse(error.message);
  return McpTransportError.transportFailure(error instanceof Error ? error.message : String(error));
}

interface CallAnswer {
  isError?: boolean;
  content?: Array<{ type: string; text?: string; [key: string]: unknown }>;
  structuredContent?: Record<string, unknown>;
}

/** A server's answer as a tool result: isError is failed; text is the content; anything else an artifact. */
function fromAnswer(answer: CallAnswer): ToolResult {
  const parts = answer.content ?? [];
  const text = parts
    .filter((part) => part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text)
    .join('\n');
  if (answer.isError) return ToolResult.failed(text);
  const artifacts: ToolArtifact[] = parts
    .filter((part) => part.type !== 'text')
    .map((part) => ({ title: part.type, type: 'json', content: part as unknown as JsonValue }));
  if (answer.structuredContent) {
    artifacts.push({
      title: 'structuredContent',
      type: 'json',
      content: answer.structuredContent as JsonValue,
    });
  }
  return ToolResult.ok(text, artifacts);
}

/**
 * Calls one tool once: never retried, since a call that was cut off may
 * already have acted on the other side, and nothing here can know. A cancel
 * (the signal) is a cancelled result; the deadline and every other fault a
 * failed one.
 */
export async function callMcpTool(
  server: McpServerConfig,
  tool: string,
  args: Record<string, unknown>,
  options: { signal: AbortSignal; timeoutMs: number; policy: McpPolicy },
): Promise<ToolCallAttempt> {
  const started = performance.now();
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, deadline]);
  const client = new Client({ name: 'runledger', version: '0.1.0' });
  const guard = new GuardedFetch(options.policy);
  let answered = false;
  try {
    if (signal.aborted) throw McpTransportError.forCancelledCall();
    const transport = transportFor(server, options.policy, guard);
    const aborted = new Promise<never>((_, reject) => {
      signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    });
    // The deadline may fire after the call is done; nobody waits on it then.
    aborted.catch(() => {});
    await Promise.race([client.connect(transport), aborted]);
    const answer = (await client.callTool({ name: tool, arguments: args }, undefined, {
      signal,
      timeout: options.timeoutMs,
    })) as CallAnswer;
    answered = true;
    return {
      result: fromAnswer(answer),
      answered,
      latencyMs: Math.round(performance.now() - started),
      fault: null,
    };
  } catch (error) {
    const fault = asTransportError(error, options.signal, deadline, options.timeoutMs, guard);
    const result = fault.isCancellation()
      ? ToolResult.cancelled(fault.message)
      : ToolResult.failed(fault.message);
    return { result, answered, latencyMs: Math.round(performance.now() - started), fault: fault.code };
  } finally {
    if (options.signal.aborted) {
      // The SDK sends MCP's notifications/cancelled as the call is aborted; closing at once could cut
      // that message off too. Close a moment later, without holding up the caller.
      setTimeout(() => void client.close().catch(() => {}), CANCEL_GRACE_MS).unref();
    } else {
      await client.close().catch(() => {});
    }
  }
}
