/**
 * Every environment variable the service reads, in one place: its name, its
 * default and what it sets. The modules that read them take the names and
 * defaults from here, and `npm run docs` prints this table into
 * docs/reference/environment.md, so the list cannot drift from the code.
 */

export interface EnvironmentVariable {
  /** What an unset (or empty) variable means; null: nothing (the feature is off). */
  readonly default: string | number | null;
  /** Which part of the service reads it. */
  readonly topic: 'service' | 'database' | 'http' | 'live' | 'statistics' | 'contract' | 'mcp';
  /** What it sets, and which values it takes. */
  readonly about: string;
}

export const ENVIRONMENT = {
  PORT: { default: 4000, topic: 'service', about: 'The TCP port the service listens on.' },
  HOST: {
    default: '127.0.0.1',
    topic: 'service',
    about: 'The address the service listens on (`0.0.0.0` for every interface).',
  },
  NODE_ENV: {
    default: null,
    topic: 'service',
    about:
      '`production` turns off GraphiQL and error details; `test` turns off the request log. Anything else: development.',
  },
  DATABASE_URL: {
    default: null,
    topic: 'database',
    about: 'A PostgreSQL connection string. Unset: the embedded database (PGlite) in `PGLITE_DATA_DIR`.',
  },
  PGLITE_DATA_DIR: {
    default: '.data/pglite',
    topic: 'database',
    about: 'Where the embedded database keeps its files; `memory://` for a throwaway one.',
  },
  DATABASE_POOL_SIZE: {
    default: 10,
    topic: 'database',
    about: 'Connections to PostgreSQL at most, 1 to 1,000.',
  },
  DATABASE_CONNECT_TIMEOUT_MS: {
    default: 5_000,
    topic: 'database',
    about: 'Opening a connection, and waiting for a free one in the pool (one setting in node-postgres).',
  },
  DATABASE_STATEMENT_TIMEOUT_MS: {
    default: 30_000,
    topic: 'database',
    about: 'A statement, on the server (`statement_timeout`; also bounds lock waits).',
  },
  DATABASE_QUERY_TIMEOUT_MS: {
    default: 35_000,
    topic: 'database',
    about: 'A statement, on the client (a server that hangs without failing).',
  },
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: {
    default: 60_000,
    topic: 'database',
    about: 'A transaction left idle (`idle_in_transaction_session_timeout`).',
  },
  DATABASE_PING_TIMEOUT_MS: {
    default: 1_500,
    topic: 'database',
    about: 'The readiness probe behind `/ready`.',
  },
  HTTP_HEADERS_TIMEOUT_MS: {
    default: 10_000,
    topic: 'http',
    about: 'Time to receive the request line and headers (then 408 `REQUEST_TIMEOUT`).',
  },
  HTTP_REQUEST_TIMEOUT_MS: {
    // 16 MB (the body limit) in 30 s needs about 4.5 Mbit/s.
    default: 30_000,
    topic: 'http',
    about:
      'Time to receive the whole request, body included, not the time to answer it (then 408 `REQUEST_TIMEOUT`).',
  },
  HTTP_KEEP_ALIVE_TIMEOUT_MS: {
    default: 5_000,
    topic: 'http',
    about: 'An idle keep-alive connection is closed after this.',
  },
  HTTP_MAX_CONNECTIONS: {
    default: 500,
    topic: 'http',
    about: 'Connections open at once; one more is closed as soon as it is accepted.',
  },
  HTTP_MAX_HEADER_BYTES: {
    default: 16_384,
    topic: 'http',
    about: 'Bytes of request line and headers (then 431 `HEADERS_TOO_LARGE`).',
  },
  HTTP_MAX_HEADERS: {
    default: 100,
    topic: 'http',
    about: 'Header lines read from one request; the rest are ignored.',
  },
  HTTP_LINGER_MS: {
    default: 2_000,
    topic: 'http',
    about:
      'After an answer that closes a connection mid-request, how long what the client still sends is read and dropped.',
  },
  RUNLEDGER_LIVE_CHANNEL: {
    default: 'postgres',
    topic: 'live',
    about:
      '`postgres` lets instances hear each other (LISTEN/NOTIFY); `memory` keeps live runs and cancels inside one process.',
  },
  RUNLEDGER_STATS_FOLD: {
    default: 'on',
    topic: 'statistics',
    about:
      '`on`: this instance folds the statistics whenever no other does; `off`: left to other instances or `npm run stats:fold` (reads stay exact either way).',
  },
  RUNLEDGER_CORS_ORIGINS: {
    default: '*',
    topic: 'http',
    about:
      'Comma-separated origins (`https://app.example.com`) whose pages may call the API from a browser; `*`: any. Keys travel in the `Authorization` header, never in cookies, so no origin is ever allowed credentials.',
  },
  RUNLEDGER_TRUSTED_DOCUMENTS: {
    default: null,
    topic: 'contract',
    about:
      'A JSON manifest of hash → document: only those operations are answered, except for keys with `manage_keys` (which may also send queries as text).',
  },
  RUNLEDGER_MCP_ALLOWED_HOSTS: {
    default: '*',
    topic: 'mcp',
    about:
      'Comma-separated hosts `callTool` may reach, each with an optional `:port` or `:*` (none: ports 80 and 443; IPv6 with a port in brackets, `[::1]:3000`): `*` (any public host), a name, `*.example.com`, an IP address or a CIDR range (only these open loopback and private addresses). A port not allowed is refused with `MCP_REFUSED_HOST`.',
  },
  RUNLEDGER_MCP_STDIO_COMMANDS: {
    default: null,
    topic: 'mcp',
    about:
      'Comma-separated programs a stdio server may be, each with the leading arguments it must start with. Unset: no stdio server.',
  },
  RUNLEDGER_MCP_STDIO_ENV: {
    default: null,
    topic: 'mcp',
    about:
      "Comma-separated names of the service's variables a stdio server also sees (beyond the SDK's safe set).",
  },
  RUNLEDGER_MCP_HEADER_ENV: {
    default: null,
    topic: 'mcp',
    about:
      "Comma-separated names of the service's variables a Streamable HTTP server's header may reference (`env:NAME`). Unset: none; any other reference is refused (`MCP_HEADER_ENV_NOT_ALLOWED`).",
  },
} as const satisfies Record<string, EnvironmentVariable>;

export type EnvironmentName = keyof typeof ENVIRONMENT;

/** The variable as set, trimmed; undefined when unset or empty (its default applies). */
export function environmentValue(
  name: EnvironmentName,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}
