import { InvalidInputError, RunTerminalError } from './errors.ts';
import { checkOneOf } from './limits.ts';
import {
  isTerminalStatus,
  type RunStatus,
  TERMINATION_REASONS,
  type TerminationReason,
} from './run-status.ts';
import type { RunStep } from './run-step.ts';

export interface RunState {
  uuid: string;
  status: RunStatus;
  finishedAt: Date | null;
}

/**
 * When the call behind a step began: it ended at occurredAt after durationMs,
 * and before that, when the call opened the session it ran on (or waited for
 * one that never opened), sessionStartMs went by.
 */
export function callStartedAt(step: RunStep): Date {
  const sessionStart = step.metadata.sessionStartMs;
  const waited =
    typeof sessionStart === 'number' && Number.isSafeInteger(sessionStart) && sessionStart > 0
      ? sessionStart
      : 0;
  return new Date(step.occurredAt.getTime() - step.durationMs - waited);
}

/**
 * A terminal run takes no more steps, with one exception: the tool steps of
 * calls that were already in flight when the run was cancelled. That is how a
 * cut-off call's `cancelled` outcome reaches the ledger.
 */
export function checkRunAcceptsSteps(run: RunState, steps: readonly RunStep[]): void {
  if (!isTerminalStatus(run.status)) return;
  for (const step of steps) {
    const inFlight =
      run.status === 'cancelled' &&
      (step.kind === 'tool' || step.kind === 'tool_write') &&
      run.finishedAt !== null &&
      callStartedAt(step) < run.finishedAt;
    if (!inFlight) {
      throw new RunTerminalError(
        run.uuid,
        run.status,
        run.status === 'cancelled'
          ? 'it accepts only tool steps of calls started before it was cancelled'
          : 'it accepts no more steps',
      );
    }
  }
}

/** A tool is called inside a run that has not ended; a call's step after a cancel is for calls already on the wire. */
export function checkRunTakesCalls(run: RunState): void {
  if (isTerminalStatus(run.status)) throw new RunTerminalError(run.uuid, run.status, 'it takes no new calls');
}

/** A run ends once: terminal states are final. */
export function checkRunCanEnd(run: RunState): void {
  if (isTerminalStatus(run.status)) throw new RunTerminalError(run.uuid, run.status, 'it has already ended');
}

/** Only an operator's cancel ends a run as cancelled, and a cancel is always the reason. */
export function checkTermination(status: RunStatus, reason: TerminationReason): void {
  checkOneOf(reason, TERMINATION_REASONS, 'terminationReason');
  if (!isTerminalStatus(status)) {
    throw new InvalidInputError('RUN_STATUS_NOT_TERMINAL', `${status} is not a terminal status`, 'status');
  }
  if ((status === 'cancelled') !== (reason === 'cancelled')) {
    throw new InvalidInputError(
      'TERMINATION_MISMATCH',
      'a run ends cancelled exactly when its termination reason is cancelled',
      'terminationReason',
    );
  }
}
