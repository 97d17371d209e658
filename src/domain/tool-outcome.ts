import { isOneOf } from './one-of.ts';

/**
 * What became of one tool call. These strings travel unchanged from this enum
 * to the database, the timeline, the label keys and the GraphQL enum's values.
 */
export const ToolOutcome = {
  Ok: 'ok',
  Failed: 'failed',
  Cancelled: 'cancelled',
} as const;

export type ToolOutcome = (typeof ToolOutcome)[keyof typeof ToolOutcome];

export const TOOL_OUTCOMES: readonly ToolOutcome[] = Object.freeze(Object.values(ToolOutcome));

export function isToolOutcome(value: unknown): value is ToolOutcome {
  return isOneOf(value, TOOL_OUTCOMES);
}

/** The old boolean, derived: true exactly when the call did not end `ok`. */
export function isErrorOutcome(outcome: ToolOutcome): boolean {
  return outcome !== ToolOutcome.Ok;
}

/** What a caller that only knows the boolean meant: it never knew about cancels. */
export function outcomeFromIsError(isError: boolean): ToolOutcome {
  return isError ? ToolOutcome.Failed : ToolOutcome.Ok;
}
