import { createYoga, useReadinessCheck, type YogaServerInstance } from 'graphql-yoga';
import type { DatabaseHandle } from './db/connection.ts';
import { inProcessChannel } from './db/notifications.ts';
import { RequestLimits } from './domain/limits.ts';
import { ENVIRONMENT, environmentValue } from './environment.ts';
import { useCompiledQueries } from './graphql/compiled-queries.ts';
import { type Context, createContext, useAuthenticationFirst } from './graphql/context.ts';
import { maskUnexpectedError, useStableErrorCodes } from './graphql/errors.ts';
import { GRAPHIQL_OPTIONS, renderGraphiQLPage, useGraphiQLAssets } from './graphql/graphiql.ts';
import { boundedParseCaches } from './graphql/parse-cache.ts';
import { protectionPlugins } from './graphql/protection.ts';
import { schema } from './graphql/schema.ts';
import {
  mergeTrustedDocuments,
  type TrustedDocuments,
  trustedDocumentsFromEnv,
  useTrustedDocuments,
} from './graphql/trusted-documents.ts';
import { KeyWatch } from './ledger/key-watch.ts';
import { mcpDependencies } from './ledger/mcp.ts';
import { RunEvents } from './ledger/run-events.ts';
import { createLogger } from './log.ts';
import { InFlightCalls } from './mcp/in-flight-calls.ts';
import { McpPolicy } from './mcp/outbound-policy.ts';
import { McpSessions } from './mcp/sessions.ts';
import { type McpSettings, mcpSettingsFromEnv } from './mcp/settings.ts';
import { OTLP_TRACES_PATH } from './otlp/path.ts';
import { GRAPHQL_PATH } from './transport.ts';
import { createViewerHandler, viewerDirectory, viewerDocuments } from './viewer.ts';

export interface ServerOptions {
  handle: DatabaseHandle;
  /** GraphiQL at /graphql for browsers; default: on unless NODE_ENV is production. */
  graphiql?: boolean;
  /** Tool calls on the wire, which cancelRun cuts off. */
  calls?: InFlightCalls;
  /** Which MCP hosts and programs are allowed; default: from the environment (RUNLEDGER_MCP_*). */
  mcp?: McpSettings;
  /**
   * The MCP sessions calls run on, owned (and closed) by whoever made them;
   * default: a registry of this server's own, under the `mcp` settings.
   */
  sessions?: McpSessions;
  /** No GraphiQL, no introspection, no suggestions in errors; default: NODE_ENV is production. */
  production?: boolean;
  /**
   * Registered operations by hash: when given, only these are answered, and
   * queries as text only for keys with the ad-hoc permission. Default: the
   * manifest RUNLEDGER_TRUSTED_DOCUMENTS names, else none (every operation).
   */
  trustedDocuments?: TrustedDocuments | null;
  /**
   * Live runs and the cancel between instances; default: one process on its own
   * (in memory). Several instances on one PostgreSQL share a PostgreSQL channel (app.ts).
   */
  events?: RunEvents;
  /** The built web viewer served at `/` (its files and its operations' manifest); default: dist/web. */
  viewer?: string;
  /** Queries and mutations run as code compiled once per document (compiled-queries.ts); default: on. Off: graphql-js runs them. */
  compiledQueries?: boolean;
  /** Re-reads the keys that streams and waits hold, and ends those of a revoked key; default: one of this server's. */
  keys?: KeyWatch;
  /** Origins whose pages may call the API from a browser (`*`: any); default: RUNLEDGER_CORS_ORIGINS. */
  corsOrigins?: readonly string[];
  /** The parser's caches, bounded in bytes; default: this server's own (RequestLimits.parseCacheBytes). */
  parseCaches?: ReturnType<typeof boundedParseCaches>;
}

export type Server = YogaServerInstance<Record<string, never>, Context>;

/** RUNLEDGER_CORS_ORIGINS as a list; `*` (the default) allows any origin, never with credentials. */
export function corsOriginsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const text = environmentValue('RUNLEDGER_CORS_ORIGINS', env) ?? ENVIRONMENT.RUNLEDGER_CORS_ORIGINS.default;
  const origins = text
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '');
  for (const origin of origins) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new Error(`RUNLEDGER_CORS_ORIGINS: "${origin}" is not an origin (scheme://host[:port]) or *`);
    }
  }
  return origins.length > 0 ? origins : ['*'];
}

