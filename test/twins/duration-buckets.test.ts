// Twins: the duration buckets of the rollup's histogram are written twice, as `durationBucket` in
// src/domain/duration-histogram.ts (which reads percentiles back) and as the SQL function
// `tool_duration_bucket` of the migrations (which the rollup triggers fill with).
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
import { DURATION_THRESHOLDS_MS, durationBucket } from '../../src/domain/duration-histogram.ts';
import { backendNames, openTestDatabase } from '../support/databases.ts';

describe.each(backendNames)(
  'tool_duration_bucket (SQL) agrees with durationBucket (TypeScript) (%s)',
  (backend) => {
    it('for every duration up to 2,000 ms and around every threshold', async () => {
      const database = await openTestDatabase(backend);
      try {
        const probes = new Set<number>();
        for (let ms = 0; ms <= 2_000; ms += 1) probes.add(ms);
        for (const t of DURATION_THRESHOLDS_MS) for (const d of [-1, 0, 1]) probes.add(Math.max(0, t + d));
        probes.add(2_000_000_000);
        const values = [...probes];
        const rows = await selectRows<{ ms: number; bucket: number }>(
          database.handle.db,
          sql`select ms, tool_duration_bucket(ms) as bucket from unnest(${`{${values.join(',')}}`}::int[]) as ms`,
        );
        expect(rows).toHaveLength(values.length);
        for (const row of rows) expect([row.ms, row.bucket]).toEqual([row.ms, durationBucket(row.ms)]);
      } finally {
        await database.dispose();
      }
    });
  },
);
