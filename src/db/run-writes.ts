import { and, eq, type SQL, sql } from 'drizzle-orm';
import { runSteps, runs } from '../../drizzle/schema.ts';
import type { Owners } from '../domain/permissions.ts';
import type { RunRollups } from '../domain/run-rollups.ts';
import type { RunStatus, TerminationReason } from '../domain/run-status.ts';
import type { RunStep, RunStepRecord } from '../domain/run-step.ts';
import type { ToolCall } from '../domain/run-trace.ts';
import { type Database, selectRows } from './connection.ts';
import { inJsonbKeyOrder } from './jsonb.ts';
import { runNoticeSql } from './notices.ts';
import { ofOwners, type RunRow } from './runs.ts';
import type { StepRow } from './steps.ts';

/**
 * The run repository's writes: SQL only. Who may write, idempotency and the
 * lifecycle are the use cases' (src/ledger); the CHECK constraints guard every row.
 */

export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

export interface RunInsert {
  uuid: string;
  owner: string;
  configuration: string;
  status: Extract<RunStatus, 'queued' | 'running'>;
  createdAt: Date;
  startedAt: Date | null;
}

/**
 * How `append_run_steps` (migrations/repeatable/60) appends: `append`, at once when the run is open and
 * within the limits (else `judge`); `hold`, nothing written, the run locked and its next sequence
 * answered (`judge`) for the rules to be applied in the same transaction; `judged`, the steps the rules
 * were applied to, numbered from that sequence.
 */
export type AppendMode = 'append' | 'hold' | 'judged';

/** What one call of `append_run_steps` is asked to do. */
export interface OneStatementAppend {
  mode: AppendMode;
  runUuid: string;
  /** The only owner whose runs take the steps here; null: any owner (trusted writers). */
  owner: string | null;
  /** The hash of the request's API key, checked active in the same statement; null: checked already. */
  keyHash: string | null;
  idempotencyKey: string | null;
  fingerprint: string;
  /** The statuses in which a run takes any step. */
  openStatuses: readonly RunStatus[];
  maxSequence: number;
  maxRunTokens: number;
  /**
   * The steps, numbered by the statement from the run's last sequence + 1: their own sequence is ignored
   * in `append`, and must be that in `judged`.
   */
  steps: readonly RunStep[];
  rollups: RunRollups;
  /** Whether the statement itself sends the run's live notice (LISTEN/NOTIFY), delivered when it commits. */
  announce: boolean;
}

/**
 * What the statement did. `judge`: nothing written, the run needs the
 * domain's rules (terminal, a limit), and in `hold` the run as locked and the
 * sequence its next step takes; `replayed`: the key had been seen, nothing
 * written, the stored steps returned.
 */
export type OneStatementOutcome =
  | { outcome: 'unauthenticated' | 'not_found' }
  | { outcome: 'judge'; held: { run: RunRow; firstSequence: number } | null }
  | { outcome: 'replayed'; fingerprint: string; run: RunRow; steps: StepRow[] }
  | { outcome: 'appended'; run: RunRow; steps: StepRow[]; announced: boolean };

/** A row as `to_jsonb` writes it: snake_case names, timestamps as ISO text. */
type JsonRow = Record<string, unknown>;

const dateOrNull = (value: unknown): Date | null => (typeof value === 'string' ? new Date(value) : null);

function runFromJson(row: JsonRow): RunRow {
  return {
    id: Number(row.id),
    uuid: String(row.uuid),
    owner: String(row.owner),
    configuration: String(row.configuration),
    status: String(row.status),
    terminationReason: (row.termination_reason as string | null) ?? null,
    rounds: Number(row.rounds),
    promptTokens: Number(row.prompt_tokens),
    completionTokens: Number(row.completion_tokens),
    estimatedCost: Number(row.estimated_cost),
    createdAt: new Date(String(row.created_at)),
    startedAt: dateOrNull(row.started_at),
    finishedAt: dateOrNull(row.finished_at),
  };
}

