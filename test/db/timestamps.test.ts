import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
import { isoInstantOfTimestamp } from '../../src/db/timestamps.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

const INSTANTS = [
  '2026-12-03 05:18:10.123456+00',
  '2026-12-03 05:18:10.999999+00',
  '2026-12-03 05:18:10.1+00',
  '2026-12-03 05:18:10.0009+00',
  '2026-12-03 05:18:10+00',
  '1970-01-01 00:00:00+00',
  '9999-12-31 23:59:59.999999+00',
  '2024-02-29 23:59:59.5+00',
];

describe('a timestamptz as the DateTime scalar writes it', () => {
  it('reads text in UTC as a Date would, keeping whole milliseconds', () => {
    for (const text of INSTANTS) expect(isoInstantOfTimestamp(text)).toBe(new Date(text).toISOString());
  });

  it('reads any other offset, and a Date, through Date', () => {
    for (const text of [
      '2026-12-03 05:18:10.123456+05:30',
      '2026-12-03 05:18:10-03',
      '2026-12-03T05:18:10Z',
    ]) {
      expect(isoInstantOfTimestamp(text)).toBe(new Date(text).toISOString());
    }
    const date = new Date(Date.UTC(2026, 11, 3, 5, 18, 10, 7));
    expect(isoInstantOfTimestamp(date)).toBe('2026-12-03T05:18:10.007Z');
  });
});

describe.each(backendNames)('timestamps as the driver returns them (%s)', (backend) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
  });
  afterAll(async () => database?.dispose());

  it('become the instant the database writes in UTC, to the millisecond', async () => {
    for (const text of INSTANTS) {
      const [row] = await selectRows<{ value: string | Date; expected: string }>(
        database.handle.db,
        sql`select ${text}::timestamptz as value,
                   to_char(${text}::timestamptz at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as expected`,
      );
      expect(row && isoInstantOfTimestamp(row.value)).toBe(row?.expected);
    }
  });
});
