import type { ToolArtifact, ToolResult } from './tool-result.ts';

export const MAX_CONTENT_BYTES = 50_000;
export const MAX_ARTIFACT_BYTES = 50_000;
export const MAX_ARTIFACT_DEPTH = 64;
export const TRUNCATION_MARKER = `\n…[tool result truncated at ${MAX_CONTENT_BYTES} bytes]`;
export const ARTIFACTS_OMITTED_TITLE = 'Artifacts omitted';

const utf8 = new TextEncoder();
// ignoreBOM: a leading U+FEFF is content, kept like any other character.
const lenientUtf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** Text as valid UTF-8: broken sequences and lone surrogates become U+FFFD. */
export function toValidUtf8(input: string | Uint8Array): string {
  return typeof input === 'string' ? input.toWellFormed() : lenientUtf8.decode(input);
}

/** Cut to at most `maxBytes` of UTF-8 without splitting a character, then mark the cut. */
export function boundContent(input: string | Uint8Array): string {
  const text = toValidUtf8(input);
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
export function boundArtifacts(artifacts: readonly ToolArtifact[]): ToolArtifact[] {
  if (artifacts.length === 0) return [];
  let encoded: string;
  try {
    assertEncodable(artifacts, 0, new Set());
    encoded = JSON.stringify(artifacts.map((a) => ({ title: a.title, type: a.type, content: a.content })));
  } catch (error) {
    const why = error instanceof NotEncodable ? error.message : 'not encodable';
    return omitted(`Artifacts could not be encoded as JSON (${why}).`);
  }
  const size = utf8.encode(encoded).length;
  if (size > MAX_ARTIFACT_BYTES) {
    return omitted(`Artifacts were ${size} bytes as JSON, over the limit of ${MAX_ARTIFACT_BYTES}.`);
  }
  return JSON.parse(encoded) as ToolArtifact[];
}

/**
 * Every tool result passes through here before it is stored. The outcome is
 * kept in every branch: a bounded cancelled result is still cancelled.
 */
export function boundToolResult(result: ToolResult): ToolResult {
  return result.withChannels(boundContent(result.content), boundArtifacts(result.artifacts));
}