function stepFromJson(row: JsonRow): StepRow {
  return {
    id: Number(row.id),
    runId: Number(row.run_id),
    sequence: Number(row.sequence),
    kind: String(row.kind),
    round: Number(row.round),
    durationMs: Number(row.duration_ms),
    occurredAt: new Date(String(row.occurred_at)),
    toolName: (row.tool_name as string | null) ?? null,
    server: (row.server as string | null) ?? null,
    toolIsError: (row.tool_is_error as boolean | null) ?? null,
    toolOutcome: (row.tool_outcome as string | null) ?? null,
    payload: row.payload as StepRow['payload'],
    metadata: row.metadata as StepRow['metadata'],
  };
}

type RawOutcome = {
  outcome: OneStatementOutcome['outcome'];
  fingerprint?: string;
  run?: JsonRow;
  /** A replay's stored steps. */
  steps?: JsonRow[];
  /** An append's new steps: their ids in order, from this sequence on. */
  ids?: number[];
  firstSequence?: number;
};

/** One prepared statement per database (or transaction): named, so PostgreSQL parses and plans it once per connection. */
const appendStatements = new WeakMap<Database | Transaction, ReturnType<typeof prepareAppend>>();

function prepareAppend(db: Database | Transaction) {
  const p = (name: string) => sql.placeholder(name);
  // The new steps' notice, when asked for and steps were stored: the run's uuid and its last sequence.
  const stored = sql`${p('announce')}::boolean and appended->>'outcome' = 'appended' and jsonb_array_length(appended->'ids') > 0`;
  const lastSequence = sql`(appended->>'firstSequence')::bigint + jsonb_array_length(appended->'ids') - 1`;
  const notice = runNoticeSql(sql`appended->'run'->>'uuid'`, lastSequence);
  return db
    .select({
      result: sql<RawOutcome>`appended`,
      announced: sql<boolean>`case when ${stored} then (select true from (select ${notice}) as sent) else false end`,
    })
    .from(
      sql`append_run_steps(${p('mode')}::text, ${p('runUuid')}::uuid, ${p('owner')}::text, ${p('keyHash')}::text, ${p('idempotencyKey')}::text, ${p('fingerprint')}::text, ${p('openStatuses')}::text[], ${p('maxSequence')}::bigint, ${p('maxRunTokens')}::bigint, ${p('steps')}::jsonb, ${p('rounds')}::int, ${p('promptTokens')}::bigint, ${p('completionTokens')}::bigint, ${p('estimatedCost')}::numeric) AS appended`,
    )
    .prepare('append_run_steps');
}

/**
 * The step as the statement reads it in `append`: the columns of run_steps but id, run_id and sequence
 * (left out by a rest pattern: `delete` would turn the object into a slow dictionary for what follows).
 */
function stepRecord(step: RunStep): Omit<RunStepRecord, 'sequence'> {
  const { sequence: _sequence, ...record } = step.toRecord();
  return record;
}

/**
 * Appends in one statement and one round trip: the run's lock, the next
 * sequence, the idempotency key, the rows, the key's claim and the run's
 * rollups, all or nothing (in a transaction: the caller's).
 */
export async function appendInOneStatement(
  db: Database | Transaction,
  append: OneStatementAppend,
): Promise<OneStatementOutcome> {
  let statement = appendStatements.get(db);
  if (!statement) {
    statement = prepareAppend(db);
    appendStatements.set(db, statement);
  }
  const records = append.steps.map(append.mode === 'judged' ? (step) => step.toRecord() : stepRecord);
  const [row] = await statement.execute({
    mode: append.mode,
    runUuid: append.runUuid,
    owner: append.owner,
    keyHash: append.keyHash,
    idempotencyKey: append.idempotencyKey,
    fingerprint: append.fingerprint,
    openStatuses: append.openStatuses,
    maxSequence: append.maxSequence,
    maxRunTokens: append.maxRunTokens,
    steps: JSON.stringify(records),
    rounds: append.rollups.rounds,
    promptTokens: append.rollups.promptTokens,
    completionTokens: append.rollups.completionTokens,
    estimatedCost: append.rollups.estimatedCost,
    announce: append.announce,
  });
  const raw = row?.result;
  if (!raw) throw new Error('append_run_steps returned nothing');
  switch (raw.outcome) {
    case 'appended': {
      const run = runFromJson(raw.run ?? {});
      const ids = raw.ids ?? [];
      const first = raw.firstSequence ?? 0;
      if (ids.length !== records.length) throw new Error('append_run_steps stored another number of steps');
      // The rows as sent: the column values are those the statement stored, and the jsonb
      // columns in the form they are stored in, as a replay reads them.
      const steps = records.map(
        (record, i): StepRow => ({
          ...record,
          payload: inJsonbKeyOrder(record.payload),
          metadata: inJsonbKeyOrder(record.metadata),
          id: ids[i] ?? 0,
          runId: run.id,
          sequence: first + i,
        }),
      );
      return { outcome: raw.outcome, run, steps, announced: row?.announced === true };
    }
    case 'replayed':
      return {
        outcome: raw.outcome,
        fingerprint: raw.fingerprint ?? '',
        run: runFromJson(raw.run ?? {}),
        steps: (raw.steps ?? []).map(stepFromJson),
      };
    case 'judge':
      return {
        outcome: raw.outcome,
        held: raw.run ? { run: runFromJson(raw.run), firstSequence: Number(raw.firstSequence) } : null,
      };
    default:
      return { outcome: raw.outcome };
  }
}