/**
 * The GraphQL server, OTLP ingestion at /v1/traces and the web viewer at /, built without listening: tests
 * call `server.fetch`.
 */
export function createServer({
  handle,
  graphiql,
  calls = new InFlightCalls(),
  mcp = mcpSettingsFromEnv(),
  sessions = new McpSessions(new McpPolicy(mcp)),
  production = environmentValue('NODE_ENV') === 'production',
  trustedDocuments = trustedDocumentsFromEnv(),
  events = new RunEvents(inProcessChannel()),
  viewer = viewerDirectory(),
  compiledQueries = true,
  keys = new KeyWatch(handle.db),
  parseCaches = boundedParseCaches(),
  corsOrigins = corsOriginsFromEnv(),
}: ServerOptions): Server {
  const tools = mcpDependencies(sessions, calls);
  const logger = environmentValue('NODE_ENV') === 'test' ? undefined : createLogger();
  // Loaded on the first export, not at start: protobufjs and the OTLP definitions cost nothing until used.
  let otlp: Promise<(request: Request) => Promise<Response>> | undefined;
  // A cancel on any instance cuts off the calls this process holds for the run.
  events.onCancel((runUuid) => calls.abortCallsOf(runUuid));
  const withGraphiQL = graphiql ?? !production;
  const viewerPage = createViewerHandler(viewer);
  // The viewer sends its operations by hash: registered always, and the only ones (with the manifest's) when
  // trusted documents are on.
  const registered = mergeTrustedDocuments(trustedDocuments ?? new Map(), viewerDocuments(viewer));
  return createYoga<Record<string, never>, Context>({
    schema,
    // The path whose JSON bodies the transport reads first.
    graphqlEndpoint: GRAPHQL_PATH,
    // GraphiQL and every asset of it from this service (no CDN), with the key's header to fill in.
    graphiql: withGraphiQL ? GRAPHIQL_OPTIONS : false,
    renderGraphiQL: renderGraphiQLPage,
    context: ({ request, params }) => createContext(handle, request, tools, events, keys, params),
    // Unexpected errors reach clients as "Unexpected error."; GraphQLErrors we throw keep their code.
    maskedErrors: { maskError: maskUnexpectedError, isDev: false },
    // Keys travel in a header, never in cookies: no origin is allowed credentials (yoga's default reflects any
    // origin with credentials allowed).
    cors: { origin: [...corsOrigins], credentials: false },
    // Counted as the bytes arrive, with or without Content-Length; refused with REQUEST_TOO_LARGE.
    maxRequestBodySize: RequestLimits.maxBodyBytes,
    // Bounded in bytes, and filled only for requests whose key is known (useAuthenticationFirst).
    parserAndValidationCache: parseCaches,
    healthCheckEndpoint: '/health',
    // A path that is nobody's is a 404, not yoga's landing page (which loads an image from another host).
    landingPage: false,
    plugins: [
      // The viewer's pages, and OTLP over HTTP beside GraphQL on the same port and keys: answered before any
      // GraphQL plugin runs.
      {
        async onRequest({ url, request, endResponse }) {
          const page = viewerPage(request, url.pathname);
          if (page) return endResponse(page);
          if (url.pathname !== OTLP_TRACES_PATH) return;
          otlp ??= import('./otlp/handler.ts').then((m) => m.createOtlpHandler(handle, logger, events));
          endResponse(await (await otlp)(request));
        },
      },
      ...(withGraphiQL ? [useGraphiQLAssets()] : []),
      useAuthenticationFirst(handle),
      ...(registered.size > 0
        ? [useTrustedDocuments(registered, handle, { registeredOnly: trustedDocuments != null })]
        : []),
      ...protectionPlugins(production),
      useStableErrorCodes(production),
      // Queries and mutations run as code compiled once per document; subscriptions as before.
      ...(compiledQueries ? [useCompiledQueries()] : []),
      useReadinessCheck({ endpoint: '/ready', check: () => handle.ping() }),
    ],
    // Errors are logged by name and code, never by message: see log.ts.
    logging: logger ?? false,
  });
}
