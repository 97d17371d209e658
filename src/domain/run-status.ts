export const RUN_STATUSES = [
  'queued',
  'running',
  'waiting_for_approval',
  'waiting_for_input',
  'completed',
  'failed',
  'cancelled',
] as const;

export type RunStatus = (typeof RUN_STATUSES)[number];

/** The statuses a run may start in: it ends only through finishRun or a cancel. */
export const STARTING_RUN_STATUSES = ['queued', 'running'] as const satisfies readonly RunStatus[];
export type StartingRunStatus = (typeof STARTING_RUN_STATUSES)[number];

export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];

export function isTerminalStatus(status: RunStatus): boolean {
  return TERMINAL_RUN_STATUSES.includes(status);
}

export const TERMINATION_REASONS = [
  'completed',
  'max_iterations',
  'budget_exhausted',
  'policy_denied',
  'approval_denied',
  'provider_failed',
  'cancelled',
  'retries_exhausted',
  'not_retryable',
  'context_truncated',
] as const;

export type TerminationReason = (typeof TERMINATION_REASONS)[number];
