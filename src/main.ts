import { countActiveApiKeys, createApiKey } from './db/api-keys.ts';
import { openDatabaseForCommand } from './db/command.ts';
import { migrate } from './db/migrator.ts';
import { PERMISSIONS } from './domain/permissions.ts';
import { createServer } from './server.ts';
import { createHttpServer, transportLimitsFromEnv } from './transport.ts';

const port = Number(process.env.PORT ?? 4000);
const host = process.env.HOST ?? '127.0.0.1';
// Read before anything else: a bad setting stops the start, before the database is touched.
const limits = transportLimitsFromEnv();

const handle = await openDatabaseForCommand();
console.log(`database: ${handle.backend} at ${handle.location}`);
await migrate(handle, { log: (line) => console.log(`migrations: ${line}`) });
if ((await countActiveApiKeys(handle.db)) === 0) {
  // A fresh install must be usable: one key that may do everything, shown this once.
  const { key } = await createApiKey(handle.db, 'admin', PERMISSIONS);
  console.log(`no API keys yet: created one for actor "admin" with every permission.`);
  console.log(`administrator key (shown once, store it now): ${key}`);
}

const yoga = createServer({ handle });
const http = createHttpServer(yoga, limits);
http.listen(port, host, () => {
  const address = http.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  console.log(`runledger GraphQL API at http://${host}:${actualPort}${yoga.graphqlEndpoint}`);
});

/** How long a stop waits for requests in flight before it closes what is still open. */
const SHUTDOWN_GRACE_MS = 8_000;

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: finishing in-flight requests`);
  // close() stops accepting and waits for open requests; idle keep-alive sockets are closed at once.
  const closed = new Promise<void>((resolve) => http.close(() => resolve()));
  http.closeIdleConnections();
  const grace = setTimeout(() => {
    console.log(`requests still open after ${SHUTDOWN_GRACE_MS} ms: closing them`);
    http.closeAllConnections();
  }, SHUTDOWN_GRACE_MS);
  await closed;
  clearTimeout(grace);
  await handle.close();
  console.log('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
