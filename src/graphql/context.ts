import { GraphQLError, Kind, parse } from 'graphql';
import type { GraphQLParams } from 'graphql-yoga';
import { actorForKey, keyHashOf, rememberedActor } from '../db/api-keys.ts';
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
  /** The HTTP request, from graphql-yoga's own context: its signal ends when the client goes away. */
  readonly request?: Request;
}

export function unauthenticated(message: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: {
      code: ErrorCode.Unauthenticated,
      http: { status: 401, headers: { 'www-authenticate': 'Bearer' } },
    },
  });
}

/** The mutations that append steps through `append_run_steps`, which checks the request's key itself. */
const RECORDING_FIELDS = new Set(['recordToolExecution', 'recordToolResult', 'recordStep', 'recordSteps']);

/** Operations seen, by text and name: whether each is recording mutations only. Bounded; starts again when full. */
const recordingOnly = new Map<string, boolean>();
const RECORDING_ONLY_ENTRIES = 1_000;

/** Whether the operation asked for is a mutation of recording fields and nothing else. */
function isRecordingOnly(params: GraphQLParams | undefined): boolean {
  const query = params?.query;
  if (!query) return false;
  const id = `${params.operationName ?? ''}\n${query}`;
  const known = recordingOnly.get(id);
  if (known !== undefined) return known;
  let answer = false;
  try {
    const operations = parse(query).definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
    const operation =
      operations.length === 1 && !params.operationName
        ? operations[0]
        : operations.find((o) => o.name?.value === params.operationName);
    answer =
      operation?.operation === 'mutation' &&
      operation.selectionSet.selections.every(
        (s) => s.kind === Kind.FIELD && RECORDING_FIELDS.has(s.name.value) && !s.directives?.length,
      );
  } catch {
    answer = false;
  }
  if (recordingOnly.size >= RECORDING_ONLY_ENTRIES) recordingOnly.clear();
  recordingOnly.set(id, answer);
  return answer;
}

/** The bearer key of a request; refused with 401 when there is none. */
function bearerKey(request: Request): string {
  const header = request.headers.get('authorization') ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw unauthenticated('send an API key: Authorization: Bearer <key>');
  return match[1];
}

/** The actor behind `Authorization: Bearer <key>`, read from the database; refused with 401 when there is no such key. */
export async function authenticate(handle: DatabaseHandle, request: Request): Promise<Actor> {
  const key = bearerKey(request);
  let actor: Actor | null;
  try {
    actor = await actorForKey(handle.db, key);
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

/**
 * A request's context. Recording mutations of a key read before use the
 * actor remembered for it and leave the key's check to their own statement
 * (one round trip fewer); every other request reads the key.
 */
export async function createContext(
  handle: DatabaseHandle,
  request: Request,
  mcp: McpDependencies,
  events: RunEvents,
  params?: GraphQLParams,
): Promise<Context> {
  const db = handle.db;
  if (isRecordingOnly(params)) {
    const keyHash = keyHashOf(bearerKey(request));
    const actor = keyHash === null ? null : rememberedActor(db, keyHash);
    if (actor)
      return { db, loaders: createLoaders({ db, actor }), actor, mcp, events, rememberedKey: keyHash };
  }
  const actor = await actorOf(handle, request);
  return { db, loaders: createLoaders({ db, actor }), actor, mcp, events };
}
