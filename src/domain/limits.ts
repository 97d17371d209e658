import { isStorableText, utf8Bytes } from './bounding.ts';
import { InvalidInputError } from './errors.ts';
import { isOneOf } from './one-of.ts';

/**
 * Every limit of the service, in one place: what a client may send (`Limits`),
 * what one statistics query may ask (`STATS_LIMITS`) and what one GraphQL
 * request may ask (`RequestLimits`). The HTTP server's own limits (times,
 * connections, headers) are settings, in src/transport.ts.
 */

/** Limits on what a client may send; each refusal names the field. */
export const Limits = {
  nameLength: 200,
  /** An MCP server's identifier, a model name, an API key's actor. */
  shortNameLength: 100,
  finishReasonLength: 64,
  idempotencyKeyLength: 200,
  /** A page of a connection (runs, steps): `first`. */
  defaultPageSize: 20,
  maxPageSize: 100,
  /**
   * A run's whole timeline in one list (`Run.timeline`): refused above this
   * many steps, never cut short; longer runs page with `Run.timelinePage`.
   */
  maxTimelineSteps: 10_000,
  /** A page of `Run.timelinePage`: `first`. */
  defaultTimelinePageSize: 500,
  maxTimelinePageSize: 2_000,
  /** A callTool deadline, in milliseconds. */
  defaultToolCallTimeoutMs: 60_000,
  maxToolCallTimeoutMs: 600_000,
  /** A registered MCP server: its URL, its program's arguments (how many, how long each). */
  maxServerUrlLength: 2_000,
  maxServerArgs: 50,
  maxServerArgLength: 1_000,
  maxServerHeaders: 20,
  maxRound: 100_000,
  /** About 24 days: the longest duration an integer column of milliseconds holds comfortably. */
  maxDurationMs: 2_000_000_000,
  /** Encoded JSON bytes of a tool call's arguments. */
  maxArgumentsBytes: 100_000,
  /** Encoded JSON bytes of a step's payload or metadata. */
  maxPayloadBytes: 1_000_000,
  maxBatchSteps: 1_000,
  maxTokens: 100_000_000,
  maxCost: 1_000_000,
  /** The last sequence a run can hold: steps are numbered in a 32-bit integer column. */
  maxSequence: 2_147_483_647,
  /** A run's token totals: the largest integer every JSON client reads exactly (2^53 - 1). */
  maxRunTokens: Number.MAX_SAFE_INTEGER,
  /** The instants a DateTime may name: 1970-01-01T00:00:00.000Z ... 9999-12-31T23:59:59.999Z. */
  earliestInstantMs: Date.UTC(1970, 0, 1),
  latestInstantMs: Date.UTC(9999, 11, 31, 23, 59, 59, 999),
  /** How far in the future a client clock may place a step. */
  maxClockSkewMs: 5 * 60_000,
  /** API keys whose actor the service remembers between requests (per database). */
  rememberedApiKeys: 1_000,
} as const;

/** What one statistics query may ask. */
export const STATS_LIMITS = {
  defaultRangeDays: 30,
  maxRangeDays: 400,
  maxBuckets: 2_000,
  maxGroups: 500,
  defaultGroups: 100,
  maxUtcOffsetMinutes: 14 * 60,
} as const;

/**
 * Requests that last (Subscription.runEvents streams, Mutation.awaitDecision
 * waits): how many may be open at once, so that one key cannot hold every
 * connection, and how they keep themselves honest. Refusals:
 * TOO_MANY_SUBSCRIPTIONS / TOO_MANY_WAITS (the actor's share is used up),
 * SUBSCRIPTIONS_FULL / WAITS_FULL (the process's).
 */
