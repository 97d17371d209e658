import type { DocumentNode } from 'graphql';
import { RequestLimits } from '../domain/limits.ts';

/**
 * Parsed documents and parse errors by query text, bounded in bytes rather
 * than in entries: yoga's default keeps 1,024 of each whatever their size, so
 * distinct large texts could hold gigabytes. Only requests whose key is known
 * reach the parser (authentication.ts), so nobody without a key fills them.
 */

/** A least-recently-used map whose entries each weigh some bytes, kept under a total. */
export class ByteBoundedCache<T> {
  readonly #entries = new Map<string, { value: T; bytes: number }>();
  #bytes = 0;

  constructor(
    readonly maxBytes: number,
    private readonly weigh: (key: string, value: T) => number,
  ) {}

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): T | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    // Most recently used last: eviction takes from the front.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: T): void {
    const bytes = this.weigh(key, value);
    this.#drop(key);
    // One entry never takes more than an eighth: a few large texts cannot push out everyone else's.
    if (bytes > this.maxBytes / 8) return;
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.bytes;
    }
  }

  #drop(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }
}

/** Heap bytes of one parsed AST node with its location and tokens, measured with graphql 16 (about 256). */
const BYTES_PER_NODE = 256;

function nodeCount(value: unknown): number {
  if (Array.isArray(value)) {
    let n = 0;
    for (const item of value) n += nodeCount(item);
    return n;
  }
  if (typeof value !== 'object' || value === null || !('kind' in value)) return 0;
  let n = 1;
  for (const [key, child] of Object.entries(value)) if (key !== 'loc') n += nodeCount(child);
  return n;
}

/** A JavaScript string holds two bytes a character. */
const textBytes = (text: string) => text.length * 2;

/** What one parsed document costs: its text and its nodes. */
export function documentBytes(text: string, document: DocumentNode): number {
  return textBytes(text) + nodeCount(document) * BYTES_PER_NODE;
}

/** The caches yoga's parser uses, each bounded in bytes (RequestLimits.parseCacheBytes). */
export function boundedParseCaches(): {
  documentCache: ByteBoundedCache<DocumentNode>;
  errorCache: ByteBoundedCache<unknown>;
  validationCache: true;
} {
  return {
    documentCache: new ByteBoundedCache<DocumentNode>(RequestLimits.parseCacheBytes, documentBytes),
    // An error keeps its source, the whole text.
    errorCache: new ByteBoundedCache<unknown>(
      RequestLimits.parseErrorCacheBytes,
      (text) => textBytes(text) + 1_024,
    ),
    validationCache: true,
  };
}
