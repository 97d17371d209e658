import type { TestProject } from 'vitest/node';
import { generateTestOperations } from './support/codegen.ts';
import { ensurePgliteTemplates, ensurePostgresTemplate } from './support/databases.ts';

/**
 * Once per run, before any test file loads: the typed operations the tests
 * import, and the migrated templates every test database is copied from. Each
 * is made only when what it is made from changed since the last run.
 */
export default async function setup(project: TestProject): Promise<void> {
  await generateTestOperations();
  await ensurePgliteTemplates();
  project.provide('postgresTemplate', await ensurePostgresTemplate());
}
