import { type DocumentNode, GraphQLError, Kind } from 'graphql';
import type { GraphQLParams, Plugin } from 'graphql-yoga';
import { actorForKey, bearerKeyOf, keyHashOf, rememberedActor } from '../db/api-keys.ts';
import type { DatabaseHandle } from '../db/connection.ts';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { RequestLimits } from '../domain/limits.ts';
import type { Actor } from '../domain/permissions.ts';
import type { KeyWatch } from '../ledger/key-watch.ts';
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
  /** Ends the streams and waits of a key once it is revoked. */
  keys: KeyWatch;
  /** The hash of the request's API key: streams and waits end when it is revoked (KeyWatch). */
  keyHash: string;
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

/** Whether each parsed document's operation (by name) is recording mutations only; weak, so it lives as long as the parse cache keeps the document. */
const recordingOnly = new WeakMap<DocumentNode, Map<string, boolean>>();

/** Whether the operation asked for is a mutation of recording fields and nothing else. */
function isRecordingOnly(
  document: DocumentNode | undefined,
  operationName: string | null | undefined,
): boolean {
  if (!document) return false;
  const name = operationName ?? '';
  let answers = recordingOnly.get(document);
  const known = answers?.get(name);
  if (known !== undefined) return known;
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const operation =
    operations.length === 1 && !operationName
      ? operations[0]
      : operations.find((o) => o.name?.value === operationName);
  const answer =
    operation?.operation === 'mutation' &&
    operation.selectionSet.selections.every(
      (s) => s.kind === Kind.FIELD && RECORDING_FIELDS.has(s.name.value) && !s.directives?.length,
    );
  answers ??= new Map();
  answers.set(name, answer);
  recordingOnly.set(document, answers);
  return answer;
}

/** The document parsed for each request, for the context to read. */
const parsedDocuments = new WeakMap<Request, DocumentNode>();

/** The bearer key of a request; refused with 401 when there is none. */
function bearerKey(request: Request): string {
  const key = bearerKeyOf(request.headers.get('authorization'));
  if (key === null) throw unauthenticated('send an API key: Authorization: Bearer <key>');
  return key;
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
 * Memory and time before a key is known: the key is read before the body is
 * (a request without a valid key costs its headers and one lookup, whatever
 * it sends after them), and the query text is refused past its limit in bytes
 * before the parser (and its cache) sees it. A key remembered from an earlier
 * request is known already: recording mutations of it check it in their own
 * statement (createContext).
 */
export function useAuthenticationFirst(handle: DatabaseHandle): Plugin {
  return {
    // Whatever reaches the request parser is a GraphQL request: pages, OTLP, health and GraphiQL were answered before.
    async onRequestParse({ request }) {
      const keyHash = keyHashOf(bearerKey(request));
      if (keyHash !== null && rememberedActor(handle.db, keyHash)) return;
      await actorOf(handle, request);
    },
    onParams({ params }) {
      if (typeof params.query === 'string' && Buffer.byteLength(params.query) > RequestLimits.maxQueryBytes) {
        throw queryTooLarge();
      }
    },
    onParse({ context }) {
      const request = (context as { request?: Request }).request;
      return ({ result }) => {
        if (request && result && !(result instanceof Error))
          parsedDocuments.set(request, result as DocumentNode);
      };
    },
  };
}

export function queryTooLarge(): GraphQLError {
  return new GraphQLError(`the query text is over ${RequestLimits.maxQueryBytes} bytes`, {
    extensions: { code: ErrorCode.QueryTooLarge, http: { status: 413 } },
  });
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
  keys: KeyWatch,
  params?: GraphQLParams,
): Promise<Context> {
  const db = handle.db;
  const keyHash = keyHashOf(bearerKey(request));
  if (keyHash !== null && isRecordingOnly(parsedDocuments.get(request), params?.operationName)) {
    const actor = rememberedActor(db, keyHash);
    if (actor)
      return {
        db,
        loaders: createLoaders({ db, actor }),
        actor,
        mcp,
        events,
        keys,
        keyHash,
        rememberedKey: keyHash,
      };
  }
  const actor = await actorOf(handle, request);
  return { db, loaders: createLoaders({ db, actor }), actor, mcp, events, keys, keyHash: keyHash ?? '' };
}
