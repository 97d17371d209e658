import type { RequestListener } from 'node:http';
import type { App } from './app.ts';
import { ENVIRONMENT, environmentValue } from './environment.ts';
import { ErrorCode, RETRY_AFTER_SECONDS } from './graphql/errors.ts';
import { createHttpServer, transportLimitsFromEnv } from './transport.ts';

const port = Number(environmentValue('PORT') ?? ENVIRONMENT.PORT.default);
const host = environmentValue('HOST') ?? ENVIRONMENT.HOST.default;
// Read before anything else: a bad setting stops the start, before the database is touched.
const limits = transportLimitsFromEnv();

/**
 * Until the database is open and migrated the process is alive but not ready:
 * /health answers 200 at once (a process manager sees it started), /ready and
 * every other request 503, as during an outage.
 */
const starting: RequestListener = (request, response) => {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  if (path === '/health') {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"message":"alive"}');
    return;
  }
  response
    .writeHead(503, { 'content-type': 'application/json', 'retry-after': String(RETRY_AFTER_SECONDS) })
    .end(
      JSON.stringify({
        errors: [
          {
            message: 'the service is starting; retry later',
            extensions: { code: ErrorCode.DatabaseUnavailable },
          },
        ],
      }),
    );
};
let listener: RequestListener = starting;
let app: App | undefined;
const http = createHttpServer(
  (request, response) => listener(request, response),
  limits,
  (authorization) => app?.knownKey(authorization) ?? false,
);
await new Promise<void>((resolve) => http.listen(port, host, resolve));
const address = http.address();
const actualPort = typeof address === 'object' && address ? address.port : port;
console.log(`listening at http://${host}:${actualPort}: /health answers; opening the database`);

let stopping = false;

/** How long a stop waits for requests in flight before it closes what is still open. */
const SHUTDOWN_GRACE_MS = 8_000;

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: finishing in-flight requests`);
  // close() stops accepting and waits for open requests; idle keep-alive sockets are closed at once.
  const closed = new Promise<void>((resolve) => http.close(() => resolve()));
  http.closeIdleConnections();
  app?.endStreams();
  // Calls on the wire are cut off now and answered as such (MCP_SERVICE_STOPPING), not left to the grace.
  await app?.stopCalls();
  const grace = setTimeout(() => {
    console.log(`requests still open after ${SHUTDOWN_GRACE_MS} ms: closing them`);
    http.closeAllConnections();
  }, SHUTDOWN_GRACE_MS);
  await closed;
  clearTimeout(grace);
  await app?.close();
  console.log('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

// The application's modules load after the port is open: the process answers /health while they do.
// The database opens while they load: the embedded one's WebAssembly compiles on threads of its own.
const opening = import('./db/command.ts').then(({ openDatabaseForCommand }) => openDatabaseForCommand());
// Until openApp awaits it, a failure to open is not unhandled.
opening.catch(() => {});
const { openApp } = await import('./app.ts');
app = await openApp(opening);
if (!stopping) {
  listener = app.listener;
  console.log(`runledger GraphQL API at http://${host}:${actualPort}${app.graphqlEndpoint}`);
  console.log(`runledger viewer at http://${host}:${actualPort}/ (sign in with an API key)`);
}
