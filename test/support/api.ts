import type { ExecutionResult } from 'graphql';
import { createServer, type Server } from '../../src/server.ts';
import { type BackendName, type OpenTestOptions, openTestDatabase, type TestDatabase } from './databases.ts';

export interface TestApi {
  database: TestDatabase;
  server: Server;
  /** Runs one operation in-process through the server's fetch handler. */
  query<Data = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    options?: { actor?: string },
  ): Promise<ExecutionResult<Data> & { status: number }>;
  dispose(): Promise<void>;
}

export async function openTestApi(backend: BackendName, options: OpenTestOptions = {}): Promise<TestApi> {
  const database = await openTestDatabase(backend, options);
  const server = createServer({ handle: database.handle, graphiql: false });
  return {
    database,
    server,
    async query<Data>(query: string, variables?: Record<string, unknown>, options: { actor?: string } = {}) {
      const response = await server.fetch('http://runledger.test/graphql', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'x-runledger-actor': options.actor ?? 'alice',
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
