import { GraphQLError } from 'graphql';
import { actorForKey } from '../db/api-keys.ts';
import type { DatabaseHandle } from '../db/connection.ts';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { type Actor, can, type Permission } from '../domain/permissions.ts';
import type { InFlightCalls } from '../mcp/in-flight-calls.ts';
import type { McpPolicy } from '../mcp/outbound-policy.ts';
import { databaseUnavailable, ErrorCode } from './errors.ts';
import { createLoaders, type Loaders } from './loaders.ts';

export interface Context {
  db: DatabaseHandle['db'];
  loaders: Loaders;
  /** Who is asking, from the request's API key. */
  actor: Actor;
  /** Tool calls on the wire in this process, by run. */
  calls: InFlightCalls;
  /** The operator's MCP settings: hosts, programs, environment. */
  mcp: McpPolicy;
}

function unauthenticated(message: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: {
      code: ErrorCode.Unauthenticated,
      http: { status: 401, headers: { 'www-authenticate': 'Bearer' } },
    },
  });
}

/** The actor behind `Authorization: Bearer <key>`; refused with 401 when there is no such key. */
export async function authenticate(handle: DatabaseHandle, request: Request): Promise<Actor> {
  const header = request.headers.get('authorization') ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw unauthenticated('send an API key: Authorization: Bearer <key>');
  let actor: Actor | null;
  try {
    actor = await actorForKey(handle.db, match[1]);
  } catch (error) {
    if (isDatabaseUnavailable(error)) throw databaseUnavailable();
    throw error;
  }
  if (!actor) throw unauthenticated('the API key is unknown or revoked');
  return actor;
}

export async function createContext(
  handle: DatabaseHandle,
  request: Request,
  calls: InFlightCalls,
  mcp: McpPolicy,
): Promise<Context> {
  const actor = await authenticate(handle, request);
  return { db: handle.db, loaders: createLoaders(handle.db, actor), actor, calls, mcp };
}

export function forbidden(permission: Permission): GraphQLError {
  return new GraphQLError(`this needs the ${permission} permission`, {
    extensions: { code: ErrorCode.Forbidden, permission },
  });
}

/** Refuses with FORBIDDEN unless the actor holds the permission. */
export function requirePermission(context: Context, permission: Permission): void {
  if (!can(context.actor, permission)) throw forbidden(permission);
}
