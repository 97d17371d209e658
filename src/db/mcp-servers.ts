import { asc, eq } from 'drizzle-orm';
import { mcpServers } from '../../drizzle/schema.ts';
import { InvalidInputError } from '../domain/errors.ts';
import { checkName } from '../domain/limits.ts';
import {
  checkHeaders,
  LITERAL_CREDENTIAL,
  type McpHeader,
  type McpServerConfig,
  type McpTransportKind,
} from '../domain/mcp-server.ts';
import type { McpPolicy } from '../mcp/outbound-policy.ts';
import { McpFault } from '../mcp/transport-error.ts';
import type { Database } from './connection.ts';

export type McpServerRow = typeof mcpServers.$inferSelect;

export interface McpServerInput {
  identifier: string;
  transport: McpTransportKind;
  url?: string | null;
  command?: string | null;
  args?: readonly string[] | null;
  headers?: readonly McpHeader[] | null;
}

const serverNotFound = (identifier: string) =>
  new InvalidInputError('SERVER_NOT_FOUND', `no MCP server ${identifier}`, 'identifier');

/** The endpoint a registration names: a URL for Streamable HTTP, a command for stdio. */
function checkedEndpoint(input: McpServerInput) {
  checkName(input.identifier, 'identifier', 100);
  if (!/^[\w.-]+$/.test(input.identifier)) {
    throw new InvalidInputError(
      'VALUE_INVALID',
      'identifier may hold letters, digits and . - _ only',
      'identifier',
    );
  }
  const args = [...(input.args ?? [])];
  if (args.length > 50) throw new InvalidInputError('VALUE_TOO_LARGE', 'at most 50 args', 'args');
  args.forEach((arg, i) => {
    checkName(arg, `args.${i}`, 1_000);
  });
  if (input.transport === 'streamable-http') {
    const url = checkName(input.url ?? '', 'url', 2_000);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new InvalidInputError('VALUE_INVALID', 'url is not a URL', 'url');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new InvalidInputError('VALUE_INVALID', 'url must be http or https', 'url');
    }
    if (parsed.username || parsed.password) {
      throw new InvalidInputError(
        LITERAL_CREDENTIAL,
        'url may not hold a user or password: send credentials in headers, as env:NAME references',
        'url',
      );
    }
    if (input.command != null)
      throw new InvalidInputError('VALUE_INVALID', 'a streamable-http server has no command', 'command');
    const headers = checkHeaders(input.headers ?? []);
    return { transport: input.transport, url, command: null, args: [] as string[], headers };
  }
  const command = checkName(input.command ?? '', 'command', 1_000);
  if (input.url != null) throw new InvalidInputError('VALUE_INVALID', 'a stdio server has no url', 'url');
  if (input.headers?.length)
    throw new InvalidInputError('VALUE_INVALID', 'a stdio server has no headers', 'headers');
  return { transport: input.transport, url: null, command, args, headers: [] as McpHeader[] };
}

type Endpoint = ReturnType<typeof checkedEndpoint>;

/**
 * Refuses what the operator's settings refuse: a host (looked up now, every
 * address checked) or a program. Checked again at every call, since settings
 * and DNS answers change.
 */
async function refuseUnlessAllowed(endpoint: Endpoint, policy: McpPolicy): Promise<void> {
  if (endpoint.url !== null) {
    const { refusal } = await policy.resolveHost(new URL(endpoint.url).hostname);
    if (refusal) throw new InvalidInputError(McpFault.RefusedHost, `refused host: ${refusal}`, 'url');
  }
  if (endpoint.command !== null) {
    const refusal = policy.commandRefusal(endpoint.command, endpoint.args);
    if (refusal) throw new InvalidInputError(McpFault.RefusedCommand, refusal, 'command');
  }
}

export async function registerMcpServer(
  db: Database,
  input: McpServerInput,
  policy: McpPolicy,
): Promise<McpServerRow> {
  const endpoint = checkedEndpoint(input);
  await refuseUnlessAllowed(endpoint, policy);
  const [row] = await db
    .insert(mcpServers)
    .values({ identifier: input.identifier, ...endpoint })
    .onConflictDoNothing({ target: mcpServers.identifier })
    .returning();
  if (!row) {
    throw new InvalidInputError(
      'SERVER_ALREADY_REGISTERED',
      `${input.identifier} is already registered`,
      'identifier',
    );
  }
  return row;
}

export async function updateMcpServer(
  db: Database,
  input: McpServerInput,
  policy: McpPolicy,
): Promise<McpServerRow> {
  const endpoint = checkedEndpoint(input);
  await refuseUnlessAllowed(endpoint, policy);
  const [row] = await db
    .update(mcpServers)
    .set(endpoint)
    .where(eq(mcpServers.identifier, input.identifier))
    .returning();
  if (!row) throw serverNotFound(input.identifier);
  return row;
}

export async function removeMcpServer(db: Database, identifier: string): Promise<McpServerRow> {
  checkName(identifier, 'identifier', 100);
  const [row] = await db.delete(mcpServers).where(eq(mcpServers.identifier, identifier)).returning();
  if (!row) throw serverNotFound(identifier);
  return row;
}

export function listMcpServers(db: Database): Promise<McpServerRow[]> {
  return db.select().from(mcpServers).orderBy(asc(mcpServers.identifier));
}

export async function findMcpServer(db: Database, identifier: string): Promise<McpServerConfig> {
  const [row] = await db.select().from(mcpServers).where(eq(mcpServers.identifier, identifier));
  if (!row) throw serverNotFound(identifier);
  return {
    identifier: row.identifier,
    transport: row.transport as McpTransportKind,
    url: row.url,
    command: row.command,
    args: row.args,
    headers: row.headers,
  };
}

export async function recordContact(db: Database, identifier: string, latencyMs: number): Promise<void> {
  await db
    .update(mcpServers)
    .set({ lastContactAt: new Date(), lastLatencyMs: latencyMs })
    .where(eq(mcpServers.identifier, identifier));
}
