import { createApiKey, listApiKeys, revokeApiKey } from '../src/db/api-keys.ts';
import { openDatabaseForCommand } from '../src/db/command.ts';
import { migrate } from '../src/db/migrator.ts';
import { DomainError } from '../src/domain/errors.ts';
import { PERMISSIONS } from '../src/domain/permissions.ts';

const usage = `npm run keys -- create --actor <name> --grant <permission,...>
npm run keys -- list
npm run keys -- revoke <id or key prefix>

permissions: ${PERMISSIONS.join(', ')}`;

function option(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

const [command, argument] = process.argv
  .slice(2)
  .filter((arg, i, all) => !arg.startsWith('--') && !all[i - 1]?.startsWith('--'));
const handle = await openDatabaseForCommand();
try {
  await migrate(handle);
  if (command === 'create') {
    const actor = option('actor');
    const grant = option('grant');
    if (!actor || !grant) throw new DomainError('USAGE', usage);
    const { key, row } = await createApiKey(
      handle.db,
      actor,
      grant.split(',').map((p) => p.trim()),
    );
    console.log(`key ${row.id} for ${row.actor}: ${row.permissions.join(', ')}`);
    console.log(`${key}\n(shown once: only its hash is stored)`);
  } else if (command === 'list') {
    for (const row of await listApiKeys(handle.db)) {
      const state = row.revokedAt ? `revoked ${row.revokedAt.toISOString()}` : 'active';
      console.log(`${row.id}\t${row.keyPrefix}…\t${row.actor}\t${state}\t${row.permissions.join(',')}`);
    }
  } else if (command === 'revoke' && argument) {
    const revoked = await revokeApiKey(handle.db, argument);
    if (revoked.length === 0) throw new DomainError('KEY_NOT_FOUND', `no active key ${argument}`);
    for (const row of revoked) console.log(`revoked key ${row.id} (${row.keyPrefix}…) of ${row.actor}`);
  } else {
    throw new DomainError('USAGE', usage);
  }
} catch (error) {
  if (!(error instanceof DomainError)) throw error;
  console.error(error.code === 'USAGE' ? error.message : `${error.code}: ${error.message}`);
  process.exitCode = 2;
} finally {
  await handle.close();
}
