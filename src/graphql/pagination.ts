import { Limits } from '../domain/limits.ts';
import { badUserInput } from './errors.ts';

/** `first` as a row count: the default when absent, refused when negative or over the maximum. */
export function pageSize(first: number | null | undefined): number {
  if (first === null || first === undefined) return Limits.defaultPageSize;
  if (!Number.isInteger(first) || first < 0 || first > Limits.maxPageSize) {
    throw badUserInput(`first must be between 0 and ${Limits.maxPageSize}`, 'first');
  }
  return first;
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
