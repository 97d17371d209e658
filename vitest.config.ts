import { createRequire } from 'node:module';
import os from 'node:os';
import { defineConfig } from 'vitest/config';

// One copy of graphql for the whole run: graphql 16 refuses types from "another realm".
const graphqlEntry = createRequire(import.meta.url).resolve('graphql');

export default defineConfig({
  resolve: { alias: { graphql: graphqlEntry } },
  test: {
    include: ['test/**/*.test.ts'],
    // Measurements run alone, after the suite (vitest.timing.config.ts): never beside other tests' load.
    exclude: ['test/timing/**', '**/node_modules/**'],
    // Generates the typed operations of the tests (test/support/codegen.ts) and the migrated templates
    // every test database is copied from (test/support/databases.ts).
    globalSetup: ['test/global-setup.ts'],
    // Kills what a test file started and left running (test/support/processes.ts).
    setupFiles: ['test/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A file per core, not Vitest's default of one less: most of a test's time is spent waiting on
    // PostgreSQL, a service it started or a browser, and on 2 cores the default runs one file at a time.
    maxWorkers: os.availableParallelism(),
  },
});
