import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quantile, root, table } from './support.ts';

/**
 * How long `npm start` takes on a fresh embedded database until /health and
 * /ready answer, against a baseline of `npm start`'s own floor in the same
 * run: a node process that only listens and answers.
 */
const RUNS = 5;

async function timeUntil(
  command: string[],
  env: Record<string, string>,
): Promise<{ health: number; ready: number }> {
  const began = performance.now();
  const child = spawn(command[0] ?? 'npm', command.slice(1), {
    cwd: root,
    env: { ...process.env, DATABASE_URL: '', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const port = env.PORT;
  let health = 0;
  let ready = 0;
  const deadline = began + 60_000;
  while ((!health || !ready) && performance.now() < deadline) {
    if (!health) {
      const response = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined);
      if (response?.status === 200) health = performance.now() - began;
    }
    if (health && !ready) {
      const response = await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined);
      if (response?.status === 200) ready = performance.now() - began;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  child.kill('SIGTERM');
  await once(child, 'exit');
  if (!health || !ready) throw new Error(`${command.join(' ')} did not answer within 60 s`);
  return { health, ready };
}

const FLOOR = `require('node:http').createServer((q, s) => s.end('ok')).listen(process.env.PORT, '127.0.0.1')`;

export async function benchStart(): Promise<void> {
  console.log(`\n== start: npm start on a fresh embedded database, ${RUNS} runs each`);
  const floor: number[] = [];
  const health: number[] = [];
  const ready: number[] = [];
  for (let run = 0; run < RUNS; run += 1) {
    floor.push((await timeUntil([process.execPath, '-e', FLOOR], { PORT: String(4600 + run) })).health);
    const port = String(4700 + run);
    const dataDir = mkdtempSync(join(tmpdir(), 'runledger-start-'));
    try {
      const times = await timeUntil(['npm', 'start'], {
        PORT: port,
        PGLITE_DATA_DIR: join(dataDir, 'pglite'),
      });
      health.push(times.health);
      ready.push(times.ready);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    process.stdout.write(`  run ${run + 1}/${RUNS}\n`);
  }
  const median = (values: number[]) =>
    quantile(
      [...values].sort((a, b) => a - b),
      0.5,
    );
  const floorMedian = median(floor);
  table([
    { path: 'node, listening only (floor)', median_ms: Math.round(floorMedian), ratio: '1.00' },
    {
      path: 'npm start → /health',
      median_ms: Math.round(median(health)),
      ratio: (median(health) / floorMedian).toFixed(2),
    },
    {
      path: 'npm start → /ready (database open, migrated)',
      median_ms: Math.round(median(ready)),
      ratio: (median(ready) / floorMedian).toFixed(2),
    },
  ]);
}
