import { generateTestOperations } from './support/codegen.ts';

/** Once per run, before any test file loads: the typed operations the tests import. */
export default async function setup(): Promise<void> {
  await generateTestOperations();
}