export const LIVE_LIMITS = {
  /** Streams one actor may hold open on one instance. */
  maxSubscriptionsPerActor: 100,
  /** Streams one instance holds open for everyone together. */
  maxSubscriptionsPerProcess: 2_000,
  /** Steps read from the table per statement while a stream catches up. */
  stepsPerRead: 100,
  /** A stream re-reads its run at least this often, even when no notice came (one lost with a crashed writer). */
  recheckMs: 15_000,
  /** awaitDecision calls one actor may hold waiting at once on one instance (TOO_MANY_WAITS). */
  maxWaitsPerActor: 100,
  /** awaitDecision calls one instance holds waiting for everyone together (WAITS_FULL). */
  maxWaitsPerProcess: 2_000,
  /**
   * How often an instance re-reads the keys its streams and waits hold: a revoked or deleted key's
   * streams and waits end within this (plus one statement), on every instance.
   */
  keyRecheckMs: 500,
} as const;

/** What one GraphQL request may ask; each refusal has its own code (see graphql/errors.ts). */
export const RequestLimits = {
  maxDepth: 12,
  maxCost: 50_000,
  maxAliases: 15,
  maxTokens: 5_000,
  maxDirectives: 20,
  /** A request body: room for a batch of 1,000 steps or a 10 MB tool result, which is bounded, not refused. */
  maxBodyBytes: 16 * 1024 * 1024,
  /**
   * The query text of one operation, in UTF-8 bytes, comments included (the token limit does not count
   * comments): the largest operation of the contract is under 4 KB. Refused before it is parsed.
   */
  maxQueryBytes: 100_000,
  /** Parsed documents kept for reuse, all together, in estimated heap bytes. */
  parseCacheBytes: 32 * 1024 * 1024,
  /** Parse errors kept for reuse (each keeps its text), all together. */
  parseErrorCacheBytes: 4 * 1024 * 1024,
} as const;

/**
 * What one OTLP export request (`POST /v1/traces`) may send. A body past a
 * limit is refused with HTTP 413 and nothing of it is stored.
 */
export const OtlpLimits = {
  /** The body as sent, compressed or not: the same bound as a GraphQL request. */
  maxBodyBytes: RequestLimits.maxBodyBytes,
  /** A gzip body once inflated: inflating stops here, so a small body that would inflate to gigabytes costs no more. */
  maxInflatedBytes: 32 * 1024 * 1024,
  /** Spans in one request (an SDK's batch holds 512 by default): OTLP_TOO_MANY_SPANS past it. */
  maxSpans: 10_000,
  /**
   * Values in one request, counted before anything is decoded (OTLP_TOO_MANY_VALUES past it):
   * in protobuf every message (spans, key-values, attribute values, events, links, ...) and
   * every element of a repeated field; in JSON every value (objects, arrays, strings,
   * numbers, literals). Measured (Node 20): 250,000 empty events, the dearest value,
   * cost +66 MB of heap for the whole request; with 31 MB of event names besides, +88 MB;
   * 10,000 spans holding the rest in 30 MB of attributes, +118 MB (storing the spans on
   * PGlite included). Without it, 16.8 M empty spans in a 32 KB gzip body took 4.8 GB.
   */
  maxValues: 250_000,
} as const;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Names, keys and identifiers are refused, never repaired, when PostgreSQL cannot
 * hold them as sent: two keys that differ only in a lone surrogate would
 * otherwise become one.
 */
export function unstorable(field: string): InvalidInputError {
  return new InvalidInputError(
    'VALUE_INVALID',
    `${field} is not well-formed Unicode, or holds U+0000`,
    field,
  );
}

/** A text a client sends (a URL, a program, an argument): not empty, at most `maxLength`, storable, no control characters. */
export function checkText(value: string, field: string, maxLength: number): string {
  checkString(value, field);
  if (value.length === 0) throw new InvalidInputError('VALUE_EMPTY', `${field} must not be empty`, field);
  if (value.length > maxLength) {
    throw new InvalidInputError('VALUE_TOO_LONG', `${field} is longer than ${maxLength} characters`, field);
  }
  if (!isStorableText(value)) throw unstorable(field);
  if (CONTROL.test(value))
    throw new InvalidInputError('VALUE_INVALID', `${field} contains control characters`, field);
  return value;
}

