import { readFileSync, writeFileSync } from 'node:fs';
import { printContract } from '../src/graphql/schema.ts';

// npm run schema:print rewrites schema.graphql; npm run schema:check fails when it drifts from the code.
const file = new URL('../schema.graphql', import.meta.url);
const printed = printContract();
if (process.argv.includes('--check')) {
  const committed = readFileSync(file, 'utf8');
  if (committed !== printed) {
    console.error(
      'schema.graphql differs from the schema the code builds: run `npm run schema:print` and review the diff.',
    );
    process.exit(1);
  }
  console.log('schema.graphql matches the code');
} else {
  writeFileSync(file, printed);
  console.log('wrote schema.graphql');
}
