import { describe, expect, it } from 'vitest';
import { RunTerminalError } from '../../src/domain/errors.ts';
import { callStartedAt, checkRunAcceptsSteps } from '../../src/domain/run-lifecycle.ts';
import { type JsonObject, RunStep } from '../../src/domain/run-step.ts';

const cancelledAt = new Date('2026-12-06T12:00:00.000Z');
const cancelledRun = { uuid: 'r', status: 'cancelled' as const, finishedAt: cancelledAt };

/** A cancelled tool step that ended `endedAfterMs` after the cancel. */
const step = (endedAfterMs: number, durationMs: number, metadata: JsonObject = {}) =>
  new RunStep({
    sequence: 1,
    kind: 'tool',
    round: 0,
    durationMs,
    occurredAt: new Date(cancelledAt.getTime() + endedAfterMs),
    toolName: 't',
    server: 's',
    toolOutcome: 'cancelled',
    toolIsError: true,
    metadata,
  });

describe('a call in flight at the cancel', () => {
  it('began when it ended less its duration and its wait for a session', () => {
    expect(callStartedAt(step(0, 300)).getTime()).toBe(cancelledAt.getTime() - 300);
    expect(callStartedAt(step(0, 0, { sessionStartMs: 1_500 })).getTime()).toBe(
      cancelledAt.getTime() - 1_500,
    );
    expect(callStartedAt(step(0, 200, { sessionStartMs: 100 })).getTime()).toBe(cancelledAt.getTime() - 300);
    // Anything but a whole positive number of milliseconds is no wait.
    for (const sessionStartMs of [-5, 1.5, '900', null]) {
      expect(callStartedAt(step(0, 200, { sessionStartMs })).getTime()).toBe(cancelledAt.getTime() - 200);
    }
  });

  it('is taken by the cancelled run when it began waiting for its session before the cancel, not after', () => {
    // Cut off 10 ms after the cancel, having waited 1.5 s for its session and never reached it.
    expect(() => checkRunAcceptsSteps(cancelledRun, [step(10, 0, { sessionStartMs: 1_500 })])).not.toThrow();
    // Without the wait it would have begun after the cancel, and is refused.
    expect(() => checkRunAcceptsSteps(cancelledRun, [step(10, 0)])).toThrow(RunTerminalError);
    expect(() => checkRunAcceptsSteps(cancelledRun, [step(10, 0, { sessionStartMs: 5 })])).toThrow(
      RunTerminalError,
    );
  });
});
