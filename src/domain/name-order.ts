/**
 * How names order: by Unicode code point, which is the order of their UTF-8
 * bytes and so PostgreSQL's `collate "C"`, the order the database ranks groups
 * in. JavaScript's `<` compares UTF-16 code units instead, which puts a
 * character beyond U+FFFF (a surrogate pair, D800 to DBFF first) before one
 * from U+E000 to U+FFFF; each unit is moved so that surrogates come last.
 */
export function compareNames(left: string, right: string): number {
  if (left === right) return 0;
  const length = Math.min(left.length, right.length);
  for (let index = 0; index < length; index += 1) {
    const a = left.charCodeAt(index);
    const b = right.charCodeAt(index);
    if (a !== b) return codePointRank(a) - codePointRank(b);
  }
  return left.length - right.length;
}

/** A UTF-16 code unit's place in code point order: D800–DFFF after E000–FFFF, the rest as it is. */
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}
