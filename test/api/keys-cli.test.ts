// `npm run keys` while the service runs on the embedded database: the command goes through the service's API
// with a key that may manage keys, and says what to do without one.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, type Running, startService } from '../support/service.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

describe('npm run keys beside a running service on the embedded database', () => {
  let service: Running;
  let dataDir = '';
  let admin = '';
  let origin = '';

  beforeAll(async () => {
    dataDir = join(await mkdtemp(join(tmpdir(), 'runledger-keys-')), 'pglite');
    service = await startService({ PGLITE_DATA_DIR: dataDir });
    admin = service.adminKey() ?? '';
    origin = new URL(service.url).origin;
  }, 60_000);
  afterAll(async () => {
    await service?.stop();
    if (dataDir) await rm(join(dataDir, '..'), { recursive: true, force: true });
  });

  const keys = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, ['--import', 'tsx', 'scripts/keys.ts', ...args], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: '', PGLITE_DATA_DIR: dataDir, ...env },
      timeout: 30_000,
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

  it('creates, lists and revokes through the API with a key that may manage keys', async () => {
    const through = { RUNLEDGER_KEY: admin, RUNLEDGER_URL: origin };
    const made = await keys(['create', '--actor', 'ci-bot', '--grant', 'record,read_own_runs'], through);
    expect(made.code).toBe(0);
    expect(made.stderr).toContain('through its API');
    expect(made.stdout).toMatch(/^key \d+ for ci-bot: (record, read_own_runs|read_own_runs, record)\n/);
    const key = /(rl_\S+)/.exec(made.stdout)?.[1] ?? '';
    // The key works at once, on the running service.
    const { body } = await post(service.url, key, '{ viewer { actor } }');
    expect(body).toEqual({ data: { viewer: { actor: 'ci-bot' } } });
    const listed = await keys(['list'], through);
    expect(listed.stdout).toContain(`${key.slice(0, 10)}…\tci-bot\tactive`);
    const revoked = await keys(['revoke', key.slice(0, 10)], through);
    expect(revoked.stdout).toMatch(/^revoked key \d+ \(rl_\S+…\) of ci-bot\n$/);
    expect((await post(service.url, key, '{ viewer { actor } }')).status).toBe(401);
  }, 60_000);

  it('says how to go on without a key, and refuses a key that may not manage keys, writing nothing', async () => {
    const without = await keys(['list']);
    expect(without.code).toBe(2);
    expect(without.stderr).toContain('DATABASE_IN_USE');
    expect(without.stderr).toContain('RUNLEDGER_KEY');
    const { stdout } = await keys(['create', '--actor', 'reader', '--grant', 'read_all_runs'], {
      RUNLEDGER_KEY: admin,
      RUNLEDGER_URL: origin,
    });
    const reader = /(rl_\S+)/.exec(stdout)?.[1] ?? '';
    const before = (await keys(['list'], { RUNLEDGER_KEY: admin, RUNLEDGER_URL: origin })).stdout;
    const refused = await keys(['create', '--actor', 'x', '--grant', 'record'], {
      RUNLEDGER_KEY: reader,
      RUNLEDGER_URL: origin,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('FORBIDDEN');
    expect((await keys(['list'], { RUNLEDGER_KEY: admin, RUNLEDGER_URL: origin })).stdout).toBe(before);
  }, 60_000);
});
