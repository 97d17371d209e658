/**
 * Whether a value is one of a closed set of words (step kinds, outcomes,
 * permissions, buckets...): every set's type guard and check ask this.
 */
export function isOneOf<T extends string>(value: unknown, allowed: readonly T[]): value is T {
  return typeof value === 'string' && (allowed as readonly string[]).includes(value);
}
