import type { RunPosition } from '../db/runs.ts';
import { parseDateTime } from '../domain/date-time.ts';
import { Limits } from '../domain/limits.ts';
import { isUuid } from '../domain/uuid.ts';
import { badUserInput } from './errors.ts';

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
