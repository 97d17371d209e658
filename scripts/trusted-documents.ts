// npm run documents:manifest [-- --out FILE] [GLOB...]: the trusted documents manifest, as a frontend's
// build writes it with GraphQL Code Generator's client preset (`persistedDocuments: true`): a JSON object of
// sha256 hash -> document. Default: the client operations in test/contract/operations, written to
// trusted-documents.json. Start the service with RUNLEDGER_TRUSTED_DOCUMENTS=<that file> to accept only them.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from '@graphql-codegen/cli';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Generates the manifest of the operations in `documents` (globs) into `out`; returns the number of operations. */
export async function writeTrustedDocuments(documents: string[], out: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'runledger-documents-'));
  try {
    await generate(
      {
        cwd: root,
        schema: join(root, 'schema.graphql'),
        documents,
        generates: {
          [`${dir}/`]: {
            preset: 'client',
            presetConfig: { persistedDocuments: { hashAlgorithm: 'sha256' } },
            config: { scalars: { DateTime: 'string', SafeInt: 'number', JSON: 'unknown' } },
          },
        },
        silent: true,
        errorsOnly: true,
        overwrite: true,
      },
      true,
    );
    const manifest = join(dir, 'persisted-documents.json');
    copyFileSync(manifest, out);
    return Object.keys(JSON.parse(readFileSync(out, 'utf8')) as object).length;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const outAt = args.indexOf('--out');
  const out = resolve(outAt >= 0 ? (args[outAt + 1] ?? '') : join(root, 'trusted-documents.json'));
  const globs = args.filter((_arg, i) => outAt < 0 || (i !== outAt && i !== outAt + 1));
  const documents = globs.length > 0 ? globs : [join(root, 'test', 'contract', 'operations', '*.graphql')];
  const count = await writeTrustedDocuments(documents, out);
  console.log(`wrote ${count} trusted documents to ${out}`);
}
