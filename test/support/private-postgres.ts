import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A PostgreSQL cluster of the test's own, for faults the shared one must never
 * see: a crash (`pg_ctl -m immediate`), a restart, a hang (SIGSTOP).
 */
export interface PrivatePostgres {
  readonly url: string;
  /** Stops the server; `immediate` is a crash: no checkpoint, clients cut off. */
  stop(mode?: 'fast' | 'immediate'): void;
  start(): void;
  /** Freezes every server process: connections stay open and nothing answers. */
  pause(): void;
  resume(): void;
  dispose(): void;
}

function binDir(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)) : [];
  for (const version of versions) {
    const dir = join(base, version, 'bin');
    if (existsSync(join(dir, 'initdb'))) return dir;
  }
  throw new Error(`no PostgreSQL server binaries under ${base}: install the postgresql package`);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'runledger-pg-'));
  const port = await freePort();
  // PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const run = (tool: string, args: string[]) => {
    const command = asRoot ? 'runuser' : join(bin, tool);
    const commandArgs = asRoot ? ['-u', 'postgres', '--', join(bin, tool), ...args] : args;
    execFileSync(command, commandArgs, { stdio: 'pipe', timeout: 60_000 });
  };
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const start = () =>
    run('pg_ctl', [
      '-D',
      data,
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      '-l',
      join(dir, 'log'),
      '-w',
      'start',
    ]);
  start();
  const signalAll = (signal: NodeJS.Signals) => {
    const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
    for (const pid of [postmaster, ...children]) process.kill(pid, signal);
  };
  let running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop(mode = 'fast') {
      run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
      running = false;
    },
    start() {
      start();
      running = true;
    },
    pause: () => signalAll('SIGSTOP'),
    resume() {
      if (running) signalAll('SIGCONT');
    },
    dispose() {
      if (running) {
        try {
          signalAll('SIGCONT');
          run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        } catch {
          // Already gone.
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
