import { describe, expect, it } from 'vitest';
import {
  FOLD_BATCH_CHANGES,
  FOLD_BULK_BATCH_CHANGES,
  nextBatchChanges,
} from '../../src/db/tool-call-changes.ts';

describe('the size of the fold’s next batch', () => {
  it('doubles while batches come full, up to the bulk size, and falls back once one is not', () => {
    const sizes = [FOLD_BATCH_CHANGES];
    for (let i = 0; i < 4; i += 1) {
      const last = sizes.at(-1) ?? 0;
      sizes.push(nextBatchChanges(last, last));
    }
    expect(sizes).toEqual([5_000, 10_000, 20_000, 20_000, 20_000]);
    expect(FOLD_BULK_BATCH_CHANGES).toBe(20_000);
    expect(nextBatchChanges(20_000, 19_999)).toBe(FOLD_BATCH_CHANGES);
    expect(nextBatchChanges(10_000, 0)).toBe(FOLD_BATCH_CHANGES);
  });

  it('starts from the size asked, and never shrinks one asked above the bulk size', () => {
    expect(nextBatchChanges(3, 3, 3)).toBe(6);
    expect(nextBatchChanges(6, 2, 3)).toBe(3);
    expect(nextBatchChanges(50_000, 50_000, 50_000)).toBe(50_000);
  });
});
