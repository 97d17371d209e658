import { type SQL, sql } from 'drizzle-orm';
import { BUCKET_ANCHOR_MS, BUCKET_MS, type BucketSpec, type TimeBucket } from '../domain/time-buckets.ts';

/**
 * `column = any(array)`, or nothing (null) when no value is asked for: the
 * values as one array parameter, not one parameter each (a walk's pass names
 * hundreds of owners, configurations, servers and tools; the database reads
 * both alike).
 */
export function inList(column: SQL, values: readonly string[] | null | undefined): SQL | null {
  if (!values?.length) return null;
  return sql`${column} = any(${textArrayLiteral(values)}::text[])`;
}

/** What must be escaped in an element of an array literal that is quoted. */
const ARRAY_ELEMENT_SPECIALS = /[\\"]/g;

/** Values as a PostgreSQL text array literal, each element quoted (so NULL, commas and braces are plain text). */
export function textArrayLiteral(values: readonly string[]): string {
  // Most names hold neither a backslash nor a double quote: then one join, no string per element.
  const plain = values.every((value) => !value.includes('"') && !value.includes('\\'));
  const elements = plain ? values : values.map((value) => value.replace(ARRAY_ELEMENT_SPECIALS, '\\$&'));
  return elements.length === 0 ? '{}' : `{"${elements.join('","')}"}`;
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
