import { openDatabaseForCommand } from './command.ts';
import { currentVersion, MigrationError, migrate } from './migrator.ts';

// npm run migrate [-- --to <version>]
const toIndex = process.argv.indexOf('--to');
const target = toIndex >= 0 ? Number(process.argv[toIndex + 1]) : undefined;
if (target !== undefined && !Number.isSafeInteger(target)) {
  console.error('--to needs a migration version number, e.g. --to 1');
  process.exit(2);
}

const handle = await openDatabaseForCommand();
try {
  console.log(`migrating ${handle.backend} database at ${handle.location}`);
  const applied = await migrate(handle, { target, log: (line) => console.log(`  ${line}`) });
  if (applied.length === 0) console.log('  nothing to apply');
  console.log(`at version ${await currentVersion(handle)}`);
} catch (error) {
  const code = error instanceof MigrationError ? error.code : 'MIGRATION_FAILED';
  console.error(`${code}: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  await handle.close();
}
