import { type EnvironmentName, environmentValue } from '../environment.ts';

/**
 * What the operator allows MCP servers to be: which hosts and ports runledger
 * may call, with which of its variables in headers, which programs it may
 * start, and what of its own environment those programs see. Read from the
 * environment at start; injectable for tests.
 */
export interface McpSettings {
  /**
   * Entries of the outbound allow-list, each a host and an optional port: `*`
   * (any public host), a host name, `*.example.com` (its subdomains), an IP
   * address or a CIDR range; then `:443` (that port), `:*` (every port) or
   * nothing (ports 80 and 443). IPv6 with a port in brackets: `[::1]:3000`,
   * `[fd00::/8]:443`. Only an address or range entry opens loopback and
   * private addresses.
   */
  readonly allowedHosts: readonly string[];
  /** Each entry: a program and the leading arguments it must be started with (none: any). */
  readonly stdioCommands: readonly (readonly string[])[];
  /** Names of the service's environment variables passed on to stdio servers, beyond the SDK's safe set. */
  readonly stdioEnv: readonly string[];
  /**
   * Names of the service's environment variables a header may reference
   * (`env:NAME`); absent or empty: none, so no header may reference any.
   */
  readonly headerEnv?: readonly string[];
}

export const McpSetting = {
  AllowedHosts: 'RUNLEDGER_MCP_ALLOWED_HOSTS',
  StdioCommands: 'RUNLEDGER_MCP_STDIO_COMMANDS',
  StdioEnv: 'RUNLEDGER_MCP_STDIO_ENV',
  HeaderEnv: 'RUNLEDGER_MCP_HEADER_ENV',
} as const satisfies Record<string, EnvironmentName>;

/** Public hosts on ports 80 and 443 only, no stdio program, no variable to a server. */
export const DEFAULT_MCP_SETTINGS: McpSettings = Object.freeze({
  allowedHosts: Object.freeze(['*']),
  stdioCommands: Object.freeze([]),
  stdioEnv: Object.freeze([]),
  headerEnv: Object.freeze([]),
});

const list = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');

/**
 * The settings as the environment states them: comma-separated lists; in
 * RUNLEDGER_MCP_STDIO_COMMANDS each entry is a program and its leading
 * arguments separated by spaces. Unset or empty: the default.
 */
export function mcpSettingsFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): McpSettings {
  const hosts = list(environmentValue(McpSetting.AllowedHosts, env));
  return {
    allowedHosts: hosts.length > 0 ? hosts : DEFAULT_MCP_SETTINGS.allowedHosts,
    stdioCommands: list(environmentValue(McpSetting.StdioCommands, env)).map((entry) => entry.split(/\s+/)),
    stdioEnv: list(environmentValue(McpSetting.StdioEnv, env)),
    headerEnv: list(environmentValue(McpSetting.HeaderEnv, env)),
  };
}
