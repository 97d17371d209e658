import { causes, sqlState } from './db/faults.ts';

/**
 * What the service writes to its logs. Never payloads, prompts, arguments,
 * tool output or key material: an error is logged by its name, its codes and
 * where it was raised, never by its message, since driver and parser messages
 * quote the values they choked on (a failed statement quotes its parameters).
 */

/** The kind of a failed statement, e.g. `insert run_steps`, from its text: never its values. */
function statementKind(text: string): string | undefined {
  const verb = /^\s*(select|insert|update|delete|with)\b/i.exec(text)?.[1]?.toLowerCase();
  if (!verb) return undefined;
  const table = /\b(?:into|from|update)\s+"?([a-z_][a-z0-9_]*)/i.exec(text)?.[1];
  return table ? `${verb} ${table}` : verb;
}

function failedQueryText(error: unknown): string | undefined {
  // Drizzle wraps the driver's error with the statement it sent ("Failed query: <sql>\nparams: ...").
  for (const cause of causes(error)) {
    if (cause && typeof cause === 'object' && 'query' in cause && typeof cause.query === 'string') {
      return cause.query;
    }
  }
  return undefined;
}

/** Stack frames only: the first line of a stack repeats the message. */
function frames(error: Error, count: number): string[] {
  return (error.stack ?? '')
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .slice(0, count)
    .map((line) => line.trim());
}

/** One safe line (and a few frames) describing an error. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return `a thrown ${typeof error}`;
  const chain = causes(error).filter((cause): cause is Error => cause instanceof Error);
  const parts = [chain.map((cause) => cause.name).join(' < ')];
  const code = 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  const state = sqlState(error);
  if (code && code !== state) parts.push(`code ${code}`);
  if (state) parts.push(`sqlstate ${state}`);
  const query = failedQueryText(error);
  const kind = query ? statementKind(query) : undefined;
  if (kind) parts.push(`statement ${kind}`);
  const lines = [parts.join(', ')];
  // The innermost error's frames say where it was raised.
  for (const frame of frames(chain.at(-1) ?? error, 5)) lines.push(`    ${frame}`);
  return lines.join('\n');
}

function describe(value: unknown): string {
  return typeof value === 'string' ? value : describeError(value);
}

export interface Logger {
  debug(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

/** The service's logger: strings as they are, errors as `describeError` tells them, nothing else. */
export function createLogger(
  write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Logger {
  const at =
    (level: string) =>
    (...args: unknown[]) =>
      write(`${new Date().toISOString()} ${level} ${args.map(describe).join(' ')}`);
  return { debug: () => {}, info: at('info'), warn: at('warn'), error: at('error') };
}
