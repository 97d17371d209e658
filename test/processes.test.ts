// What a test starts does not outlive it (test/support/processes.ts): not when the test fails, not when it
// times out, not when the test process itself is stopped or killed.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startPair } from './fixtures/processes/pair.ts';
import { killOwned, spawnOwned } from './support/processes.ts';
import { startService } from './support/service.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'runledger-processes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Running: a process that has ended but is not yet reaped by its parent (a zombie) does not count. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // The state follows the command name, which ends with the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/** Resolves once every one of `pids` has ended; the expectation names the first one still running. */
async function gone(pids: readonly number[], timeout = 5_000): Promise<void> {
  await expect.poll(() => pids.filter(alive), { timeout, interval: 50 }).toEqual([]);
}

/** Runs a program to its end: its exit code and what it printed. */
async function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const child = spawnOwned(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  await killOwned(child);
  return { code, output };
}

describe('processes a test starts', () => {
  it('are killed with what they started: the whole process group', async () => {
    const { child, pids } = await startPair();
    expect(pids.filter(alive)).toEqual(pids);
    await killOwned(child);
    await gone(pids, 1_000);
  });

  it('a service that does not start in time is killed by startService, with what it started', async () => {
    const pidsFile = join(dir, 'service.pids');
    // Starts a process of its own, then never prints the URL startService waits for.
    const script = `
      const { spawn } = require('node:child_process');
      const grandchild = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore', env: {} });
      require('node:fs').writeFileSync(${JSON.stringify(pidsFile)}, process.pid + ' ' + grandchild.pid);
      setInterval(() => {}, 1000);`;
    await expect(
      startService({}, { command: [process.execPath, '-e', script], timeoutMs: 1_000 }),
    ).rejects.toThrow(/no URL printed/);
    const pids = readFileSync(pidsFile, 'utf8').split(' ').map(Number);
    expect(pids).toHaveLength(2);
    await gone(pids, 1_000);
  });

  it('in a test that throws or times out are gone once its test file has ended', async () => {
    const pidsFile = join(dir, 'left-running.pids');
    const result = await run(
      ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/fixtures/processes/vitest.config.ts'],
      { LEFT_RUNNING_PIDS: pidsFile, CI: 'true' },
    );
    // Both planted tests fail: one throws, one times out.
    expect(result.code, result.output).toBe(1);
    expect(result.output).toContain('a planted failure');
    expect(result.output).toMatch(/Test timed out in 1000ms/);
    const pids = readFileSync(pidsFile, 'utf8').split('\n').filter(Boolean).map(Number);
    expect(pids).toHaveLength(4);
    await gone(pids, 1_000);
  }, 60_000);

  it.each(['SIGTERM', 'SIGKILL'] as const)(
    'end when the test process that started them gets %s',
    async (signal) => {
      const owner = spawnOwned(process.execPath, ['--import', 'tsx', 'test/fixtures/processes/owner.ts'], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const line = await new Promise<string>((resolve, reject) => {
        let output = '';
        owner.stdout?.on('data', (chunk: Buffer) => {
          output += chunk.toString('utf8');
          if (output.includes('\n')) resolve(output.trim());
        });
        owner.once('exit', (code) => reject(new Error(`the owner exited with ${code}`)));
      });
      const pids = line.split(' ').map(Number);
      expect(pids.filter(alive)).toHaveLength(2);
      // Only the owner: what it started is in a process group of its own, which this signal does not reach.
      owner.kill(signal);
      // SIGTERM: the owner kills them before it ends. SIGKILL: they notice the owner is gone, within a second.
      await gone(pids, signal === 'SIGTERM' ? 1_000 : 3_000);
      await killOwned(owner);
    },
    30_000,
  );
});
