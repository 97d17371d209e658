// Writes what the rollup catalogue (src/domain/outcome-rollups.ts) makes: the
// repeatable definitions in migrations/repeatable/ and the table of
// docs/statistics-design.md. `--check` fails when one is not what it makes.
//
//   npm run rollups:write            # after a change of the catalogue
//   npm run rollups:write -- --check
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPEATABLE_DIR } from '../src/db/migrator.ts';
import { GENERATED_REPEATABLES, withCatalogueTable } from '../src/db/rollup-sql.ts';

const DESIGN_PAGE = fileURLToPath(new URL('../docs/statistics-design.md', import.meta.url));

const read = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

/** Every file the catalogue makes, as it should read. */
function madeFiles(): Array<{ path: string; text: string }> {
  const files = Object.entries(GENERATED_REPEATABLES).map(([file, make]) => ({
    path: join(REPEATABLE_DIR, file),
    text: make(),
  }));
  const page = withCatalogueTable(read(DESIGN_PAGE) ?? '');
  if (page === null) throw new Error('docs/statistics-design.md has no markers for the rollup table');
  return [...files, { path: DESIGN_PAGE, text: page }];
}

const check = process.argv.includes('--check');
const stale = madeFiles().filter(({ path, text }) => read(path) !== text);
if (check && stale.length > 0) {
  console.error(
    `not what the rollup catalogue makes: ${stale.map((f) => f.path).join(', ')} (npm run rollups:write)`,
  );
  process.exit(1);
}
for (const { path, text } of check ? [] : stale) {
  writeFileSync(path, text);
  console.log(`wrote ${path}`);
}
if (check) console.log('what the rollup catalogue makes is up to date');
