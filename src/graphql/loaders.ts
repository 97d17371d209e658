import DataLoader from 'dataloader';
import type { RequestOfRun } from '../db/human-requests.ts';
import { countRuns, findRunsByIds, findRunsByUuids, type RunFilter, type RunRow } from '../db/runs.ts';
import {
  findStepsByIds,
  payloadsOfSteps,
  type StepMetaRow,
  type StepRow,
  type StepSlice,
  sliceStepsOfRuns,
  type TimelineRow,
  tallyToolOutcomesOfRuns,
  timelineRowsOfRun,
} from '../db/steps.ts';
import { NO_OUTCOMES, type OutcomeCounts, type OutcomeTally } from '../domain/outcome-counts.ts';
import { visibleOwners } from '../domain/permissions.ts';
import { requestsByUuid } from '../ledger/human-requests.ts';
import { serverOutcomeCounts } from '../ledger/outcome-stats.ts';
import type { Scope } from '../ledger/scope.ts';

function byKey<K, V>(rows: readonly V[], key: (row: V) => K): Map<K, V> {
  return new Map(rows.map((row) => [key(row), row]));
}

export interface TimelineKey {
  runId: number;
  afterSequence: number | null;
  limit: number;
  /** Whether the steps' ids are read too (TimelineEntry.step is selected). */
  stepIds: boolean;
}

export interface StepSliceKey {
  runId: number;
  slice: StepSlice;
}

/**
 * Per-request loaders: every list of runs asks the database once per field,
 * not once per run. They are the one gate of visibility for reads by key: a run
 * the actor may not see loads as null, exactly like a run that does not exist,
 * and so do its steps.
 */
export function createLoaders(scope: Scope) {
  const { db, actor } = scope;
  // Applied by the statements themselves: a run the actor may not see is never read.
  const owners = visibleOwners(actor);
  const runById = new DataLoader<number, RunRow | null>(async (ids) => {
    const rows = byKey(await findRunsByIds(db, ids, owners), (r) => r.id);
    return ids.map((id) => rows.get(id) ?? null);
  });
  return {
    /** Tool calls per MCP server over the last 30 days, in runs the actor may see: one statement for all servers. */
    serverOutcomeCounts: new DataLoader<string, OutcomeCounts>((servers) =>
      serverOutcomeCounts(scope, servers),
    ),
    runByUuid: new DataLoader<string, RunRow | null>(async (uuids) => {
      const rows = byKey(await findRunsByUuids(db, uuids, owners), (r) => r.uuid);
      return uuids.map((uuid) => rows.get(uuid) ?? null);
    }),
    runById,
    /** Requests for people by uuid, those the actor may read: one statement for every step that names one. */
    humanRequest: new DataLoader<string, RequestOfRun | null>(async (uuids) => {
      const rows = byKey(await requestsByUuid(scope, uuids), (entry) => entry.request.uuid);
      return uuids.map((uuid) => rows.get(uuid) ?? null);
    }),
    /** Runs a filter selects, under the visibility already applied to it: one count per filter. */
    runCount: new DataLoader<RunFilter, number, string>(
      (filters) => Promise.all(filters.map((filter) => countRuns(db, filter))),
      { cacheKeyFn: (filter) => JSON.stringify(filter) },
    ),
    stepById: new DataLoader<number, StepMetaRow | null>(async (ids) => {
      const rows = byKey(await findStepsByIds(db, ids, owners), (r) => r.id);
      return ids.map((id) => rows.get(id) ?? null);
    }),
    toolOutcomeTally: new DataLoader<number, OutcomeTally>(async (runIds) => {
      const tallies = await tallyToolOutcomesOfRuns(db, runIds);
      return runIds.map((id) => tallies.get(id) ?? NO_OUTCOMES);
    }),
    /** Payloads are read only here, when a client selects `payload`: one statement for every step asked. */
    stepPayload: new DataLoader<number, StepRow['payload']>(async (ids) => {
      const payloads = await payloadsOfSteps(db, ids);
      return ids.map((id) => payloads.get(id) ?? {});
    }),
    // One statement per run, each stopping at its limit: a long run is never read whole to be refused.
    timelineRows: new DataLoader<TimelineKey, TimelineRow[], string>(
      (keys) =>
        Promise.all(
          keys.map(({ runId, afterSequence, limit, stepIds }) =>
            timelineRowsOfRun(db, runId, { afterSequence, limit, stepIds }),
          ),
        ),
      // Not kept for the rest of the request: thousands of rows would be held (and copied by every young
      // collection) while their entries are written out.
      { cache: false },
    ),
    // Runs asking for the same slice (the usual case: one field in a list) share one statement.
    stepSlice: new DataLoader<StepSliceKey, StepMetaRow[], string>(
      async (keys) => {
        const groups = new Map<string, { slice: StepSlice; runIds: number[] }>();
        for (const { runId, slice } of keys) {
          const id = JSON.stringify(slice);
          const group = groups.get(id) ?? { slice, runIds: [] };
          group.runIds.push(runId);
          groups.set(id, group);
        }
        const results = new Map<string, Map<number, StepMetaRow[]>>();
        await Promise.all(
          [...groups].map(async ([id, group]) => {
            results.set(id, await sliceStepsOfRuns(db, group.runIds, group.slice));
          }),
        );
        return keys.map(({ runId, slice }) => results.get(JSON.stringify(slice))?.get(runId) ?? []);
      },
      { cacheKeyFn: ({ runId, slice }) => `${runId}:${JSON.stringify(slice)}` },
    ),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
