import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { createApiKey } from '../src/db/api-keys.ts';
import { openDatabase } from '../src/db/connection.ts';
import { migrate } from '../src/db/migrator.ts';
import { PERMISSIONS } from '../src/domain/permissions.ts';

export const root = fileURLToPath(new URL('..', import.meta.url));
export const serverUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A client of the server's maintenance database, for creating and dropping the benchmarks' own. */
async function adminClient(): Promise<pg.Client> {
  const admin = new pg.Client({ connectionString: serverUrl });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`the benchmarks need PostgreSQL at ${serverUrl} (set DATABASE_URL): ${String(error)}`);
  }
  return admin;
}

/** The databases this run created and drops when it ends (`dropCreatedDatabases`). */
const created = new Set<string>();

/**
 * A fresh database for one benchmark, dropped first if a previous run left it
 * (one stopped by a signal leaves its own). Dropped when the run ends, unless
 * `keep`: a data set the next run may reuse (BENCH_REUSE=1).
 */
export async function freshDatabase(base: string, options: { keep?: boolean } = {}): Promise<string> {
  // BENCH_DB_SUFFIX keeps two benchmarks on one server out of each other's databases.
  const name = `${base}${process.env.BENCH_DB_SUFFIX ?? ''}`;
  const admin = await adminClient();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  if (!options.keep) created.add(name);
  return databaseUrl(name);
}

/** Drops every database this run created and did not keep: a 1,000,000-step data set is gigabytes. */
export async function dropCreatedDatabases(): Promise<void> {
  if (created.size === 0) return;
  const admin = await adminClient();
  try {
    for (const name of created) {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      created.delete(name);
    }
  } finally {
    await admin.end();
  }
}

export interface Service {
  url: string;
  /** The service's process, for reading its memory. */
  pid: number;
  /** The service's process.memoryUsage(), in bytes. */
  memory(): Promise<MemorySample>;
  stop(): Promise<void>;
}

/** Resident memory of a process in MB (Linux /proc). */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

export interface MemorySample {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** CPU time the service has used so far (user + system), in microseconds. */
  cpuMicros: number;
  /** The longest and the 99th percentile hold-up of the event loop since the previous sample, in ms. */
  loopDelayMaxMs?: number;
  loopDelayP99Ms?: number;
}

export interface ServiceOptions {
  /** Arguments for node before the entry point (--cpu-prof, ...). */
  nodeArgs?: string[];
  /** Environment of the service on top of the benchmark's own. */
  env?: Record<string, string>;
}

/** The flags `npm start` gives node (package.json's start script): the service is measured as it runs. */
function startFlags(): string[] {
  const manifest = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as { scripts: { start: string } };
  const flags = /^exec node (.*)dist\/src\/main\.js$/.exec(manifest.scripts.start)?.[1];
  if (flags === undefined) throw new Error(`npm start is not "exec node [flags] dist/src/main.js"`);
  return flags.split(' ').filter(Boolean);
}

/**
 * The services and bare servers still running. A benchmark stopped by a signal
 * (Ctrl-C, a timeout) ends them before it exits, rather than leaving them
 * running on their databases.
 */
const running = new Set<ChildProcess>();

function tracked(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of running) child.kill('SIGTERM');
    process.exit(128 + constants.signals[signal]);
  });
}

/** Ends a child process with SIGTERM; resolves once it has exited. */
function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * The real entry point in its own process, so load and service do not share an
 * event loop: compiled JavaScript under plain node, as `npm start` runs it,
 * with its flags (built first when the sources changed). `url` empty: the embedded database
 * (set PGLITE_DATA_DIR in `env`).
 */
export async function startService(url: string, options: ServiceOptions = {}): Promise<Service> {
  const build = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (build.status !== 0) throw new Error('the build failed');
  const probe = fileURLToPath(new URL('./memory-probe.mjs', import.meta.url));
  const child: ChildProcess = tracked(
    spawn(
      process.execPath,
      [...startFlags(), ...(options.nodeArgs ?? []), '--import', probe, 'dist/src/main.js'],
      {
        cwd: root,
        env: { ...process.env, DATABASE_URL: url, PORT: '0', NODE_ENV: 'production', ...options.env },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    ),
  );
  const samples: Array<(sample: MemorySample) => void> = [];
  let asked = Promise.resolve();
  let output = '';
  const endpoint = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      output += String(chunk);
      const match = /GraphQL API at (http:\/\/\S+)/.exec(output);
      if (match?.[1]) resolve(match[1]);
      for (let line = /memory (\{.*\})\n/.exec(output); line; line = /memory (\{.*\})\n/.exec(output)) {
        output = output.slice(line.index + line[0].length);
        samples.shift()?.(JSON.parse(line[1] ?? '{}') as MemorySample);
      }
      if (output.length > 100_000) output = output.slice(-10_000);
    });
    child.once('exit', (code) => reject(new Error(`service exited with ${code}: ${output}`)));
  });
  return {
    url: endpoint,
    pid: child.pid ?? 0,
    // One question at a time: signals sent close together may arrive as one.
    memory: () => {
      const next = asked.then(
        () =>
          new Promise<MemorySample>((resolve) => {
            samples.push(resolve);
            child.kill('SIGUSR2');
          }),
      );
      asked = next.then(
        () => {},
        () => {},
      );
      return next;
    },
    stop: () => stopChild(child),
  };
}

