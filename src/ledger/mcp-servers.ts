import {
  deleteMcpServer,
  findMcpServer,
  insertMcpServer,
  listMcpServers,
  type McpServerRow,
  updateMcpServer,
} from '../db/mcp-servers.ts';
import { DomainError, InvalidInputError } from '../domain/errors.ts';
import { checkInteger, checkName, Limits } from '../domain/limits.ts';
import {
  checkServerEndpoint,
  type McpServerConfig,
  type McpServerInput,
  parseCredentialReference,
} from '../domain/mcp-server.ts';
import { can, canListServers, requirePermission } from '../domain/permissions.ts';
import { type McpPolicy, urlPort } from '../mcp/outbound-policy.ts';
import type { McpSessions } from '../mcp/sessions.ts';
import { type ListedTool, listToolsOnSession, MAX_LISTED_TOOLS } from '../mcp/tool-adapter.ts';
import { McpFault, McpTransportError } from '../mcp/transport-error.ts';
import type { Scope } from './scope.ts';

export const serverNotFound = (identifier: string, field = 'identifier') =>
  new InvalidInputError('SERVER_NOT_FOUND', `no MCP server ${identifier}`, field);

/**
 * A server as registered, if the operator's settings allow it: the variables
 * its headers reference, a host and port (looked up now, every address
 * checked) or a program. Checked again at every call, since settings and DNS
 * answers change.
 */
async function allowedServer(input: McpServerInput, policy: McpPolicy): Promise<McpServerConfig> {
  const server = { identifier: input.identifier, ...checkServerEndpoint(input) };
  server.headers.forEach(({ name, value }, i) => {
    const variable = parseCredentialReference(value)?.variable ?? '';
    const refusal = policy.headerEnvRefusal(variable);
    if (refusal) {
      throw new InvalidInputError(
        McpFault.HeaderEnvNotAllowed,
        `header ${name}: ${refusal}`,
        `headers.${i}.value`,
      );
    }
  });
  if (server.url !== null) {
    const url = new URL(server.url);
    const { refusal } = await policy.resolveHost(url.hostname, urlPort(url));
    if (refusal) throw new InvalidInputError(McpFault.RefusedHost, `refused host: ${refusal}`, 'url');
  }
  if (server.command !== null) {
    const refusal = policy.commandRefusal(server.command, server.args);
    if (refusal) throw new InvalidInputError(McpFault.RefusedCommand, refusal, 'command');
  }
  return server;
}

/** A registration or an update: manage_servers, an allowed endpoint, then the write; `refusal` when it finds no row. */
async function saveServer(
  { db, actor }: Scope,
  input: McpServerInput,
  policy: McpPolicy,
  write: (db: Scope['db'], server: McpServerConfig) => Promise<McpServerRow | null>,
  refusal: (identifier: string) => InvalidInputError,
): Promise<McpServerRow> {
  requirePermission(actor, 'manage_servers');
  const row = await write(db, await allowedServer(input, policy));
  if (!row) throw refusal(input.identifier);
  return row;
}

const alreadyRegistered = (identifier: string) =>
  new InvalidInputError('SERVER_ALREADY_REGISTERED', `${identifier} is already registered`, 'identifier');

export function registerServer(
  scope: Scope,
  input: McpServerInput,
  policy: McpPolicy,
): Promise<McpServerRow> {
  return saveServer(scope, input, policy, insertMcpServer, alreadyRegistered);
}

/** The sessions of this process, which a changed or removed server's session leaves. */
export interface ServerSessions {
  retireServer(identifier: string): void;
}

/** A changed server's session (process, HTTP session) is closed once its calls end; the next call opens one anew. */
export async function updateServer(
  scope: Scope,
  input: McpServerInput,
  policy: McpPolicy,
  sessions: ServerSessions,
): Promise<McpServerRow> {
  const row = await saveServer(scope, input, policy, updateMcpServer, serverNotFound);
  sessions.retireServer(row.identifier);
  return row;
}

/** A removed server's session is closed once its calls end. */
export async function removeServer(
  { db, actor }: Scope,
  identifier: string,
  sessions: ServerSessions,
): Promise<McpServerRow> {
  requirePermission(actor, 'manage_servers');
  const row = await deleteMcpServer(db, checkName(identifier, 'identifier', Limits.shortNameLength));
  if (!row) throw serverNotFound(identifier);
  sessions.retireServer(row.identifier);
  return row;
}

/** Registered servers, for anyone who may read runs or manage servers. */
export function listServers({ db, actor }: Scope): Promise<McpServerRow[]> {
  if (!canListServers(actor)) requirePermission(actor, 'read_own_runs');
  return listMcpServers(db);
}

/**
 * Servers by identifier (node(id)), in the order asked: null for an unknown
 * one, and for every one when the actor may not list servers.
 */
export async function findServers(
  { db, actor }: Scope,
  identifiers: readonly string[],
): Promise<Array<McpServerRow | null>> {
  if (!canListServers(actor) || identifiers.length === 0) return identifiers.map(() => null);
  // Servers are few (an operator registers them): one statement reads them all.
  const rows = new Map((await listMcpServers(db)).map((row) => [row.identifier, row]));
  return identifiers.map((identifier) => rows.get(identifier) ?? null);
}

export { type ListedTool, MAX_LISTED_TOOLS };

/** How long a listing of a server's tools may take by default. */
export const LIST_TOOLS_TIMEOUT_MS = 10_000;

/**
 * The tools a registered server lists, asked on its kept session: for those
 * who may call them (record) or manage servers. A fault of the server or the
 * transport is refused with its MCP_* code, nothing stored.
 */
export async function listServerTools(
  { db, actor }: Scope,
  identifier: string,
  sessions: McpSessions,
  timeoutMs = LIST_TOOLS_TIMEOUT_MS,
): Promise<ListedTool[]> {
  if (!can(actor, 'manage_servers')) requirePermission(actor, 'record');
  const checkedTimeout = checkInteger(timeoutMs, 'timeoutMs', 1, Limits.maxToolCallTimeoutMs);
  const server = await findMcpServer(db, checkName(identifier, 'identifier', Limits.shortNameLength));
  if (!server) throw serverNotFound(identifier);
  try {
    return await listToolsOnSession(sessions, server, checkedTimeout);
  } catch (error) {
    if (error instanceof McpTransportError) throw new DomainError(error.code, error.message);
    throw error;
  }
}
