// Builds the web viewer into dist/web: its typed operations first (GraphQL Code Generator), then the
// page itself (Vite), then the manifest of its operations beside it for the service to register.
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { generateWebOperations } from './web-codegen.mjs';

// Always the production build of the page (React's too), whatever NODE_ENV the caller runs under
// (the tests run with NODE_ENV=test).
process.env.NODE_ENV = 'production';
const { build } = await import('vite');

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
await generateWebOperations();
await build({ configFile: join(root, 'web', 'vite.config.ts'), mode: 'production', logLevel: 'warn' });
copyFileSync(
  join(root, 'web', 'src', 'gql', 'persisted-documents.json'),
  join(root, 'dist', 'web', 'persisted-documents.json'),
);

// Each text file also compressed, once, at build time: the service answers the variant the browser accepts.
const out = join(root, 'dist', 'web');
for (const file of readdirSync(out, { recursive: true, encoding: 'utf8' })) {
  if (!/\.(js|css|html|svg|json)$/.test(file) || file === 'persisted-documents.json') continue;
  const body = readFileSync(join(out, file));
  writeFileSync(
    join(out, `${file}.br`),
    brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
  );
  writeFileSync(join(out, `${file}.gz`), gzipSync(body, { level: 9 }));
}
