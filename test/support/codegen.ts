// The test suites type their operations with GraphQL Code Generator's client preset, generated from the
// committed schema.graphql: `graphql(\`...\`)` in a test file returns a typed document, so a test's result
// and variables types come from the schema instead of being written by hand. Run before the tests (vitest
// globalSetup) and before the type-check (`npm run typecheck`); the output is not committed.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from '@graphql-codegen/cli';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where the typed `graphql()` of the tests is generated. */
export const OPERATIONS_DIR = join(root, 'test', '.generated', 'operations');

/** The test files that call `graphql()`: only these are parsed, which keeps the generation quick. */
function documents(): string[] {
  const testDir = join(root, 'test');
  return readdirSync(testDir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => join(testDir, file))
    .filter((file) => readFileSync(file, 'utf8').includes('graphql(`'));
}

export async function generateTestOperations(): Promise<void> {
  await generate(
    {
      cwd: root,
      schema: join(root, 'schema.graphql'),
      documents: documents(),
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
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await generateTestOperations();
}
