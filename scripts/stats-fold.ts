// npm run stats:fold: folds every tool call written and not folded yet into the statistics' rollups,
// batch after batch, with a line per batch. The service does the same by itself; this is for an
// operator who wants the rollups caught up now (after a bulk load, say).
import { openDatabaseForCommand } from '../src/db/command.ts';
import { pendingToolCallChanges } from '../src/db/tool-call-changes.ts';
import { foldEverything } from '../src/ledger/stats-folder.ts';

const handle = await openDatabaseForCommand();
try {
  const { changes } = await pendingToolCallChanges(handle.db);
  console.log(`folding ${handle.backend} database at ${handle.location}: ${changes} changes not folded yet`);
  const started = performance.now();
  const { folded, lockedOut } = await foldEverything(handle.db, {
    progress: (sum) => console.log(`  folded ${sum} of ${Math.max(sum, changes)}`),
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (lockedOut) {
    console.error(
      `FOLD_LOCKED: another instance kept the fold's lock; folded ${folded} changes in ${seconds} s`,
    );
    process.exitCode = 2;
  } else {
    console.log(`folded ${folded} changes in ${seconds} s; nothing left to fold`);
  }
} catch (error) {
  console.error(`FOLD_FAILED: ${error instanceof Error ? error.name : 'unknown'}`);
  process.exitCode = 1;
} finally {
  await handle.close();
}
