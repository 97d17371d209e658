import type { McpServerConfig } from '../domain/mcp-server.ts';
import { InFlightCalls } from '../mcp/in-flight-calls.ts';
import type { McpPolicy } from '../mcp/outbound-policy.ts';
import type { McpSessions } from '../mcp/sessions.ts';
import { type CallOptions, callOnSession, type ToolCallAttempt } from '../mcp/tool-adapter.ts';

/**
 * What the use cases need of MCP, handed in by the server that owns it: the
 * operator's settings, the calls on the wire in this process, and the
 * sessions the calls run on (one per registered server, kept open).
 */
export interface McpDependencies {
  /** Which hosts and programs are allowed, and the environment children get. */
  policy: McpPolicy;
  /** Tool calls on the wire in this process, by run: a cancel cuts them off. */
  inFlight: InFlightCalls;
  /** The sessions of this process; a changed or removed server's session is retired. */
  sessions: McpSessions;
  /** Makes one call on the server's session and turns the answer into a tool result. */
  callTool(
    server: McpServerConfig,
    tool: string,
    args: Record<string, unknown>,
    options: CallOptions,
  ): Promise<ToolCallAttempt>;
}

export function mcpDependencies(sessions: McpSessions, inFlight = new InFlightCalls()): McpDependencies {
  return {
    policy: sessions.policy,
    inFlight,
    sessions,
    callTool: (server, tool, args, options) => callOnSession(sessions, server, tool, args, options),
  };
}
