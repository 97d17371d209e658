import type { Database } from '../../src/db/connection.ts';
import { appendLegacyToolStep } from '../../src/db/run-writes.ts';
import type { ToolCall } from '../../src/domain/run-trace.ts';
import { ToolResult } from '../../src/domain/tool-result.ts';
import { endRun } from '../../src/ledger/end-run.ts';
import { appendSteps } from '../../src/ledger/record-steps.ts';
import { createRun } from '../../src/ledger/start-run.ts';

export const T0 = new Date('2026-11-20T10:00:00.000Z');
export const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

export const call = (toolName: string, server: string, seconds: number, round = 1): ToolCall => ({
  round,
  durationMs: 40 + seconds,
  toolName,
  server,
  arguments: { secret: 'argument text' },
  occurredAt: at(seconds),
});

/**
 * Three runs with known contents. Run A holds every kind of tool step: ok,
 * failed and cancelled through the service, a write, and two legacy rows.
 */
export async function recordFixtureRuns(db: Database) {
  const runA = await createRun(db, { owner: 'alice', configuration: 'triage', createdAt: T0 });
  await appendSteps(db, {
    runUuid: runA.uuid,
    build: (trace) => {
      trace.recordStep({
        kind: 'request',
        round: 0,
        durationMs: 0,
        occurredAt: at(1),
        payload: { prompt: 'secret prompt' },
      });
      trace.recordStep({
        kind: 'llm',
        round: 1,
        durationMs: 900,
        occurredAt: at(2),
        payload: { messages: 'secret prompt' },
        metadata: {
          model: 'gpt-x',
          promptTokens: 100,
          completionTokens: 20,
          estimatedCost: 0.0015,
          finishReason: 'tool_calls',
        },
      });
      trace.recordToolExecution(call('search', 'github', 3), 'secret output', false); // 3 ok
      trace.recordToolExecution(call('search', 'github', 4), 'secret output', true); // 4 failed
      trace.recordToolResult(call('fetch', 'web', 5), ToolResult.cancelled('cut off')); // 5 cancelled
      trace.recordToolResult(
        call('write_file', 'fs', 6, 2),
        ToolResult.ok('written', [{ title: 'diff', type: 'text', content: 'secret' }], {
          table: 'documents',
          uid: '42',
          kind: 'created',
        }),
      ); // 6 ok + 7 tool_write
    },
  });
  await appendLegacyToolStep(db, runA.uuid, call('search', 'github', 8, 2), true); // 8 legacy failed
  await appendLegacyToolStep(db, runA.uuid, call('read_file', 'fs', 9, 2), false); // 9 legacy ok
  await endRun(db, { runUuid: runA.uuid, status: 'cancelled', reason: 'cancelled', finishedAt: at(10) });

  const runB = await createRun(db, { owner: 'bob', configuration: 'docs', createdAt: at(3600) });
  await appendSteps(db, {
    runUuid: runB.uuid,
    build: (trace) => {
      trace.recordToolExecution(call('search', 'github', 3601), 'ok', false);
    },
  });
  await endRun(db, { runUuid: runB.uuid, status: 'completed', reason: 'completed', finishedAt: at(3700) });

  const runC = await createRun(db, { owner: 'alice', configuration: 'docs', createdAt: at(7200) });
  return { runA, runB, runC };
}
