import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DatabaseInUseError, openDatabase } from '../../src/db/connection.ts';
import { killOwned, spawnOwned } from '../support/processes.ts';

describe('the embedded database, one process at a time', () => {
  it('refuses a second process on the same data directory, and frees it on close', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'runledger-lock-')), 'pglite');
    // Another live process holds the directory.
    const holder = spawnOwned(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      writeFileSync(`${dataDir}.pid`, String(holder.pid));
      const refusal = await openDatabase({ dataDir }).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(DatabaseInUseError);
      expect((refusal as DatabaseInUseError).code).toBe('DATABASE_IN_USE');
    } finally {
      await killOwned(holder);
    }
    // The holder is gone: its pid file is stale and is taken over.
    const handle = await openDatabase({ dataDir });
    expect(existsSync(`${dataDir}.pid`)).toBe(true);
    await handle.close();
    expect(existsSync(`${dataDir}.pid`)).toBe(false);
  });
});
