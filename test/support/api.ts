import type { ExecutionResult } from 'graphql';
import { createApiKey } from '../../src/db/api-keys.ts';
import { PERMISSIONS, type Permission } from '../../src/domain/permissions.ts';
import type { McpSettings } from '../../src/mcp/settings.ts';
import { createServer, type Server } from '../../src/server.ts';

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

/** What the tests' own MCP servers need: loopback, and the stdio tool server. */
export const TEST_MCP_SETTINGS: McpSettings = {
  allowedHosts: ['127.0.0.1', '::1'],
  stdioCommands: [STDIO_TOOL_SERVER],
  stdioEnv: [],
};

import { type BackendName, type OpenTestOptions, openTestDatabase, type TestDatabase } from './databases.ts';

export interface OpenTestApiOptions extends OpenTestOptions {
  /** MCP settings of the server (default: TEST_MCP_SETTINGS). */
  mcp?: McpSettings;
}

export interface TestApi {
  database: TestDatabase;
  server: Server;
  /** Runs one operation in-process through the server's fetch handler. */
  query<Data = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    options?: AskAs,
  ): Promise<ExecutionResult<Data> & { status: number }>;
  /** An API key for an actor with these permissions (default: all), made once per pair. */
  keyFor(actor?: string, permissions?: readonly Permission[]): Promise<string>;
  dispose(): Promise<void>;
}

export async function openTestApi(backend: BackendName, options: OpenTestApiOptions = {}): Promise<TestApi> {
  const database = await openTestDatabase(backend, options);
  const server = createServer({
    handle: database.handle,
    graphiql: false,
    mcp: options.mcp ?? TEST_MCP_SETTINGS,
  });
  const keys = new Map<string, Promise<string>>();
  const keyFor = (actor = 'alice', permissions: readonly Permission[] = PERMISSIONS) => {
    const id = `${actor}:${[...permissions].sort().join(',')}`;
    let key = keys.get(id);
    if (!key) {
      key = createApiKey(database.handle.db, actor, permissions).then((made) => made.key);
      keys.set(id, key);
    }
    return key;
  };
  return {
    database,
    server,
    keyFor,
    async query<Data>(query: string, variables?: Record<string, unknown>, options: AskAs = {}) {
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
    dispose: () => database.dispose(),
  };
}

/** The `extensions.code` of each error, in order. */
export function errorCodes(result: ExecutionResult<unknown>): unknown[] {
  return (result.errors ?? []).map((error) => error.extensions?.code);
}
