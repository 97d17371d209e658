/**
 * Telling "the database is not there" apart from every other failure, so that
 * a client is told to come back later (HTTP 503) instead of "Unexpected error.".
 */

/** Socket-level failures of reaching the server at all. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * SQLSTATEs of a server that is going away, not taking connections, or did not
 * answer in time: class 08 (connection exception), admin/crash shutdown,
 * "cannot connect now" (starting up or recovering), too many connections, and
 * a statement cancelled by statement_timeout.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014']);

/** What node-postgres says when it gives up on a connection or a pool, in its own words. */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect$/,
  /^Query read timeout$/,
  /^Connection ended unexpectedly$/,
  /is not queryable$/,
  /^Client was closed and is not queryable$/,
  /^Cannot use a pool after calling end on the pool$/,
  /^connect (ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH)/,
];

/** The error and what it wraps (`originalError`, `cause`), outermost first. */
export function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = error;
  // Drizzle and GraphQL wrap the driver's error; a few levels are enough.
  for (let depth = 0; current && depth < 6; depth += 1) {
    chain.push(current);
    if (typeof current !== 'object') break;
    const next: unknown =
      'originalError' in current && current.originalError
        ? current.originalError
        : 'cause' in current
          ? current.cause
          : undefined;
    current = next;
  }
  return chain;
}

function isUnavailableCause(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const code = 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  if (code && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08'))) {
    return true;
  }
  if (error instanceof AggregateError && error.errors.some(isUnavailableCause)) return true;
  const message = error instanceof Error ? error.message : '';
  return DRIVER_MESSAGES.some((pattern) => pattern.test(message));
}

/** True when the error, or anything it wraps, says the database cannot be reached or did not answer in time. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return causes(error).some(isUnavailableCause);
}

/** The PostgreSQL SQLSTATE an error carries, if any: a code that can be logged without the statement's values. */
export function sqlState(error: unknown): string | undefined {
  for (const cause of causes(error)) {
    if (cause && typeof cause === 'object' && 'code' in cause && typeof cause.code === 'string') {
      return cause.code;
    }
  }
  return undefined;
}
