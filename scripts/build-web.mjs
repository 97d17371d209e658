// Builds the web viewer into dist/web: its typed operations first (GraphQL Code Generator), then the
// page itself (Vite), then the manifest of its operations beside it for the service to register.
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
