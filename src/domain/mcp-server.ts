import { InvalidInputError } from './errors.ts';

/** How runledger reaches an MCP server. */
export type McpTransportKind = 'streamable-http' | 'stdio';

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

export const MAX_HEADERS = 20;

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
  if (headers.length > MAX_HEADERS) {
    throw new InvalidInputError('VALUE_TOO_LARGE', `at most ${MAX_HEADERS} headers`, 'headers');
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
