import { afterAll } from 'vitest';
import { killAllOwned } from './support/processes.ts';

// After the last hook of each test file: whatever a test started and did not stop (it failed or timed
// out before its own cleanup) is killed here, not left running.
afterAll(() => {
  killAllOwned();
});
