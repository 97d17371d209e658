import { readFileSync } from 'node:fs';
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import { GraphQLError } from 'graphql';
import type { GraphQLParams, Plugin } from 'graphql-yoga';
import type { DatabaseHandle } from '../db/connection.ts';
import { can, type Permission } from '../domain/permissions.ts';
import { type EnvironmentName, environmentValue } from '../environment.ts';
import { actorOf } from './context.ts';

/**
 * Trusted documents: in production the service can answer only operations
 * registered ahead of time (the frontend's generated documents, by hash), so
 * that nobody crafts a query the frontend never sends. Keys that hold
 * AD_HOC_PERMISSION may still send any query (operators, GraphiQL).
 */

/** The environment variable naming the manifest: a JSON object of hash -> document. */
export const TRUSTED_DOCUMENTS_VARIABLE = 'RUNLEDGER_TRUSTED_DOCUMENTS' satisfies EnvironmentName;

/** Who may still send an ad-hoc query while trusted documents are on: the administrator's permission. */
export const AD_HOC_PERMISSION: Permission = 'manage_keys';

export const TrustedDocumentCode = {
  /** A hash that is not in the manifest. */
  NotFound: 'TRUSTED_DOCUMENT_NOT_FOUND',
  /** A query sent as text by a key without AD_HOC_PERMISSION. */
  Refused: 'TRUSTED_DOCUMENTS_ONLY',
  /** Neither a query nor a document id. */
  Missing: 'TRUSTED_DOCUMENT_ID_MISSING',
} as const;

/** The registered operations, by hash. */
export type TrustedDocuments = ReadonlyMap<string, string>;

/** Several manifests as one (a hash names one document, whichever manifest holds it). */
export function mergeTrustedDocuments(...manifests: TrustedDocuments[]): TrustedDocuments {
  return new Map(manifests.flatMap((manifest) => [...manifest]));
}

/**
 * Reads a manifest as GraphQL Code Generator's client preset writes it (persisted-documents.json);
 * `source` names where it came from in a refusal.
 */
export function readTrustedDocuments(path: string, source = TRUSTED_DOCUMENTS_VARIABLE): TrustedDocuments {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${source}: cannot read ${path} as JSON (${(error as Error).name})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`${source}: ${path} must hold a JSON object of hash -> document`);
  }
  const documents = new Map<string, string>();
  for (const [hash, document] of Object.entries(parsed)) {
    if (typeof document !== 'string' || !/^(sha256:)?[0-9a-f]{40,64}$/i.test(hash)) {
      throw new Error(`${source}: ${path} holds an entry that is not a hash and a document`);
    }
    documents.set(hash.replace(/^sha256:/i, '').toLowerCase(), document);
  }
  return documents;
}

/** The manifest the environment names, or null: every operation is accepted (the default). */
export function trustedDocumentsFromEnv(env: NodeJS.ProcessEnv = process.env): TrustedDocuments | null {
  const path = environmentValue(TRUSTED_DOCUMENTS_VARIABLE, env);
  return path ? readTrustedDocuments(path) : null;
}

/** The id a client sends: `documentId` (the client preset's convention) or Apollo's persistedQuery hash. */
function documentId(params: GraphQLParams & { documentId?: unknown }): string | null {
  if (typeof params.documentId === 'string') return params.documentId;
  const persisted = params.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined;
  return typeof persisted?.sha256Hash === 'string' ? persisted.sha256Hash : null;
}

function refusal(message: string, code: string, status: number) {
  return () => new GraphQLError(message, { extensions: { code, http: { status } } });
}

/**
 * Answers registered operations by hash. `registeredOnly` (trusted documents
 * on): a query as text only from a key with AD_HOC_PERMISSION. Otherwise
 * (the default service, which still knows its own viewer's operations by hash)
 * text is answered from anyone, as if the plugin were not there.
 */
export function useTrustedDocuments(
  documents: TrustedDocuments,
  handle: DatabaseHandle,
  { registeredOnly = true }: { registeredOnly?: boolean } = {},
): Plugin {
  const persisted: Plugin = usePersistedOperations({
    getPersistedOperation: (hash) => documents.get(hash.replace(/^sha256:/i, '').toLowerCase()) ?? null,
    extractPersistedOperationId: documentId,
    // The key is looked up once per request: the context reuses this lookup.
    allowArbitraryOperations: registeredOnly
      ? async (request) => can(await actorOf(handle, request), AD_HOC_PERMISSION)
      : true,
    customErrors: {
      notFound: refusal('no trusted document has this id', TrustedDocumentCode.NotFound, 400),
      persistedQueryOnly: refusal(
        `this service answers registered operations only: send a documentId (queries as text need the ${AD_HOC_PERMISSION} permission)`,
        TrustedDocumentCode.Refused,
        403,
      ),
      keyNotFound: refusal('send a documentId or a query', TrustedDocumentCode.Missing, 400),
    },
  });
  if (registeredOnly) return persisted;
  // Otherwise a request without a document id is GraphQL's as before (an empty or missing query included).
  return {
    ...persisted,
    onParams: (payload) => (documentId(payload.params) === null ? undefined : persisted.onParams?.(payload)),
  };
}
