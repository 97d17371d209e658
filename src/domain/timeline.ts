import type { ToolOutcome } from './tool-outcome.ts';

/** The outcome a timeline entry shows; the same strings as `ToolOutcome`. */
export const TimelineOutcome = {
  OUTCOME_OK: 'ok',
  OUTCOME_FAILED: 'failed',
  OUTCOME_CANCELLED: 'cancelled',
} as const satisfies Record<string, ToolOutcome>;

export type TimelineOutcome = (typeof TimelineOutcome)[keyof typeof TimelineOutcome];
