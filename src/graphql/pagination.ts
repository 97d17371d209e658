import { badUserInput } from './errors.ts';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** `first` as a row count: the default when absent, refused when negative or over the maximum. */
export function pageSize(first: number | null | undefined): number {
  if (first === null || first === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 0 || first > MAX_PAGE_SIZE) {
    throw badUserInput(`first must be between 0 and ${MAX_PAGE_SIZE}`, 'first');
  }
  return first;
}

/** Cursors are opaque to clients: a kind and a JSON value, base64url-encoded. */
export function encodeCursor(kind: string, value: unknown): string {
  return Buffer.from(JSON.stringify([kind, value])).toString('base64url');
}

export function decodeCursor<T>(kind: string, cursor: string, isValue: (value: unknown) => value is T): T {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(decoded) && decoded.length === 2 && decoded[0] === kind && isValue(decoded[1])) {
      return decoded[1];
    }
  } catch {
    // fall through to the refusal
  }
  throw badUserInput('after is not a cursor of this list', 'after');
}

export interface Page<T> {
  edges: Array<{ cursor: string; node: T }>;
  pageInfo: {
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  };
}

/** A page from rows fetched with one extra row, whose presence says there is a next page. */
export function toPage<T>(
  rows: readonly T[],
  size: number,
  hasPrevious: boolean,
  cursorOf: (row: T) => string,
): Page<T> {
  const edges = rows.slice(0, size).map((node) => ({ cursor: cursorOf(node), node }));
  return {
    edges,
    pageInfo: {
      hasNextPage: rows.length > size,
      hasPreviousPage: hasPrevious,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}
