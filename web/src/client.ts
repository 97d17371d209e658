import { persistedExchange } from '@urql/exchange-persisted';
import { createClient as createSseClient, type RequestParams } from 'graphql-sse';
import { Client, fetchExchange, mapExchange, subscriptionExchange } from 'urql';

/** Where the service answers GraphQL: the same origin that served the page. */
export const GRAPHQL_PATH = '/graphql';

interface HashedDocument {
  __meta__?: { hash?: string };
}

/**
 * The GraphQL client of one signed-in key. Operations go by hash only (the
 * build registered them as trusted documents), so the viewer works where the
 * service accepts registered operations alone. Nothing is cached: an operator
 * sees what the ledger holds now. Subscriptions run over server-sent events
 * (GraphQL over SSE), which pass every proxy a POST passes.
 */
export function createApiClient(key: string, onKeyRefused: () => void = () => {}): Client {
  const headers = { authorization: `Bearer ${key}` };
  // No retries inside the stream: the run page reconnects by itself, and says so while it does.
  const sse = createSseClient({ url: GRAPHQL_PATH, headers, retryAttempts: 0 });
  return new Client({
    url: GRAPHQL_PATH,
    requestPolicy: 'network-only',
    fetchOptions: { headers },
    exchanges: [
      // A key revoked while the page is open leads back to sign-in instead of an error on every screen.
      mapExchange({
        onError(error) {
          if (errorCode(error) === 'UNAUTHENTICATED') onKeyRefused();
        },
      }),
      persistedExchange({
        enforcePersistedQueries: true,
        enableForMutation: true,
        enableForSubscriptions: true,
        preferGetForPersistedQueries: false,
        generateHash: async (_query, document) => {
          const hash = (document as HashedDocument).__meta__?.hash;
          if (!hash) throw new Error('an operation without a registered hash');
          return hash;
        },
      }),
      fetchExchange,
      subscriptionExchange({
        enableAllOperations: false,
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({ unsubscribe: sse.subscribe(request as RequestParams, sink) }),
        }),
      }),
    ],
  });
}

/** What a failed request carries: its GraphQL errors, a network error, the HTTP answer if there was one. */
export interface RequestError {
  graphQLErrors: readonly { extensions?: Record<string, unknown> }[];
  networkError?: Error;
  response?: { status?: number };
}

/**
 * The code of a GraphQL error (`extensions.code`); else, of the HTTP answer:
 * `UNAUTHENTICATED` for 401, `HTTP_502` and the like for another status, and
 * `UNREACHABLE` when the service did not answer at all.
 */
export function errorCode(error: RequestError): string {
  const code = error.graphQLErrors[0]?.extensions?.code;
  if (typeof code === 'string') return code;
  const status = error.response?.status;
  if (status === 401) return 'UNAUTHENTICATED';
  if (typeof status === 'number' && status > 0) return `HTTP_${status}`;
  return error.networkError ? 'UNREACHABLE' : 'UNKNOWN';
}

/** Whether the service is down or in trouble (no answer, or a 5xx from it or a proxy before it): worth trying again. */
export function isServiceDown(error: RequestError): boolean {
  if (error.graphQLErrors.length > 0) return false;
  const status = error.response?.status;
  return typeof status !== 'number' || status === 0 || status >= 500;
}
