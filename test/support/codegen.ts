// The test suites type their operations with GraphQL Code Generator's client preset, generated from the
// committed schema.graphql: `graphql(\`...\`)` in a test file returns a typed document, so a test's result
// and variables types come from the schema instead of being written by hand. Run before the tests (vitest
// globalSetup) and before the type-check (`npm run typecheck`); the output is not committed.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where the typed `graphql()` of the tests is generated. */
export const OPERATIONS_DIR = join(root, 'test', '.generated', 'operations');

/** The hash of the inputs the operations were last generated from: unchanged inputs, nothing to do. */
const STAMP = join(OPERATIONS_DIR, '.inputs.sha256');
const OUTPUTS = ['gql.ts', 'graphql.ts', 'index.ts'];

/** The test files that call `graphql()`, with their text: only these are parsed, which keeps the generation quick. */
function documents(): Map<string, string> {
  const testDir = join(root, 'test');
  const found = new Map<string, string>();
  for (const file of readdirSync(testDir, { recursive: true, encoding: 'utf8' }).sort()) {
    if (!file.endsWith('.test.ts')) continue;
    const text = readFileSync(join(testDir, file), 'utf8');
    if (text.includes('graphql(`')) found.set(join(testDir, file), text);
  }
  return found;
}

/** Everything the output depends on: the schema, the documents, this file (the options) and the generator's versions. */
function inputsHash(docs: Map<string, string>): string {
  const hash = createHash('sha256');
  const add = (name: string, text: string) => hash.update(`${name}\0${text.length}\0${text}\0`);
  add('schema.graphql', readFileSync(join(root, 'schema.graphql'), 'utf8'));
  add('codegen.ts', readFileSync(fileURLToPath(import.meta.url), 'utf8'));
  for (const name of ['@graphql-codegen/cli', '@graphql-codegen/client-preset']) {
    add(name, readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8'));
  }
  for (const [file, text] of docs) add(relative(root, file), text);
  return hash.digest('hex');
}

function isCurrent(hash: string): boolean {
  return (
    existsSync(STAMP) &&
    readFileSync(STAMP, 'utf8').trim() === hash &&
    OUTPUTS.every((file) => existsSync(join(OPERATIONS_DIR, file)))
  );
}

/** Generates the operations unless their inputs are those of the last generation; true when it generated. */
export async function generateTestOperations({ force = false }: { force?: boolean } = {}): Promise<boolean> {
  const docs = documents();
  const hash = inputsHash(docs);
  if (!force && isCurrent(hash)) return false;
  // Loaded only when needed: the generator alone takes about a second to import.
  const { generate } = await import('@graphql-codegen/cli');
  await generate(
    {
      cwd: root,
      schema: join(root, 'schema.graphql'),
      documents: [...docs.keys()],
      generates: {
        [`${OPERATIONS_DIR}/`]: {
          preset: 'client',
          // A test reads what it selected, fragments included.
          presetConfig: { fragmentMasking: false },
          config: {
            useTypeImports: true,
            enumsAsTypes: true,
            scalars: { DateTime: 'string', SafeInt: 'number', JSON: 'unknown' },
            emitLegacyCommonJSImports: false,
          },
        },
      },
      silent: true,
      errorsOnly: true,
      overwrite: true,
    },
    true,
  );
  // Written last: an interrupted generation leaves no stamp, and runs again.
  writeFileSync(STAMP, `${hash}\n`);
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await generateTestOperations({ force: process.argv.includes('--force') });
}
