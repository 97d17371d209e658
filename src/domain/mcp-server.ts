import { InvalidInputError } from './errors.ts';
import { checkName, checkOneOf, checkText, Limits } from './limits.ts';

/** How runledger reaches an MCP server. */
export const MCP_TRANSPORTS = ['streamable-http', 'stdio'] as const;
export type McpTransportKind = (typeof MCP_TRANSPORTS)[number];

/** A header sent to a Streamable HTTP server; its value is a reference, never the secret. */
export interface McpHeader {
  name: string;
  /** `env:NAME`, or an auth scheme and `env:NAME` (`Bearer env:GITHUB_TOKEN`). */
  value: string;
}

export interface McpServerConfig {
  identifier: string;
  transport: McpTransportKind;
  /** For streamable-http. */
  url: string | null;
  /** For stdio: the program and its arguments. */
  command: string | null;
  args: readonly string[];
  /** For streamable-http. */
  headers: readonly McpHeader[];
}

const ENV_NAME_PATTERN = '[A-Za-z_][A-Za-z0-9_]{0,127}';

/** The name of an environment variable. */
export const ENV_NAME = new RegExp(`^${ENV_NAME_PATTERN}$`);

/** A header value: an optional auth scheme, then a reference to the operator's environment. */
const CREDENTIAL_REFERENCE = new RegExp(`^(?:(Bearer|Basic|Token) )?env:(${ENV_NAME_PATTERN})$`, 'i');

/** Headers the transport itself sets; a registration may not replace them. */
const TRANSPORT_HEADERS: ReadonlySet<string> = new Set([
  'accept',
  'connection',
  'content-length',
  'content-type',
  'host',
  'last-event-id',
  'mcp-protocol-version',
  'mcp-session-id',
  'transfer-encoding',
]);

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

/** The stable code of a secret given literally where a reference belongs. */
export const LITERAL_CREDENTIAL = 'MCP_LITERAL_CREDENTIAL';

/** A header value's parts: the scheme (or none) and the variable it names; null when it is not a reference. */
export function parseCredentialReference(value: string): { scheme: string | null; variable: string } | null {
  const match = CREDENTIAL_REFERENCE.exec(value);
  if (!match?.[2]) return null;
  return { scheme: match[1] ?? null, variable: match[2] };
}

/** Headers as a registration may give them: known names, each once, each value a reference. */
export function checkHeaders(headers: readonly McpHeader[]): McpHeader[] {
  if (headers.length > Limits.maxServerHeaders) {
    throw new InvalidInputError('VALUE_TOO_LARGE', `at most ${Limits.maxServerHeaders} headers`, 'headers');
  }
  const seen = new Set<string>();
  return headers.map(({ name, value }, i) => {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name) || TRANSPORT_HEADERS.has(lower) || seen.has(lower)) {
      throw new InvalidInputError(
        'VALUE_INVALID',
        `header ${JSON.stringify(name.slice(0, 100))} is not a header name runledger may set, or comes twice`,
        `headers.${i}.name`,
      );
    }
    seen.add(lower);
    if (!parseCredentialReference(value)) {
      throw new InvalidInputError(
        LITERAL_CREDENTIAL,
        `header ${name}: give the value as a reference to the service's environment (env:NAME or Bearer env:NAME), not the value itself`,
        `headers.${i}.value`,
      );
    }
    return { name, value };
  });
}

/** The one rule of which URLs an MCP server is reached at: http and https, at registration and at every request. */
export function isWebUrl(url: URL): boolean {
  return url.protocol === 'http:' || url.protocol === 'https:';
}

/** A Streamable HTTP endpoint: an http or https URL with no user or password in it. */
export function checkServerUrl(value: string, field: string): string {
  const url = checkText(value, field, Limits.maxServerUrlLength);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError('VALUE_INVALID', `${field} is not a URL`, field);
  }
  if (!isWebUrl(parsed))
    throw new InvalidInputError('VALUE_INVALID', `${field} must be http or https`, field);
  if (parsed.username || parsed.password) {
    throw new InvalidInputError(
      LITERAL_CREDENTIAL,
      `${field} may not hold a user or password: send credentials in headers, as env:NAME references`,
      field,
    );
  }
  return url;
}

/** A server as a registration names it, before the operator's settings are asked. */
export interface McpServerInput {
  identifier: string;
  transport: McpTransportKind;
  url?: string | null;
  command?: string | null;
  args?: readonly string[] | null;
  headers?: readonly McpHeader[] | null;
}

/** The identifier servers are registered and called under: letters, digits and . - _ only. */
export function checkServerIdentifier(identifier: string, field = 'identifier'): string {
  checkName(identifier, field, Limits.shortNameLength);
  if (!/^[\w.-]+$/.test(identifier)) {
    throw new InvalidInputError('VALUE_INVALID', `${field} may hold letters, digits and . - _ only`, field);
  }
  return identifier;
}

/** The endpoint a registration names: a URL for Streamable HTTP, a command for stdio. */
export function checkServerEndpoint(input: McpServerInput): Omit<McpServerConfig, 'identifier'> {
  checkServerIdentifier(input.identifier);
  checkOneOf(input.transport, MCP_TRANSPORTS, 'transport');
  const args = [...(input.args ?? [])];
  if (args.length > Limits.maxServerArgs) {
    throw new InvalidInputError('VALUE_TOO_LARGE', `at most ${Limits.maxServerArgs} args`, 'args');
  }
  args.forEach((arg, i) => {
    checkText(arg, `args.${i}`, Limits.maxServerArgLength);
  });
  if (input.transport === 'streamable-http') {
    const url = checkServerUrl(input.url ?? '', 'url');
    if (input.command != null)
      throw new InvalidInputError('VALUE_INVALID', 'a streamable-http server has no command', 'command');
    const headers = checkHeaders(input.headers ?? []);
    return { transport: input.transport, url, command: null, args: [], headers };
  }
  const command = checkText(input.command ?? '', 'command', Limits.maxServerArgLength);
  if (input.url != null) throw new InvalidInputError('VALUE_INVALID', 'a stdio server has no url', 'url');
  if (input.headers?.length)
    throw new InvalidInputError('VALUE_INVALID', 'a stdio server has no headers', 'headers');
  return { transport: input.transport, url: null, command, args, headers: [] };
}
