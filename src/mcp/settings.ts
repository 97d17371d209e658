import { type EnvironmentName, environmentValue } from '../environment.ts';

/**
 * What the operator allows MCP servers to be: which hosts runledger may call,
 * which programs it may start, and what of its own environment those
 * programs see. Read from the environment at start; injectable for tests.
 */
export interface McpSettings {
  /**
   * Entries of the outbound allow-list: `*` (any public host), a host name,
   * `*.example.com` (its subdomains), an IP address or a CIDR range. Only an
   * address or range entry opens loopback and private addresses.
   */
  readonly allowedHosts: readonly string[];
  /** Each entry: a program and the leading arguments it must be started with (none: any). */
  readonly stdioCommands: readonly (readonly string[])[];
  /** Names of the service's environment variables passed on to stdio servers, beyond the SDK's safe set. */
  readonly stdioEnv: readonly string[];
}

export const McpSetting = {
  AllowedHosts: 'RUNLEDGER_MCP_ALLOWED_HOSTS',
  StdioCommands: 'RUNLEDGER_MCP_STDIO_COMMANDS',
  StdioEnv: 'RUNLEDGER_MCP_STDIO_ENV',
} as const satisfies Record<string, EnvironmentName>;

/** Public hosts only, no stdio program, no extra environment. */
export const DEFAULT_MCP_SETTINGS: McpSettings = Object.freeze({
  allowedHosts: Object.freeze(['*']),
  stdioCommands: Object.freeze([]),
  stdioEnv: Object.freeze([]),
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
  };
}
