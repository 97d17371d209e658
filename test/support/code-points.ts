/**
 * Names compared code point by code point, written independently of the
 * domain's `compareNames` (which works on UTF-16 units) so that tests can hold
 * it, and the database's `collate "C"`, to the order it claims.
 */
export function compareByCodePoints(left: string, right: string): number {
  const [a, b] = [
    Array.from(left, (char) => char.codePointAt(0) ?? 0),
    Array.from(right, (char) => char.codePointAt(0) ?? 0),
  ];
  for (let i = 0; i < Math.min(a.length, b.length); i += 1)
    if (a[i] !== b[i]) return (a[i] ?? 0) - (b[i] ?? 0);
  return a.length - b.length;
}
