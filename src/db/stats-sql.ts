import { type SQL, sql } from 'drizzle-orm';
import { BUCKET_ANCHOR_MS, BUCKET_MS, type BucketSpec, type TimeBucket } from '../domain/time-buckets.ts';

/** `column in (...)`, or nothing (null) when no value is asked for. */
export function inList(column: SQL, values: readonly string[] | null | undefined): SQL | null {
  if (!values?.length) return null;
  return sql`${column} in (${sql.join(
    values.map((v) => sql`${v}`),
    sql`, `,
  )})`;
}

/** The SQL for a bucket index from an epoch-milliseconds expression: the domain's `bucketIndex`, in the database. */
export function bucketSql(spec: BucketSpec, epochMs: SQL): SQL {
  return sql`floor((${epochMs} + ${sql.raw(String(spec.shiftMs))}) / ${sql.raw(String(spec.sizeMs))})::bigint`;
}

/** The epoch milliseconds of the start of the hour, day or week (from Monday) that holds an instant: the units the buckets and rollups share. */
export function unitStartSql(epochMs: SQL, unit: TimeBucket): SQL {
  const size = sql.raw(String(BUCKET_MS[unit]));
  const anchor = sql.raw(String(BUCKET_ANCHOR_MS[unit]));
  return sql`(floor((${epochMs} - ${anchor}) / ${size}) * ${size} + ${anchor})`;
}

/** Epoch milliseconds of a timestamptz column. */
export function epochMsSql(column: SQL): SQL {
  return sql`(extract(epoch from ${column}) * 1000)`;
}
