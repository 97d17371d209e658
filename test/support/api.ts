import { type DocumentNode, type ExecutionResult, print } from 'graphql';
import { afterEach, beforeEach } from 'vitest';
import { createApiKey } from '../../src/db/api-keys.ts';
import type { Database, DatabaseHandle } from '../../src/db/connection.ts';
import { PERMISSIONS, type Permission } from '../../src/domain/permissions.ts';
import { McpPolicy } from '../../src/mcp/outbound-policy.ts';
import { McpSessions } from '../../src/mcp/sessions.ts';
import type { McpSettings } from '../../src/mcp/settings.ts';
import { createServer, type Server } from '../../src/server.ts';

/** A document of the generated client (test/.generated/operations): its result and variables types. */
export type TypedDocument<Data, Variables> = DocumentNode & { __apiType?: (variables: Variables) => Data };

/** Who asks: an actor (default alice) and its permissions (default: all). */
export interface AskAs {
  actor?: string;
  permissions?: readonly Permission[];
  /** The server to ask (default: the test API's own); one on the same database with other settings. */
  server?: Server;
}

/** The stdio tool server the tests start, as a program and its leading arguments. */
export const STDIO_TOOL_SERVER = [
  process.execPath,
  '--import',
  'tsx',
  'test/support/mcp-stdio-tool-server.ts',
];

/**
 * What the tests' own MCP servers need: loopback on every port (they listen on
 * ports the system picks), the stdio tool server, no variable for a header.
 */
export const TEST_MCP_SETTINGS: McpSettings = {
  allowedHosts: ['127.0.0.1:*', '[::1]:*'],
  stdioCommands: [STDIO_TOOL_SERVER],
  stdioEnv: [],
  headerEnv: [],
};

import { type BackendName, type OpenTestOptions, openTestDatabase, type TestDatabase } from './databases.ts';
import { beginRollback } from './rollback.ts';

export interface OpenTestApiOptions extends OpenTestOptions {
  /** MCP settings of the server (default: TEST_MCP_SETTINGS). */
  mcp?: McpSettings;
}

export interface TestApi {
  database: TestDatabase;
  server: Server;
  /** The MCP sessions of the server: closed by dispose, as the app closes them on shutdown. */
  sessions: McpSessions;
  /** The database the server and the test use now: the open rolled-back transaction, if any. */
  readonly db: Database;
  /** Runs one operation in-process through the server's fetch handler; typed by a generated document. */
  query<Data, Variables extends Record<string, unknown>>(
    query: TypedDocument<Data, Variables>,
    variables: Variables,
    options?: AskAs,
  ): Promise<ExecutionResult<Data> & { status: number }>;
  query<Data = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    options?: AskAs,
  ): Promise<ExecutionResult<Data> & { status: number }>;
  /** An API key for an actor with these permissions (default: all), made once per pair. */
  keyFor(actor?: string, permissions?: readonly Permission[]): Promise<string>;
  /**
   * Opens a transaction and points the server and `db` at it until the returned
   * function rolls it back: everything written meanwhile is gone after.
   */
  beginRollback(): Promise<() => Promise<void>>;
  dispose(): Promise<void>;
}

export async function openTestApi(backend: BackendName, options: OpenTestApiOptions = {}): Promise<TestApi> {
  const database = await openTestDatabase(backend, options);
  /** The open rolled-back transaction, and the keys made inside it (gone with it). */
  let rollback: { tx: Database; keys: Map<string, Promise<string>> } | undefined;
  const current = () => rollback?.tx ?? database.handle.db;
  // The server reads `handle.db` per request: during a rollback it works in the transaction.
  const base = database.handle;
  const handle: DatabaseHandle = {
    get db() {
      return current();
    },
    backend: base.backend,
    location: base.location,
    withSession: (work) => base.withSession(work),
    ping: () => base.ping(),
    close: () => base.close(),
  };
  const sessions = new McpSessions(new McpPolicy(options.mcp ?? TEST_MCP_SETTINGS));
  const server = createServer({ handle, graphiql: false, sessions });
  const keys = new Map<string, Promise<string>>();
  const keyFor = (actor = 'alice', permissions: readonly Permission[] = PERMISSIONS) => {
    const id = `${actor}:${[...permissions].sort().join(',')}`;
    const made = rollback?.keys ?? keys;
    let key = keys.get(id) ?? made.get(id);
    if (!key) {
      key = createApiKey(current(), actor, permissions).then((created) => created.key);
      made.set(id, key);
    }
    return key;
  };
  return {
    database,
    server,
    sessions,
    get db() {
      return current();
    },
    keyFor,
    async beginRollback() {
      if (rollback) throw new Error('a rollback is already open');
      const open = await beginRollback(database.handle.db);
      rollback = { tx: open.tx, keys: new Map() };
      return async () => {
        rollback = undefined;
        await open.rollback();
      };
    },
    async query<Data>(
      document: string | TypedDocument<Data, Record<string, unknown>>,
      variables?: Record<string, unknown>,
      options: AskAs = {},
    ) {
      const query = typeof document === 'string' ? document : print(document);
      const key = await keyFor(options.actor, options.permissions);
      const response = await (options.server ?? server).fetch('http://runledger.test/graphql', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          authorization: `Bearer ${key}`,
        },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await response.json()) as ExecutionResult<Data>;
      return { ...body, status: response.status };
    },
    dispose: async () => {
      await sessions.close();
      await database.dispose();
    },
  };
}

/** Runs each test of the enclosing suite in its own transaction, rolled back after it. */
export function rollbackEach(api: () => TestApi): void {
  let undo: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    undo = await api().beginRollback();
  });
  afterEach(async () => {
    const pending = undo;
    undo = undefined;
    await pending?.();
  });
}

/** The `extensions.code` of each error, in order. */
export function errorCodes(result: ExecutionResult<unknown>): unknown[] {
  return (result.errors ?? []).map((error) => error.extensions?.code);
}
