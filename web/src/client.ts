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
  const sse = createSseClient({ url: GRAPHQL_PATH, headers, retryAttempts: 5 });
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

/** The code of a GraphQL error (`extensions.code`), or of the HTTP status when there was none. */
export function errorCode(error: {
  graphQLErrors: readonly { extensions?: Record<string, unknown> }[];
  networkError?: Error;
  response?: { status?: number };
}): string {
  const code = error.graphQLErrors[0]?.extensions?.code;
  if (typeof code === 'string') return code;
  if (error.response?.status === 401) return 'UNAUTHENTICATED';
  return error.networkError ? 'NETWORK_ERROR' : 'UNKNOWN';
}