/** A text of any length (a tool's output is bounded later, never refused for its size). */
export function checkString(value: unknown, field: string): string {
  if (typeof value !== 'string')
    throw new InvalidInputError('VALUE_INVALID', `${field} must be a text`, field);
  return value;
}

export function checkBoolean(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean')
    throw new InvalidInputError('VALUE_INVALID', `${field} must be true or false`, field);
  return value;
}

/**
 * One of a closed set of words (a bucket, a field to group or order by, an
 * outcome): entry points map their own enums to these, and the use cases refuse
 * anything else with a code rather than build a statement of it.
 */
export function checkOneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
  if (isOneOf(value, allowed)) return value;
  throw new InvalidInputError('VALUE_INVALID', `${field} must be one of ${allowed.join(', ')}`, field);
}

/** Each value one of a closed set (see checkOneOf); none (null or undefined) passes. */
export function checkEachOneOf(
  values: readonly unknown[] | null | undefined,
  allowed: readonly string[],
  field: string,
): void {
  for (const value of values ?? []) checkOneOf(value, allowed, field);
}

/** A name, key or identifier: a text of at most 200 characters unless told otherwise. */
export function checkName(value: string, field: string, maxLength: number = Limits.nameLength): string {
  return checkText(value, field, maxLength);
}

export function checkInteger(value: number, field: string, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidInputError(
      'VALUE_OUT_OF_RANGE',
      `${field} must be an integer from ${min} to ${max}`,
      field,
    );
  }
  return value;
}

export function checkNumber(value: number, field: string, min: number, max: number): number {
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new InvalidInputError(
      'VALUE_OUT_OF_RANGE',
      `${field} must be a finite number from ${min} to ${max}`,
      field,
    );
  }
  return value;
}

const MAX_JSON_DEPTH = 64;

function checkJsonShape(value: unknown, field: string, depth: number): void {
  if (depth > MAX_JSON_DEPTH) {
    throw new InvalidInputError('VALUE_TOO_DEEP', `${field} nests deeper than ${MAX_JSON_DEPTH}`, field);
  }
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new InvalidInputError('VALUE_NOT_FINITE', `${field} holds a number that is not finite`, field);
  }
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) checkJsonShape(child, field, depth + 1);
  }
}

/** A JSON value a client sent: finite numbers, at most 64 levels deep, at most `maxBytes` encoded. */
export function checkJson(value: unknown, field: string, maxBytes: number): void {
  checkJsonShape(value, field, 0);
  const size = utf8Bytes(JSON.stringify(value) ?? 'null');
  if (size > maxBytes) {
    throw new InvalidInputError(
      'VALUE_TOO_LARGE',
      `${field} is ${size} bytes as JSON, over ${maxBytes}`,
      field,
    );
  }
}

export function checkNotInFuture(value: Date, field: string, now: Date): Date {
  if (value.getTime() > now.getTime() + Limits.maxClockSkewMs) {
    throw new InvalidInputError('VALUE_IN_FUTURE', `${field} is in the future`, field);
  }
  return value;
}

/** Whether an instant lies in the range every DateTime keeps to (1970-01-01 to 9999-12-31, UTC). */
export function isInstantInRange(value: Date): boolean {
  const ms = value.getTime();
  return ms >= Limits.earliestInstantMs && ms <= Limits.latestInstantMs;
}

/** A run's token total once a request's tokens are added: refused past 2^53 - 1, so every client reads it exactly. */
export function checkRunTokenTotal(total: number, added: number, field: string): void {
  if (total + added > Limits.maxRunTokens) {
    throw new InvalidInputError(
      'VALUE_OUT_OF_RANGE',
      `${field} would take the run past ${Limits.maxRunTokens} tokens`,
      field,
    );
  }
}
