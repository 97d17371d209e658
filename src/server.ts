import { createYoga, useReadinessCheck, type YogaServerInstance } from 'graphql-yoga';
import type { DatabaseHandle } from './db/connection.ts';
import { inProcessChannel } from './db/notifications.ts';
import { RequestLimits } from './domain/limits.ts';
import { environmentValue } from './environment.ts';
import { useCompiledQueries } from './graphql/compiled-queries.ts';
import { type Context, createContext } from './graphql/context.ts';
import { maskUnexpectedError, useStableErrorCodes } from './graphql/errors.ts';
import { GRAPHIQL_OPTIONS, renderGraphiQLPage, useGraphiQLAssets } from './graphql/graphiql.ts';
import { protectionPlugins } from './graphql/protection.ts';
import { schema } from './graphql/schema.ts';
import {
  mergeTrustedDocuments,
  type TrustedDocuments,
  trustedDocumentsFromEnv,
  useTrustedDocuments,
} from './graphql/trusted-documents.ts';
import { mcpDependencies } from './ledger/mcp.ts';
import { RunEvents } from './ledger/run-events.ts';
import { createLogger } from './log.ts';
import { InFlightCalls } from './mcp/in-flight-calls.ts';
import { McpPolicy } from './mcp/outbound-policy.ts';
import { McpSessions } from './mcp/sessions.ts';
import { type McpSettings, mcpSettingsFromEnv } from './mcp/settings.ts';
import { OTLP_TRACES_PATH } from './otlp/path.ts';
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
  /** Queries run as code compiled once per document (compiled-queries.ts); default: on. Off: graphql-js runs them. */
  compiledQueries?: boolean;
}

export type Server = YogaServerInstance<Record<string, never>, Context>;

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
    // GraphiQL and every asset of it from this service (no CDN), with the key's header to fill in.
    graphiql: withGraphiQL ? GRAPHIQL_OPTIONS : false,
    renderGraphiQL: renderGraphiQLPage,
    context: ({ request, params }) => createContext(handle, request, tools, events, params),
    // Unexpected errors reach clients as "Unexpected error."; GraphQLErrors we throw keep their code.
    maskedErrors: { maskError: maskUnexpectedError, isDev: false },
    // Counted as the bytes arrive, with or without Content-Length; refused with REQUEST_TOO_LARGE.
    maxRequestBodySize: RequestLimits.maxBodyBytes,
    healthCheckEndpoint: '/health',
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
      ...(registered.size > 0
        ? [useTrustedDocuments(registered, handle, { registeredOnly: trustedDocuments != null })]
        : []),
      ...protectionPlugins(production),
      useStableErrorCodes(production),
      // Queries run as code compiled once per document; the rest as before.
      ...(compiledQueries ? [useCompiledQueries()] : []),
      useReadinessCheck({ endpoint: '/ready', check: () => handle.ping() }),
    ],
    // Errors are logged by name and code, never by message: see log.ts.
    logging: logger ?? false,
  });
}
