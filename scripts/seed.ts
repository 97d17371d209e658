import { openDatabaseForCommand } from '../src/db/command.ts';
import { migrate } from '../src/db/migrator.ts';
import { DEMO_RUN_UUID, seedDemoData } from '../src/ledger/seed.ts';

// npm run seed: demo runs in the database the service uses (DATABASE_URL, else the embedded one).
const handle = await openDatabaseForCommand();
try {
  console.log(`seeding ${handle.backend} database at ${handle.location}`);
  await migrate(handle);
  const summary = await seedDemoData(handle.db, new Date(), (line) => console.log(`  ${line}`));
  if (summary.skipped) console.log('  demo data is already there: nothing written');
  else console.log(`  ${summary.runs} runs, ${summary.steps} steps`);
  console.log(`demo run: ${DEMO_RUN_UUID}`);
} finally {
  await handle.close();
}
