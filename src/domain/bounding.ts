import type { JsonValue, ToolArtifact, ToolResult } from './tool-result.ts';

export const MAX_CONTENT_BYTES = 50_000;
export const MAX_ARTIFACT_BYTES = 50_000;
export const MAX_ARTIFACT_DEPTH = 64;
export const TRUNCATION_MARKER = `\n…[tool result truncated at ${MAX_CONTENT_BYTES} bytes]`;
export const ARTIFACTS_OMITTED_TITLE = 'Artifacts omitted';

const utf8 = new TextEncoder();

/** The UTF-8 length of text, counted without encoding it. */
export const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');
// ignoreBOM: a leading U+FEFF is content, kept like any other character.
const lenientUtf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** Text as valid UTF-8: broken sequences and lone surrogates become U+FFFD. */
export function toValidUtf8(input: string | Uint8Array): string {
  return typeof input === 'string' ? input.toWellFormed() : lenientUtf8.decode(input);
}

/** What the repair puts in place of a character PostgreSQL cannot hold. */
export const REPLACEMENT_CHARACTER = '\uFFFD';

// U+0000 (text and jsonb cannot hold it) and lone surrogates (the driver would turn them into
// U+FFFD silently, and jsonb refuses their escapes). Without the u flag this matches code units.
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what this finds
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Whether PostgreSQL text and jsonb hold this string exactly as it is: no U+0000, no lone surrogate. */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/** How many characters a repair replaced; a step that needed any says so in `metadata.repairedCharacters`. */
export class RepairCount {
  characters = 0;
}

/**
 * The one repair of text PostgreSQL cannot hold: each U+0000 and each lone
 * surrogate becomes U+FFFD, one for one, and is counted.
 */
export function repairText(text: string, count: RepairCount = new RepairCount()): string {
  if (isStorableText(text)) return text;
  return text.replace(UNSTORABLE, () => {
    count.characters += 1;
    return REPLACEMENT_CHARACTER;
  });
}

/**
 * A JSON value with every string in it repaired, object keys included. A key
 * that the repair makes equal to another key of the same object gets a further
 * U+FFFD, so no member is lost. Anything that is not a string, an array or a
 * plain object is left as it is.
 */
export function repairJson<T>(value: T, count: RepairCount = new RepairCount()): T {
  if (typeof value === 'string') return repairText(value, count) as T;
  if (Array.isArray(value)) return value.map((item) => repairJson(item, count)) as T;
  if (value === null || typeof value !== 'object') return value;
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const entries = Object.entries(value);
  if (entries.every(([key]) => isStorableText(key))) {
    return Object.fromEntries(entries.map(([key, item]) => [key, repairJson(item, count)])) as T;
  }
  const taken = new Set(entries.map(([key]) => key));
  const repaired = entries.map(([key, item]): [string, unknown] => {
    let name = repairText(key, count);
    if (name !== key) {
      while (taken.has(name)) name += REPLACEMENT_CHARACTER;
      taken.add(name);
    }
    return [name, repairJson(item, count)];
  });
  return Object.fromEntries(repaired) as T;
}

/** The marker a repaired step carries among its public facts; nothing when nothing was repaired. */
export function repairFacts(count: RepairCount): { repairedCharacters?: number } {
  return count.characters > 0 ? { repairedCharacters: count.characters } : {};
}

/**
 * Cut to at most `maxBytes` of UTF-8 without splitting a character, then mark
 * the cut. Text PostgreSQL cannot hold is repaired first, so the cut measures
 * what is stored.
 */
export function boundContent(input: string | Uint8Array, count: RepairCount = new RepairCount()): string {
  const text = repairText(typeof input === 'string' ? input : toValidUtf8(input), count);
  // A UTF-16 code unit is at most 3 bytes of UTF-8: short text needs no count.
  if (text.length * 3 <= MAX_CONTENT_BYTES || utf8Bytes(text) <= MAX_CONTENT_BYTES) return text;
  const bytes = utf8.encode(text);
  if (bytes.length <= MAX_CONTENT_BYTES) return text;
  let end = MAX_CONTENT_BYTES;
  // Step back over continuation bytes (10xxxxxx) to the start of a character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return lenientUtf8.decode(bytes.subarray(0, end)) + TRUNCATION_MARKER;
}

class NotEncodable extends Error {}

function assertEncodable(value: unknown, depth: number, seen: Set<object>): void {
  if (depth > MAX_ARTIFACT_DEPTH) throw new NotEncodable(`deeper than ${MAX_ARTIFACT_DEPTH}`);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new NotEncodable('non-finite number');
    return;
  }
  if (typeof value !== 'object') throw new NotEncodable(`a ${typeof value} is not JSON`);
  if (seen.has(value)) throw new NotEncodable('cycle');
  seen.add(value);
  const children = Array.isArray(value) ? value : Object.values(value);
  for (const child of children) assertEncodable(child, depth + 1, seen);
  seen.delete(value);
}

function omitted(reason: string): ToolArtifact[] {
  return [{ title: ARTIFACTS_OMITTED_TITLE, type: 'text', content: reason }];
}

/**
 * Artifacts as stored: JSON-encodable to depth 64 and at most 50,000 bytes
 * encoded, or else one text artifact saying they were omitted.
 */
export function boundArtifacts(
  artifacts: readonly ToolArtifact[],
  count: RepairCount = new RepairCount(),
): ToolArtifact[] {
  if (artifacts.length === 0) return [];
  let encoded: string;
  const repairs = new RepairCount();
  try {
    assertEncodable(artifacts, 0, new Set());
    const repaired = artifacts.map((a) => ({
      title: repairText(a.title, repairs),
      type: a.type,
      content: repairJson<JsonValue>(a.content, repairs),
    }));
    encoded = JSON.stringify(repaired);
  } catch (error) {
    const why = error instanceof NotEncodable ? error.message : 'not encodable';
    return omitted(`Artifacts could not be encoded as JSON (${why}).`);
  }
  const size = utf8Bytes(encoded);
  if (size > MAX_ARTIFACT_BYTES) {
    return omitted(`Artifacts were ${size} bytes as JSON, over the limit of ${MAX_ARTIFACT_BYTES}.`);
  }
  // Counted only when the artifacts are kept.
  count.characters += repairs.characters;
  return JSON.parse(encoded) as ToolArtifact[];
}

/**
 * Every tool result passes through here before it is stored. The outcome is
 * kept in every branch: a bounded cancelled result is still cancelled.
 */
export function boundToolResult(result: ToolResult, count: RepairCount = new RepairCount()): ToolResult {
  return result.withChannels(boundContent(result.content, count), boundArtifacts(result.artifacts, count));
}
