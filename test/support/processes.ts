// Every process a test starts is started here, so that none outlives the test file that started it: a
// test that fails or times out before its own cleanup, or a test process that is stopped or killed, would
// otherwise leave its service running, orphaned, with nothing left that knows about it.
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { once } from 'node:events';

/** Read by exit-with-owner.mjs: the test process whose end ends the child too. */
const OWNER_ENV = 'TEST_PROCESS_OWNER';

const watchdog = new URL('./exit-with-owner.mjs', import.meta.url).href;

/** Started here and not yet killed: each the leader of a process group of its own. */
const owned = new Set<ChildProcess>();

/** Sends `signal` to the child's whole process group: what it started itself goes too. */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Gone already.
  }
}

/** Kills the child's process group and waits until the child has exited. */
export async function killOwned(child: ChildProcess): Promise<void> {
  owned.delete(child);
  // A child that never started (no pid) emits no exit.
  const running = child.pid !== undefined && child.exitCode === null && child.signalCode === null;
  const exited = running ? once(child, 'exit') : undefined;
  signalGroup(child, 'SIGKILL');
  await exited;
}

/** Kills every process group started by this test process that is not killed yet. Synchronous, for exit handlers. */
export function killAllOwned(): void {
  for (const child of owned) signalGroup(child, 'SIGKILL');
  owned.clear();
}

let guarded = false;

/**
 * Kills what is left when this process ends: on a normal exit, and on the
 * SIGTERM the test runner stops a worker with. The signal is raised again once
 * the children are gone, so the process ends as it would have without this.
 */
function guardExit(): void {
  if (guarded) return;
  guarded = true;
  process.on('exit', killAllOwned);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    const onSignal = () => {
      killAllOwned();
      process.off(signal, onSignal);
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

/**
 * Spawns a process in a process group of its own, killed with its group by
 * killOwned, at the end of the test file (test/setup.ts), or when this
 * process ends. A node process in it also ends by itself once this process is
 * gone (exit-with-owner.mjs, through NODE_OPTIONS), which covers a test
 * process killed without a chance to clean up.
 */
export function spawnOwned(
  command: string,
  args: readonly string[],
  options: SpawnOptions = {},
): ChildProcess {
  guardExit();
  const env = options.env ?? process.env;
  const preload = `--import=${watchdog}`;
  const inherited = env.NODE_OPTIONS ?? '';
  const nodeOptions = inherited.includes(preload) ? inherited : `${inherited} ${preload}`.trim();
  const child = spawn(command, args, {
    ...options,
    env: { ...env, NODE_OPTIONS: nodeOptions, [OWNER_ENV]: String(process.pid) },
    detached: true,
  });
  owned.add(child);
  return child;
}
