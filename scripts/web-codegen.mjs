// Types the web viewer's operations from schema.graphql (GraphQL Code Generator's client preset, with
// persisted documents: web/src/gql/persisted-documents.json is the viewer's trusted-documents manifest).
// Run by the viewer's build and before the type-check; the output is not committed.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from '@graphql-codegen/cli';
import config from '../web/codegen.json' with { type: 'json' };

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function generateWebOperations() {
  await generate({ ...config, cwd: root }, true);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await generateWebOperations();
}