/** Inserts the run; null when a run with its uuid is already there. */
export async function insertRunUnlessPresent(db: Database, run: RunInsert): Promise<RunRow | null> {
  const [row] = await db.insert(runs).values(run).onConflictDoNothing({ target: runs.uuid }).returning();
  return row ?? null;
}

/**
 * Locks the run for the rest of the transaction; null when there is none among
 * the owners' (null: any owner). A run of another owner is neither read nor
 * locked: the filter is applied before the lock.
 */
export async function lockRun(tx: Transaction, runUuid: string, owners: Owners): Promise<RunRow | null> {
  if (owners?.length === 0) return null;
  const [run] = await tx
    .select()
    .from(runs)
    .where(and(eq(runs.uuid, runUuid), ofOwners(owners)))
    .for('update');
  return run ?? null;
}

/**
 * The last sequence stored in a run. Read after the run is locked, in a
 * statement of its own on purpose: a statement that waited for the lock still
 * sees the snapshot it started with, so a max(sequence) read in the same
 * statement would miss the step the previous lock holder just committed.
 */
export async function lastSequence(tx: Transaction, runId: number): Promise<number> {
  const [last] = await tx
    .select({ sequence: sql<number>`coalesce(max(${runSteps.sequence}), 0)::int` })
    .from(runSteps)
    .where(eq(runSteps.runId, runId));
  return last?.sequence ?? 0;
}

/**
 * Stores steps numbered by the caller (storeStepsSql) and answers their rows: the values as sent,
 * with the ids the statement gave them and the JSON columns in the form they are stored in (as a
 * read of them answers), not the rows read back.
 */
export async function insertSteps(
  tx: Transaction,
  runId: number,
  steps: readonly RunStep[],
): Promise<StepRow[]> {
  if (steps.length === 0) return [];
  const stored = await selectRows<{ id: string | number; sequence: number }>(
    tx,
    sql`${storeStepsSql(runId, steps)} returning id, sequence`,
  );
  const ids = new Map(stored.map((row) => [Number(row.sequence), Number(row.id)]));
  return steps.map((step): StepRow => {
    const record = step.toRecord();
    return {
      ...record,
      payload: inJsonbKeyOrder(record.payload),
      metadata: inJsonbKeyOrder(record.metadata),
      id: ids.get(record.sequence) ?? 0,
      runId,
    };
  });
}

/**
 * The statement that stores steps numbered by the caller, nothing read back: the steps as one
 * JSON parameter (the columns append_run_steps reads them by), where a row of parameters a step
 * cost the service building and sending 13 values each, and a statement held at most 5,000 steps
 * (PostgreSQL's 65,535 parameters). The run is its id, or the rows of a part of the same statement
 * that inserts it (`{ part }`, its `id` column): no run there, no steps.
 */
