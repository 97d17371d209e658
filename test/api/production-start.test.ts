import { type ChildProcess, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { killOwned, spawnOwned } from '../support/processes.ts';
import { startService } from '../support/service.ts';

/**
 * `npm start` runs compiled JavaScript with plain node, and a process
 * manager's SIGTERM or SIGINT to the process it started (npm) stops the
 * service gracefully: the port is freed and nothing is left behind.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));

function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
  return children.flatMap((child) => [child, ...descendants(child)]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('npm start, the way production runs it', () => {
  let npm: ChildProcess | undefined;
  afterEach(async () => {
    // npm, and the service it started: one process group.
    if (npm) await killOwned(npm);
    npm = undefined;
  });

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'runs node on dist/ and stops on %s to npm, freeing its port',
    async (signal) => {
      const running = await startService(
        { PGLITE_DATA_DIR: 'memory://', NODE_ENV: 'production' },
        { command: ['npm', 'start'], timeoutMs: 90_000 },
      );
      const started = running.child;
      npm = started;
      const url = new URL(running.url);
      const output = running.output;
      const port = Number(url.port);
      expect((await fetch(`${url.origin}/health`)).status).toBe(200);

      // The service is plain node on the compiled entry point, not a TypeScript loader.
      const tree = descendants(started.pid ?? 0);
      const commands = tree.map((pid) =>
        execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).trim(),
      );
      expect(commands).toContainEqual(expect.stringMatching(/^node (--[a-z-]+=\S+ )*dist\/src\/main\.js$/));
      expect(commands.join('\n')).not.toMatch(/tsx/);

      started.kill(signal);
      const exited = once(started, 'exit');
      const deadline = new Promise((_, reject) =>
        setTimeout(() => reject(new Error('npm start did not stop within 10 s')), 10_000),
      );
      await Promise.race([exited, deadline]);
      expect(output()).toContain(`${signal}: finishing in-flight requests`);
      expect(output()).toContain('stopped');
      for (const pid of tree) expect(alive(pid), `process ${pid} left behind`).toBe(false);
      expect(await portAnswers(port)).toBe(false);
    },
    120_000,
  );
});

describe('while the service starts', () => {
  it('answers /health at once and every other request 503 until the database is ready', async () => {
    // A database that never answers: the start waits on it for the connect timeout, then fails.
    const silent = createServer((socket) => socket.on('error', () => {}));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    const dbPort = typeof address === 'object' && address ? address.port : 0;
    const child = spawnOwned(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: root,
      env: {
        ...process.env,
        PORT: '0',
        DATABASE_URL: `postgres://postgres@127.0.0.1:${dbPort}/postgres`,
        DATABASE_CONNECT_TIMEOUT_MS: '20000',
        NODE_ENV: 'test',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const base = await new Promise<string>((resolve, reject) => {
        let output = '';
        child.stdout?.on('data', (chunk) => {
          output += String(chunk);
          const match = /listening at (http:\/\/\S+):/.exec(output);
          if (match?.[1]) resolve(match[1]);
        });
        child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
      });
      expect((await fetch(`${base}/health`)).status).toBe(200);
      expect((await fetch(`${base}/ready`)).status).toBe(503);
      const graphql = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"query":"{ __typename }"}',
      });
      expect(graphql.status).toBe(503);
      expect(graphql.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(
        ((await graphql.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]?.extensions
          .code,
      ).toBe('DATABASE_UNAVAILABLE');
    } finally {
      await killOwned(child);
      silent.close();
    }
  }, 60_000);
});
