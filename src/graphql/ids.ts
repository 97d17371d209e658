import { createHash } from 'node:crypto';
import type { RunPosition } from '../db/runs.ts';
import { parseDateTime } from '../domain/date-time.ts';
import { Limits } from '../domain/limits.ts';
import { isUuid } from '../domain/uuid.ts';
import { badUserInput, cursorFilterMismatch } from './errors.ts';

/**
 * Every identifier a client hands back, read in one place: run uuids in
 * queries, global ids (`node`, `nodes`) and cursors (`after`). The UUID rule is
 * the domain's (domain/uuid.ts); a read refuses with BAD_USER_INPUT, a write
 * with its typed VALUE_INVALID error.
 */

/** A run uuid given to a query, lower-cased; BAD_USER_INPUT when it is not a UUID. */
export function requireUuid(value: string, field: string): string {
  if (!isUuid(value)) throw badUserInput(`${field} must be a UUID`, field);
  return value.toLowerCase();
}

/** The types `node(id)` resolves: each registers its name through `nodeTypename`. */
const nodeTypenames = new Set<string>();

export function nodeTypename<Name extends string>(name: Name): Name {
  nodeTypenames.add(name);
  return name;
}

export function encodeGlobalId(typename: string, id: string | number | bigint): string {
  return Buffer.from(`${typename}:${id}`).toString('base64url');
}

export function decodeGlobalId(globalID: string): { typename: string; id: string } {
  const decoded = Buffer.from(globalID, 'base64url').toString('utf8');
  const separator = decoded.indexOf(':');
  const typename = decoded.slice(0, separator);
  const id = decoded.slice(separator + 1);
  // A type that is not a node (McpServer, Query, ...) names nothing node(id) can load.
  if (separator < 1 || !id || !nodeTypenames.has(typename)) {
    throw badUserInput(`${JSON.stringify(globalID)} is not a global id`, 'id');
  }
  return { typename, id };
}

/**
 * Cursors are opaque to clients: a kind, a JSON value and the hash of the
 * filter and order of the list that made it, base64url-encoded. A cursor is
 * a position in one list: under another filter it would silently skip or
 * repeat rows, so it is refused there.
 */
export function encodeCursor(kind: string, value: unknown, listHash: string): string {
  return Buffer.from(JSON.stringify([kind, value, listHash])).toString('base64url');
}

export function decodeCursor<T>(
  kind: string,
  cursor: string,
  isValue: (value: unknown) => value is T,
  listHash: string,
): T {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = null;
  }
  if (Array.isArray(decoded) && decoded.length === 3 && decoded[0] === kind && isValue(decoded[1])) {
    if (decoded[2] !== listHash) throw cursorFilterMismatch();
    return decoded[1];
  }
  throw badUserInput('after is not a cursor of this list', 'after');
}

/** Lists as sets: order and repeats do not change what a filter selects. */
function asSet(values: readonly string[] | null | undefined): string[] | null {
  return values?.length ? [...new Set(values)].sort() : null;
}

/** The hash a cursor carries: what a list selects and in what order, in a canonical form. */
export function listHash(
  order: string,
  filter: Record<string, readonly string[] | Date | string | null | undefined>,
): string {
  const canonical = Object.entries(filter)
    .map(([name, value]): [string, unknown] => [
      name,
      value instanceof Date ? value.toISOString() : Array.isArray(value) ? asSet(value) : (value ?? null),
    ])
    .filter(([, value]) => value !== null)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return createHash('sha256')
    .update(JSON.stringify([order, canonical]))
    .digest('base64url')
    .slice(0, 16);
}

/** The order of a run's steps and of the run list, which their cursors are bound to with the filter. */
const STEP_ORDER = 'sequence asc';
const RUN_ORDER = 'createdAt desc, id desc';

export const stepListHash = (filter: {
  kinds?: readonly string[] | null;
  outcomes?: readonly string[] | null;
}) => listHash(STEP_ORDER, filter);

export const runListHash = (filter: {
  statuses?: readonly string[] | null;
  configurations?: readonly string[] | null;
  owners?: readonly string[] | null;
  createdAfter?: Date | null;
  createdBefore?: Date | null;
  hasToolOutcome?: string | null;
}) => listHash(RUN_ORDER, filter);

/** The steps of a run: after this sequence. */
export const STEP_CURSOR = 'step';
export const isSequence = (value: unknown): value is number =>
  Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= Limits.maxSequence;

/** The newest-first run list: after this position. */
export const RUN_CURSOR = 'run';
export const isRunPosition = (value: unknown): value is RunPosition =>
  typeof value === 'object' &&
  value !== null &&
  parseDateTime((value as RunPosition).createdAt) !== null &&
  Number.isSafeInteger((value as RunPosition).id) &&
  (value as RunPosition).id > 0;
