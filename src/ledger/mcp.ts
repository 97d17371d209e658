import { InFlightCalls } from '../mcp/in-flight-calls.ts';
import type { McpPolicy } from '../mcp/outbound-policy.ts';
import { callMcpTool } from '../mcp/tool-adapter.ts';

/**
 * What the use cases need of MCP, handed in by the server that owns it: the
 * operator's settings, the calls on the wire in this process, and the adapter
 * that makes one call (a test may pass another).
 */
export interface McpDependencies {
  /** Which hosts and programs are allowed, and the environment children get. */
  policy: McpPolicy;
  /** Tool calls on the wire in this process, by run: a cancel cuts them off. */
  inFlight: InFlightCalls;
  /** Makes one call on the wire and turns the answer into a tool result. */
  callTool: typeof callMcpTool;
}

export function mcpDependencies(policy: McpPolicy, inFlight = new InFlightCalls()): McpDependencies {
  return { policy, inFlight, callTool: callMcpTool };
}
