/** How runledger reaches an MCP server. */
export type McpTransportKind = 'streamable-http' | 'stdio';

export interface McpServerConfig {
  identifier: string;
  transport: McpTransportKind;
  /** For streamable-http. */
  url: string | null;
  /** For stdio: the program and its arguments. */
  command: string | null;
  args: readonly string[];
}
