import type { RequestListener } from 'node:http';
import { countActiveApiKeys, createApiKey, isBearerRemembered } from './db/api-keys.ts';
import { openDatabaseForCommand } from './db/command.ts';
import type { DatabaseHandle } from './db/connection.ts';
import { optionsFromEnv } from './db/connection.ts';
import { migrate } from './db/migrator.ts';
import { inProcessChannel, openPostgresChannel } from './db/notifications.ts';
import { PERMISSIONS } from './domain/permissions.ts';
import { ENVIRONMENT, environmentValue } from './environment.ts';
import { RequestExpiries } from './ledger/human-requests.ts';
import { KeyWatch } from './ledger/key-watch.ts';
import { RunEvents } from './ledger/run-events.ts';
import { StatsFolder } from './ledger/stats-folder.ts';
import { InFlightCalls } from './mcp/in-flight-calls.ts';
import { McpPolicy } from './mcp/outbound-policy.ts';
import { McpSessions } from './mcp/sessions.ts';
import { mcpSettingsFromEnv } from './mcp/settings.ts';
import { createServer } from './server.ts';
import type { KnownKey } from './transport.ts';

export interface App {
  listener: RequestListener;
  /** Whether a request's key was read by an earlier one: the transport may read its body first. */
  knownKey: KnownKey;
  graphqlEndpoint: string;
  /** Ends the live streams, which would otherwise keep a stop waiting. */
  endStreams(): void;
  /**
   * Cuts off the MCP calls on the wire (MCP_SERVICE_STOPPING: cancelled, not
   * the server's failure) and waits, up to CALLS_STOP_WAIT_MS, until their
   * steps are stored and their requests answered.
   */
  stopCalls(): Promise<void>;
  close(): Promise<void>;
}

/**
 * RUNLEDGER_LIVE_CHANNEL: `postgres` (the default on PostgreSQL) lets instances
 * hear each other; `memory` keeps live runs and cancels inside this process, for
 * a single instance that wants no NOTIFY per write.
 */
function liveChannelFromEnv(env: NodeJS.ProcessEnv = process.env): 'postgres' | 'memory' {
  const value = environmentValue('RUNLEDGER_LIVE_CHANNEL', env) ?? ENVIRONMENT.RUNLEDGER_LIVE_CHANNEL.default;
  if (value !== 'postgres' && value !== 'memory') {
    throw new Error(`RUNLEDGER_LIVE_CHANNEL must be postgres or memory, not "${value}"`);
  }
  return value;
}

/**
 * RUNLEDGER_STATS_FOLD: `on` (the default) lets this instance fold the
 * statistics whenever no other does; `off` leaves it to other instances or
 * to `npm run stats:fold` (its reads stay exact either way).
 */
function statsFoldFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = environmentValue('RUNLEDGER_STATS_FOLD', env) ?? ENVIRONMENT.RUNLEDGER_STATS_FOLD.default;
  if (value !== 'on' && value !== 'off') {
    throw new Error(`RUNLEDGER_STATS_FOLD must be on or off, not "${value}"`);
  }
  return value === 'on';
}

/** How long a stop waits for the MCP calls it cut off to store their steps. */
const CALLS_STOP_WAIT_MS = 5_000;

/** The database opened and migrated, a first key on a fresh install, and the GraphQL server on it. */
export async function openApp(opening: Promise<DatabaseHandle> = openDatabaseForCommand()): Promise<App> {
  const folds = statsFoldFromEnv();
  const handle = await opening;
  console.log(`database: ${handle.backend} at ${handle.location}`);
  await migrate(handle, { log: (line) => console.log(`migrations: ${line}`) });
  if ((await countActiveApiKeys(handle.db)) === 0) {
    // A fresh install must be usable: one key that may do everything, shown this once.
    const { key } = await createApiKey(handle.db, 'admin', PERMISSIONS);
    console.log(`no API keys yet: created one for actor "admin" with every permission.`);
    console.log(`administrator key (shown once, store it now): ${key}`);
  }
  // The statistics follow the writes: this instance folds whenever no other holds the fold's lock.
  const folder = new StatsFolder(handle.db, { log: (line) => console.log(`statistics: ${line}`) });
  if (folds) folder.start();
  else console.log('statistics: this instance does not fold (RUNLEDGER_STATS_FOLD=off)');
  // One session per MCP server for the whole process, opened on first use.
  const sessions = new McpSessions(new McpPolicy(mcpSettingsFromEnv()));
  // Several instances on one PostgreSQL hear each other through it; the embedded database is one process.
  const url = optionsFromEnv().url;
  const channel =
    handle.backend === 'postgres' && url && liveChannelFromEnv() === 'postgres'
      ? await openPostgresChannel({ url, db: handle.db, log: (line) => console.log(`live: ${line}`) })
      : inProcessChannel();
  console.log(
    `live runs: ${channel.kind === 'postgres' ? 'LISTEN/NOTIFY on PostgreSQL' : 'in this process'}`,
  );
  const events = new RunEvents(channel);
  const calls = new InFlightCalls();
  const expiries = new RequestExpiries({ db: handle.db, events }, (line) => console.log(`requests: ${line}`));
  expiries.start();
  const keys = new KeyWatch(handle.db);
  const yoga = createServer({ handle, sessions, events, calls, keys });
  return {
    listener: yoga,
    knownKey: (authorization) => isBearerRemembered(handle.db, authorization),
    graphqlEndpoint: yoga.graphqlEndpoint,
    endStreams: () => events.endStreams(),
    stopCalls: async () => {
      if (!(await calls.stop(CALLS_STOP_WAIT_MS))) {
        console.log(`MCP calls still storing their steps after ${CALLS_STOP_WAIT_MS} ms: stopping anyway`);
      }
    },
    // After the HTTP server has let its requests finish: MCP sessions (DELETE, processes stopped), the
    // live channel, then the database.
    close: async () => {
      await calls.stop(CALLS_STOP_WAIT_MS);
      await sessions.close();
      await events.close();
      keys.close();
      await folder.stop();
      await expiries.stop();
      await handle.close();
    },
  };
}
