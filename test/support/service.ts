import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApiKey } from '../../src/db/api-keys.ts';
import { type Database, openDatabase } from '../../src/db/connection.ts';
import { migrate } from '../../src/db/migrator.ts';
import type { Permission } from '../../src/domain/permissions.ts';
import { type BackendName, openTestDatabase, seedPgliteDir } from './databases.ts';
import { killOwned, spawnOwned } from './processes.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface Running {
  child: ChildProcess;
  /** The GraphQL endpoint it printed. */
  url: string;
  /** Everything it wrote to stdout and stderr so far. */
  output: () => string;
  /** The administrator key a fresh database prints once, if it printed one. */
  adminKey: () => string | undefined;
  /** Kills it and whatever it started (its process group), and waits until it has exited. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** The command that starts it; default: the TypeScript entry point under node. */
  command?: [string, ...string[]];
  /** How long to wait for the URL line. */
  timeoutMs?: number;
}

/** Starts the real entry point, as `npm start` does, on a free port. */
export async function startService(
  env: Record<string, string>,
  { command = [process.execPath, '--import', 'tsx', 'src/main.ts'], timeoutMs = 30_000 }: StartOptions = {},
): Promise<Running> {
  const [program, ...args] = command;
  const child = spawnOwned(program, args, {
    cwd: root,
    env: { ...process.env, PORT: '0', NODE_ENV: 'test', DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    output += String(chunk);
  });
  let timer: NodeJS.Timeout | undefined;
  let url: string;
  try {
    url = await new Promise<string>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no URL printed:\n${output}`)), timeoutMs);
      const look = () => {
        const match = /GraphQL API at (http:\/\/\S+)/.exec(output);
        if (match?.[1]) resolve(match[1]);
      };
      child.stdout?.on('data', look);
      child.once('exit', (code) => reject(new Error(`exited with ${code}:\n${output}`)));
    });
  } catch (error) {
    // A start that failed or took too long leaves nothing behind.
    await killOwned(child);
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return {
    child,
    url,
    output: () => output,
    adminKey: () => /administrator key \(shown once, store it now\): (rl_\S+)/.exec(output)?.[1],
    stop: () => killOwned(child),
  };
}

/** Posts one GraphQL operation with a key; the status, headers and parsed body. */
export async function post(
  url: string,
  key: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<{
  status: number;
  headers: Headers;
  body: { data?: unknown; errors?: Array<{ extensions?: { code?: unknown } }> };
}> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as never };
}

/** The service on a database of its own, with keys for these actors made in it before it started. */
export interface KeyedService<Actor extends string> {
  running: Running;
  keys: Record<Actor, string>;
  /** Opens the database the service used, once it has stopped (PGlite is one process's). */
  openDatabase(): Promise<{ db: Database; close(): Promise<void> }>;
  /** Kills the service if it still runs, and removes its database. */
  dispose(): Promise<void>;
}

export async function startKeyedService<Actor extends string>(
  backend: BackendName,
  actors: Record<Actor, readonly Permission[]>,
  env: Record<string, string> = {},
): Promise<KeyedService<Actor>> {
  const makeKeys = async (db: Database) => {
    const keys = {} as Record<Actor, string>;
    for (const [actor, permissions] of Object.entries(actors) as Array<[Actor, readonly Permission[]]>) {
      keys[actor] = (await createApiKey(db, actor, permissions)).key;
    }
    return keys;
  };
  if (backend === 'postgres') {
    const database = await openTestDatabase('postgres');
    const keys = await makeKeys(database.handle.db);
    const running = await startService({ ...env, DATABASE_URL: database.url ?? '' });
    return {
      running,
      keys,
      openDatabase: async () => ({ db: database.handle.db, close: async () => {} }),
      dispose: async () => {
        await running.stop();
        await database.dispose();
      },
    };
  }
  // PGlite is one process's: the keys are made first, then the service opens the directory.
  const dataDir = await mkdtemp(join(tmpdir(), 'runledger-service-'));
  await seedPgliteDir(dataDir);
  const handle = await openDatabase({ dataDir });
  // Applies nothing on the unpacked template, and refuses one whose migrations have since changed.
  await migrate(handle);
  const keys = await makeKeys(handle.db);
  await handle.close();
  const running = await startService({ ...env, PGLITE_DATA_DIR: dataDir });
  return {
    running,
    keys,
    openDatabase: async () => {
      const reopened = await openDatabase({ dataDir });
      return { db: reopened.db, close: () => reopened.close() };
    },
    dispose: async () => {
      await running.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
