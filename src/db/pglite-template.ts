import { writeFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { PGLITE_TEMPLATE, pgliteHandle } from './connection.ts';
import { currentVersion, migrate } from './migrator.ts';

/**
 * Writes the template a fresh embedded database is unpacked from: a PGlite
 * data directory made in memory and migrated to the latest version, as a
 * gzipped tar (PGlite's `dumpDataDir`). Returns the version it holds.
 */
export async function writePgliteTemplate(file = PGLITE_TEMPLATE): Promise<number> {
  const client = await PGlite.create();
  try {
    const handle = pgliteHandle(client, 'memory://', () => {});
    await migrate(handle);
    const version = await currentVersion(handle);
    const dump = await client.dumpDataDir('gzip');
    writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
    return version;
  } finally {
    await client.close();
  }
}
