import type { RequestListener } from 'node:http';
import { countActiveApiKeys, createApiKey } from './db/api-keys.ts';
import { openDatabaseForCommand } from './db/command.ts';
import { migrate } from './db/migrator.ts';
import { PERMISSIONS } from './domain/permissions.ts';
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
  const yoga = createServer({ handle });
  return { listener: yoga, graphqlEndpoint: yoga.graphqlEndpoint, close: () => handle.close() };
}
