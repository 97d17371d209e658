import { GraphQLError } from 'graphql';
import { actorForKey } from '../db/api-keys.ts';
import type { DatabaseHandle } from '../db/connection.ts';
import { isDatabaseUnavailable } from '../db/faults.ts';
import type { Actor } from '../domain/permissions.ts';
import type { McpDependencies } from '../ledger/mcp.ts';
import type { RunEvents } from '../ledger/run-events.ts';
import type { Scope } from '../ledger/scope.ts';
import { databaseUnavailable, ErrorCode } from './errors.ts';
import { createLoaders, type Loaders } from './loaders.ts';

/** A request's context: the use cases' scope (database, actor), the loaders, and what MCP calls need. */
export interface Context extends Scope {
  loaders: Loaders;
  /** Who is asking, from the request's API key. */
  actor: Actor;
  /** The operator's MCP settings and the tool calls on the wire in this process. */
  mcp: McpDependencies;
  /** Live runs: where writes announce their changes, and streams listen. */
  events: RunEvents;
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

/** Each request's key is looked up once, whoever asks first (trusted documents, then the context). */
const actors = new WeakMap<Request, Promise<Actor>>();

export function actorOf(handle: DatabaseHandle, request: Request): Promise<Actor> {
  let actor = actors.get(request);
  if (!actor) {
    actor = authenticate(handle, request);
    actors.set(request, actor);
  }
  return actor;
}

export async function createContext(
  handle: DatabaseHandle,
  request: Request,
  mcp: McpDependencies,
  events: RunEvents,
): Promise<Context> {
  const actor = await actorOf(handle, request);
  return { db: handle.db, loaders: createLoaders({ db: handle.db, actor }), actor, mcp, events };
}
