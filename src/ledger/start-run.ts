import type { Database } from '../db/connection.ts';
import { insertRunUnlessPresent } from '../db/run-writes.ts';
import { findRunsByUuids, type RunRow } from '../db/runs.ts';
import { RunAlreadyExistsError } from '../domain/errors.ts';
import { checkName, checkOneOf } from '../domain/limits.ts';
import { requirePermission } from '../domain/permissions.ts';
import { STARTING_RUN_STATUSES, type StartingRunStatus } from '../domain/run-status.ts';
import { checkUuid } from '../domain/uuid.ts';
import type { Scope } from './scope.ts';

export interface NewRun {
  uuid?: string;
  owner: string;
  configuration: string;
  status?: StartingRunStatus;
  createdAt?: Date;
}

/**
 * Creates a run for a trusted writer (demo data, imports). Starting again with
 * the same uuid, owner and configuration returns the run already there, so a
 * client may retry a start safely.
 */
export async function createRun(db: Database, run: NewRun): Promise<RunRow> {
  const createdAt = run.createdAt ?? new Date();
  const status = run.status ?? 'running';
  const uuid = run.uuid ?? crypto.randomUUID();
  const row = await insertRunUnlessPresent(db, {
    uuid,
    owner: run.owner,
    configuration: run.configuration,
    status,
    createdAt,
    startedAt: status === 'running' ? createdAt : null,
  });
  if (row) return row;
  const [existing] = await findRunsByUuids(db, [uuid]);
  if (existing && existing.owner === run.owner && existing.configuration === run.configuration)
    return existing;
  throw new RunAlreadyExistsError(uuid);
}

/** Starts a run owned by the actor. */
export async function startRun(
  { db, actor }: Scope,
  input: { uuid?: string | null; configuration: string; status: StartingRunStatus },
): Promise<RunRow> {
  requirePermission(actor, 'record');
  return createRun(db, {
    uuid: input.uuid == null ? undefined : checkUuid(input.uuid, 'uuid'),
    owner: actor.name,
    configuration: checkName(input.configuration, 'configuration'),
    status: checkOneOf(input.status, STARTING_RUN_STATUSES, 'status'),
  });
}
