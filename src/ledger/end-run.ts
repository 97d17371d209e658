import type { Database } from '../db/connection.ts';
import { lockRun, setTerminal } from '../db/run-writes.ts';
import type { RunRow } from '../db/runs.ts';
import { RunNotFoundError } from '../domain/errors.ts';
import {
  cancellableOwners,
  type Owners,
  recordableOwners,
  requirePermission,
  requireSomeCancelPermission,
} from '../domain/permissions.ts';
import { checkRunCanEnd, checkTermination } from '../domain/run-lifecycle.ts';
import type { RunStatus, TerminationReason } from '../domain/run-status.ts';
import { checkUuid } from '../domain/uuid.ts';
import type { Scope } from './scope.ts';

export interface RunEnding {
  runUuid: string;
  status: RunStatus;
  reason: TerminationReason;
  finishedAt?: Date;
  /** The owners whose runs the caller may end (null: any); a run it may not end is not found. Omitted by trusted writers only. */
  owners?: Owners;
}

/** Ends a run in a terminal status. A run ends once; ending it again is refused and changes nothing. */
export function endRun(db: Database, ending: RunEnding): Promise<RunRow> {
  checkTermination(ending.status, ending.reason);
  return db.transaction(async (tx) => {
    const run = await lockRun(tx, ending.runUuid, ending.owners ?? null);
    if (!run) throw new RunNotFoundError(ending.runUuid);
    checkRunCanEnd({ uuid: run.uuid, status: run.status as RunStatus, finishedAt: run.finishedAt });
    const row = await setTerminal(tx, run.id, {
      status: ending.status,
      reason: ending.reason,
      finishedAt: ending.finishedAt ?? new Date(),
    });
    if (!row) throw new RunNotFoundError(ending.runUuid);
    return row;
  });
}

/** The actor finishes one of its own runs. */
export async function finishRun(
  { db, actor, events }: Scope,
  input: { uuid: string; status: RunStatus; terminationReason: TerminationReason },
): Promise<RunRow> {
  requirePermission(actor, 'record');
  const run = await endRun(db, {
    runUuid: checkUuid(input.uuid, 'uuid'),
    status: input.status,
    reason: input.terminationReason,
    owners: recordableOwners(actor),
  });
  await events?.runChanged(run.uuid);
  return run;
}

/**
 * An operator's cancel: the run ends `cancelled`, then the calls still on the
 * wire for it are cut off, here and (through the notice) on every other
 * instance. The run is cancelled first, so that the cut-off calls find it so
 * when they record their steps (which a cancelled run still takes from calls
 * started before it ended).
 */
export async function cancelRun(
  { db, actor, events }: Scope,
  input: { uuid: string },
  inFlight: { abortCallsOf(runUuid: string): number },
): Promise<RunRow> {
  requireSomeCancelPermission(actor);
  const run = await endRun(db, {
    runUuid: checkUuid(input.uuid, 'uuid'),
    status: 'cancelled',
    reason: 'cancelled',
    owners: cancellableOwners(actor),
  });
  inFlight.abortCallsOf(run.uuid);
  await events?.runCancelled(run.uuid);
  await events?.runChanged(run.uuid);
  return run;
}
