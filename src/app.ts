import type { RequestListener } from 'node:http';
import { countActiveApiKeys, createApiKey } from './db/api-keys.ts';
import { openDatabaseForCommand } from './db/command.ts';
import { migrate } from './db/migrator.ts';
import { PERMISSIONS } from './domain/permissions.ts';
import { McpPolicy } from './mcp/outbound-policy.ts';
import { McpSessions } from './mcp/sessions.ts';
import { mcpSettingsFromEnv } from './mcp/settings.ts';
import { createServer } from './server.ts';

export interface App {
  listener: RequestListener;
  graphqlEndpoint: string;
  close(): Promise<void>;
}

/** The database opened and migrated, a first key on a fresh install, and the GraphQL server on it. */
export async function openApp(): Promise<App> {
  const handle = await openDatabaseForCommand();
  console.log(`database: ${handle.backend} at ${handle.location}`);
  await migrate(handle, { log: (line) => console.log(`migrations: ${line}`) });
  if ((await countActiveApiKeys(handle.db)) === 0) {
    // A fresh install must be usable: one key that may do everything, shown this once.
    const { key } = await createApiKey(handle.db, 'admin', PERMISSIONS);
    console.log(`no API keys yet: created one for actor "admin" with every permission.`);
    console.log(`administrator key (shown once, store it now): ${key}`);
  }
  // One session per MCP server for the whole process, opened on first use.
  const sessions = new McpSessions(new McpPolicy(mcpSettingsFromEnv()));
  const yoga = createServer({ handle, sessions });
  return {
    listener: yoga,
    graphqlEndpoint: yoga.graphqlEndpoint,
    // After the HTTP server has let its requests finish: MCP sessions (DELETE, processes stopped), then the database.
    close: async () => {
      await sessions.close();
      await handle.close();
    },
  };
}