/** A plain node script of bench/ in its own process, with the flags of `npm start`, until it prints its address. */
export async function startBareServer(
  script: string,
  env: Record<string, string>,
): Promise<{ url: string; stop(): Promise<void> }> {
  const child = tracked(
    spawn(process.execPath, [...startFlags(), fileURLToPath(new URL(script, import.meta.url))], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      output += String(chunk);
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}: ${output}`)));
  });
  return {
    url,
    stop: () => stopChild(child),
  };
}

/** A key for the benchmark's actor, with every permission, written straight into the database. */
export async function benchKey(url: string, dataDir?: string, actor = 'bench'): Promise<string> {
  const handle = await openDatabase({ url, dataDir });
  try {
    await migrate(handle);
    return (await createApiKey(handle.db, actor, PERMISSIONS)).key;
  } finally {
    await handle.close();
  }
}

export async function graphql<T>(
  url: string,
  key: string,
  query: string,
  variables: Record<string, unknown>,
): Promise<T> {
  const send = () =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
  // A kept-alive connection the service closed as idle just as it was reused (seconds of plain
  // SQL between two API reads) fails before any answer: a read is sent again, once.
  const response = await send().catch((error: unknown) => {
    const closed =
      error instanceof TypeError && (error.cause as { code?: string })?.code === 'UND_ERR_SOCKET';
    if (closed && !/^\s*mutation\b/.test(query)) return send();
    throw error;
  });
  const body = (await response.json()) as { data?: T; errors?: unknown };
  if (body.errors || !body.data) throw new Error(`GraphQL error: ${JSON.stringify(body.errors)}`);
  return body.data;
}

/** Runs `total` tasks with `concurrency` workers; returns seconds elapsed. */
export async function timed(
  total: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next;
        next += 1;
        await task(i);
      }
    }),
  );
  return Number(process.hrtime.bigint() - started) / 1e9;
}

export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

export function table(rows: Array<Record<string, string | number>>): void {
  console.table(rows);
}

/**
 * HTTP load from autocannon: `total` POSTs of GraphQL bodies built per request,
 * over `connections` keep-alive connections. Returns seconds elapsed and the
 * latency percentiles in milliseconds.
 */
export async function load(
  url: string,
  key: string,
  total: number,
  connections: number,
  body: (i: number) => unknown,
  /** The key of request i, when not always `key`: requests of many actors. */
  keyOf?: (i: number) => string,
): Promise<{ seconds: number; p50: number; p97_5: number; p99: number; errors: number }> {
  let i = 0;
  const started = process.hrtime.bigint();
  // The last answer's time: autocannon itself ends on its next one-second tick, which in a phase of a
  // second or two would count up to a second of nothing.
  let answered = started;
  const result = await autocannon({
    url,
    connections,
    amount: total,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    requests: [
      {
        setupRequest: (request) => {
          const current = i;
          i += 1;
          const headers = keyOf
            ? { ...request.headers, authorization: `Bearer ${keyOf(current)}` }
            : request.headers;
          return { ...request, headers, body: JSON.stringify(body(current)) };
        },
        onResponse: () => {
          answered = process.hrtime.bigint();
        },
      },
    ],
  });
  return {
    // autocannon reports whole seconds; short phases need the real clock, up to the last answer.
    seconds: Number(answered - started) / 1e9,
    p50: result.latency.p50,
    p97_5: result.latency.p97_5,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

/**
 * Runs `work` with every trigger of run_steps off, for every session, and
 * turns them on again whatever happens: the floor stores the rows and
 * nothing else. The statistics of this throwaway database then lack those
 * calls, which nothing in this benchmark reads.
 */
export async function withoutTriggers<T>(pool: pg.Pool, work: () => Promise<T>): Promise<T> {
  await pool.query('ALTER TABLE run_steps DISABLE TRIGGER USER');
  try {
    return await work();
  } finally {
    await pool.query('ALTER TABLE run_steps ENABLE TRIGGER USER');
  }
}
