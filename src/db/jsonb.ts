import { compareNames } from '../domain/name-order.ts';

/**
 * A JSON value with its objects' keys in the order jsonb keeps them: shorter
 * keys first (by their UTF-8 bytes), keys of one length in byte order (which
 * is code point order). A value read back from a jsonb column comes in this
 * order; a value as a writer built it, in the order it was built. Answering a
 * write with this form makes its answer byte for byte the answer of a replay,
 * which reads the stored row.
 */
export function inJsonbKeyOrder<T>(value: T): T {
  return reordered(value) as T;
}

function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value).sort(([a], [b]) => compareJsonbKeys(a, b));
  const result: Record<string, unknown> = {};
  for (const [key, item] of entries) result[key] = reordered(item);
  return result;
}

/** jsonb's order of object keys: by length in UTF-8 bytes, then bytewise. */
export function compareJsonbKeys(left: string, right: string): number {
  const byLength = Buffer.byteLength(left, 'utf8') - Buffer.byteLength(right, 'utf8');
  return byLength !== 0 ? byLength : compareNames(left, right);
}
