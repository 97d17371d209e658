// Twins: which steps a run takes is the domain's rule (RunTrace, checkRunAcceptsSteps, stepRollups), and the
// append statement (`append_run_steps`, migrations/repeatable/60) takes steps at once only where it can tell
// without the rules: a run in an open status, its totals and sequences within the limits. That condition is
// the one part of the rules SQL states. It must never take what the rules refuse, and must take at once every
// append the rules accept in an open run (else the common case loses its one statement).
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runs } from '../../drizzle/schema.ts';
import { appendInOneStatement } from '../../src/db/run-writes.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { Limits } from '../../src/domain/limits.ts';
import { checkRunAcceptsSteps } from '../../src/domain/run-lifecycle.ts';
import { stepRollups } from '../../src/domain/run-rollups.ts';
import { isTerminalStatus, RUN_STATUSES, type RunStatus } from '../../src/domain/run-status.ts';
import { RunTrace } from '../../src/domain/run-trace.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

const at = new Date('2026-06-01T10:00:00.000Z');
const OPEN = RUN_STATUSES.filter((status) => !isTerminalStatus(status));
const REASON: Record<RunStatus, string | null> = {
  queued: null,
  running: null,
  waiting_for_approval: null,
  waiting_for_input: null,
  completed: 'completed',
  failed: 'provider_failed',
  cancelled: 'cancelled',
};

type Build = (trace: RunTrace) => void;
const tool: Build = (trace) =>
  trace.recordToolExecution(
    { round: 1, durationMs: 500, toolName: 'search', server: 'docs', arguments: {}, occurredAt: at },
    'found',
    false,
  );
const model =
  (tokens: { promptTokens?: number; completionTokens?: number }): Build =>
  (trace) =>
    trace.recordStep({
      kind: 'llm',
      round: 1,
      durationMs: 10,
      occurredAt: at,
      metadata: { model: 'm', ...tokens },
    });

/** A run as the case needs it, and the steps it is sent. */
interface Case {
  name: string;
  promptTokens?: number;
  completionTokens?: number;
  /** A step already stored at this sequence. */
  lastSequence?: number;
  steps: Build[];
}
const CASES: Case[] = [
  { name: 'a tool call', steps: [tool] },
  {
    name: 'prompt tokens up to the limit',
    promptTokens: Limits.maxRunTokens - 10,
    steps: [tool, model({ promptTokens: 10 })],
  },
  {
    name: 'prompt tokens past it',
    promptTokens: Limits.maxRunTokens - 10,
    steps: [tool, model({ promptTokens: 11 })],
  },
  {
    name: 'completion tokens up to the limit',
    completionTokens: Limits.maxRunTokens - 10,
    steps: [tool, model({ completionTokens: 10 })],
  },
  {
    name: 'completion tokens past it',
    completionTokens: Limits.maxRunTokens - 10,
    steps: [model({ completionTokens: 11 }), tool],
  },
  { name: 'the last sequence there is', lastSequence: Limits.maxSequence - 1, steps: [tool] },
  { name: 'a sequence past it', lastSequence: Limits.maxSequence - 1, steps: [tool, tool] },
];

describe.each(backendNames)('the append taken at once, and the rules (%s)', (backend) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
  });
  afterAll(async () => database?.dispose());

  async function runFor(status: RunStatus, given: Case) {
    const db = database.handle.db;
    const uuid = crypto.randomUUID();
    const terminal = isTerminalStatus(status);
    const [run] = await db
      .insert(runs)
      .values({
        uuid,
        owner: 'alice',
        configuration: 'c',
        status,
        terminationReason: REASON[status],
        startedAt: at,
        // Ended after the calls started: a cancelled run takes their tool steps, by the rules.
        finishedAt: terminal ? new Date(at.getTime() + 60_000) : null,
        promptTokens: given.promptTokens ?? 0,
        completionTokens: given.completionTokens ?? 0,
      })
      .returning({ id: runs.id });
    if (!run) throw new Error('no run');
    if (given.lastSequence !== undefined) {
      await db.execute(
        sql`insert into run_steps (run_id, sequence, kind, round, duration_ms, occurred_at)
            values (${run.id}, ${given.lastSequence}, 'llm', 1, 0, ${at.toISOString()}::timestamptz)`,
      );
    }
    return { uuid, id: run.id };
  }

  /** The rules applied to the run as the statement holds it: accepted, or refused with a domain error. */
  async function judgement(uuid: string, given: Case): Promise<boolean> {
    const held = await appendInOneStatement(database.handle.db, {
      ...request(uuid),
      mode: 'hold',
      steps: [],
      rollups: { rounds: 0, promptTokens: 0, completionTokens: 0, estimatedCost: 0 },
    });
    if (held.outcome !== 'judge' || !held.held) throw new Error(`held: ${held.outcome}`);
    const { run, firstSequence } = held.held;
    try {
      const trace = new RunTrace({ nextSequence: firstSequence, clock: () => at });
      for (const build of given.steps) build(trace);
      checkRunAcceptsSteps(
        { uuid, status: run.status as RunStatus, finishedAt: run.finishedAt },
        trace.steps,
      );
      stepRollups(trace.steps, run);
      return true;
    } catch (error) {
      if (error instanceof DomainError) return false;
      throw error;
    }
  }

  const request = (runUuid: string) => ({
    runUuid,
    owner: 'alice',
    keyHash: null,
    idempotencyKey: null,
    fingerprint: '',
    openStatuses: OPEN,
    maxSequence: Limits.maxSequence,
    maxRunTokens: Limits.maxRunTokens,
    announce: false,
  });

  it('takes at once exactly the appends the rules accept in an open run, and nothing they refuse', async () => {
    const table: string[] = [];
    const expected: string[] = [];
    for (const status of RUN_STATUSES) {
      for (const given of CASES) {
        const run = await runFor(status, given);
        const accepted = await judgement(run.uuid, given);
        const trace = new RunTrace({ nextSequence: 1, clock: () => at });
        for (const build of given.steps) build(trace);
        const atOnce = await appendInOneStatement(database.handle.db, {
          ...request(run.uuid),
          mode: 'append',
          steps: trace.steps,
          rollups: stepRollups(trace.steps, { promptTokens: 0, completionTokens: 0 }),
        });
        const label = `${status}, ${given.name}: rules ${accepted ? 'accept' : 'refuse'}`;
        table.push(`${label}; statement: ${atOnce.outcome}`);
        expected.push(`${label}; statement: ${accepted && OPEN.includes(status) ? 'appended' : 'judge'}`);
        // A statement that asks for judgement wrote nothing: no step, the run's totals as they were.
        if (atOnce.outcome === 'judge') {
          const [after] = await database.handle.db
            .select({
              tokens: runs.promptTokens,
              steps: sql<number>`(select count(*)::int from run_steps where run_id = ${run.id})`,
            })
            .from(runs)
            .where(eq(runs.id, run.id));
          expect(after).toEqual({
            tokens: given.promptTokens ?? 0,
            steps: given.lastSequence === undefined ? 0 : 1,
          });
        }
      }
    }
    expect(table).toEqual(expected);
    // The grid holds both answers of the rules in open runs, and a terminal run the rules accept.
    expect(expected.filter((row) => row.endsWith('appended')).length).toBeGreaterThan(OPEN.length);
    expect(table).toContain('cancelled, a tool call: rules accept; statement: judge');
    expect(table).toContain('running, prompt tokens past it: rules refuse; statement: judge');
  });
});
