import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const graphqlEntry = createRequire(import.meta.url).resolve('graphql');

// Timing measurements (test/timing): one file at a time, on an otherwise idle machine, after the suite.
export default defineConfig({
  resolve: { alias: { graphql: graphqlEntry } },
  test: {
    include: ['test/timing/**/*.timing.test.ts'],
    // Kills what a test file started and left running (test/support/processes.ts).
    setupFiles: ['test/setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
  },
});