export function storeStepsSql(run: number | { part: string }, steps: readonly RunStep[]): SQL {
  const [runId, from] =
    typeof run === 'number' ? [sql`${run}`, sql``] : [sql.raw(`${run.part}.id`), sql.raw(`${run.part}, `)];
  return sql`
    insert into run_steps (run_id, sequence, kind, round, duration_ms, occurred_at, tool_name, server,
                           tool_is_error, tool_outcome, payload, metadata)
    select ${runId}, s.sequence, s.kind, s.round, s."durationMs", s."occurredAt", s."toolName", s.server,
           s."toolIsError", s."toolOutcome", coalesce(s.payload, '{}'::jsonb), coalesce(s.metadata, '{}'::jsonb)
      from ${from}jsonb_to_recordset(${JSON.stringify(steps.map((step) => step.toRecord()))}::jsonb) as s(
             sequence integer, kind text, round integer, "durationMs" integer, "occurredAt" timestamptz,
             "toolName" text, server text, "toolIsError" boolean, "toolOutcome" text, payload jsonb, metadata jsonb)`;
}

/**
 * Several writes as one statement (each a part of its WITH), in one round trip, with the live
 * notice of the run named by `announce` (sent once the transaction commits). They share one
 * snapshot: none may read what another writes, and no two may change one row.
 */
export async function writeTogether(
  tx: Transaction,
  writes: readonly SQL[],
  announce?: string,
): Promise<void> {
  if (writes.length === 0 && announce === undefined) return;
  const parts = writes.map((write, i) => sql`${sql.raw(`w${i}`)} as (${write})`);
  const select = sql`select ${announce === undefined ? sql`1` : runNoticeSql(sql`${announce}::text`, sql`null::int`)}`;
  await tx.execute(parts.length > 0 ? sql`with ${sql.join(parts, sql`, `)} ${select}` : select);
}

type RunEnding = { status: RunStatus; reason: TerminationReason; finishedAt: Date };

/** New steps' totals added to a run's: the greatest round, token and cost sums. */
const rollupsSet = (rollups: RunRollups) => ({
  rounds: sql`greatest(${runs.rounds}, ${rollups.rounds}::int)`,
  promptTokens: sql`${runs.promptTokens} + ${rollups.promptTokens}::bigint`,
  completionTokens: sql`${runs.completionTokens} + ${rollups.completionTokens}::bigint`,
  estimatedCost: sql`${runs.estimatedCost} + ${rollups.estimatedCost}::numeric`,
});

/** A run's end. */
const endingSet = (ending: RunEnding) => ({
  status: ending.status,
  terminationReason: ending.reason,
  finishedAt: ending.finishedAt,
});

/**
 * One update of a run, nothing read back (a part of writeTogether): new steps'
 * totals added, as append_run_steps adds them (a twin test holds the two
 * together), and its end set, as setTerminal sets it.
 */
export function updateRunSql(
  tx: Transaction,
  runId: number,
  change: { rollups: RunRollups | null; ending: RunEnding | null },
): SQL {
  const set = {
    ...(change.rollups ? rollupsSet(change.rollups) : {}),
    ...(change.ending ? endingSet(change.ending) : {}),
  };
  return tx.update(runs).set(set).where(eq(runs.id, runId)).getSQL();
}

export async function setTerminal(tx: Transaction, runId: number, ending: RunEnding): Promise<RunRow | null> {
  const [row] = await tx.update(runs).set(endingSet(ending)).where(eq(runs.id, runId)).returning();
  return row ?? null;
}

/**
 * A writer from before outcomes existed: it stored only the boolean. The
 * boolean-first rule still reads these rows as `failed` / `ok`. For demo data
 * and tests of old rows; no use case writes this way.
 */
export async function appendLegacyToolStep(db: Database, runUuid: string, call: ToolCall, isError: boolean) {
  await db.transaction(async (tx) => {
    const run = await lockRun(tx, runUuid, null);
    if (!run) throw new Error(`no run ${runUuid}`);
    // Numbered like every other step: under the run's lock, after the last one stored.
    await tx.insert(runSteps).values({
      runId: run.id,
      sequence: (await lastSequence(tx, run.id)) + 1,
      kind: 'tool',
      round: call.round,
      durationMs: call.durationMs,
      occurredAt: call.occurredAt ?? new Date(),
      toolName: call.toolName,
      server: call.server,
      toolIsError: isError,
      payload: { arguments: call.arguments, content: 'legacy result' },
    });
  });
}
