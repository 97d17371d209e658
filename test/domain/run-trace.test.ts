import { describe, expect, it } from 'vitest';
import { TRUNCATION_MARKER } from '../../src/domain/bounding.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { StepInvariantError } from '../../src/domain/run-step.ts';
import { type PlainStep, RunTrace, type ToolCall } from '../../src/domain/run-trace.ts';
import { type ToolArtifact, ToolResult, type WriteTarget } from '../../src/domain/tool-result.ts';

const encoder = new TextEncoder();
const byteLength = (text: string): number => encoder.encode(text).length;
const fixed = new Date('2024-05-01T12:00:00.000Z');
const target: WriteTarget = { table: 'pages', uid: '42', kind: 'created' };
const artifacts: ToolArtifact[] = [{ title: 'Page', type: 'json', content: { id: 42 } }];

function call(overrides: Partial<ToolCall> = {}): ToolCall {
  return {
    round: 1,
    durationMs: 250,
    toolName: 'create_page',
    server: 'cms',
    arguments: { title: 'Hello' },
    occurredAt: fixed,
    ...overrides,
  };
}

function only<T>(items: readonly T[]): T {
  expect(items).toHaveLength(1);
  const [item] = items;
  if (item === undefined) throw new Error('no item');
  return item;
}

describe('RunTrace.recordToolExecution (the old boolean)', () => {
  it('false gives one tool step with outcome ok and toolIsError false', () => {
    const step = only(new RunTrace().recordToolExecution(call(), 'done', false));
    expect(step.kind).toBe('tool');
    expect(step.toolOutcome).toBe('ok');
    expect(step.outcome).toBe('ok');
    expect(step.toolIsError).toBe(false);
    expect(step.writeTarget).toBeNull();
  });

  it('true gives one tool step with outcome failed and toolIsError true', () => {
    const step = only(new RunTrace().recordToolExecution(call(), 'boom', true));
    expect(step.kind).toBe('tool');
    expect(step.toolOutcome).toBe('failed');
    expect(step.outcome).toBe('failed');
    expect(step.toolIsError).toBe(true);
  });

  it('never produces cancelled', () => {
    const trace = new RunTrace();
    for (const isError of [true, false]) {
      for (const content of ['', 'cancelled', 'The operation was cancelled', 'x'.repeat(60_000)]) {
        for (const step of trace.recordToolExecution(call(), content, isError)) {
          expect(step.toolOutcome).not.toBe('cancelled');
          expect(step.outcome).not.toBe('cancelled');
        }
      }
    }
    expect(trace.steps).toHaveLength(8);
  });

  it('stores the call and the content on the step', () => {
    const step = only(new RunTrace().recordToolExecution(call(), 'done', false));
    expect(step.round).toBe(1);
    expect(step.durationMs).toBe(250);
    expect(step.occurredAt).toEqual(fixed);
    expect(step.toolName).toBe('create_page');
    expect(step.server).toBe('cms');
    expect(step.payload).toEqual({ arguments: { title: 'Hello' }, content: 'done', artifacts: [] });
    expect(step.metadata).toEqual({
      argumentsBytes: byteLength(JSON.stringify({ title: 'Hello' })),
      contentBytes: 4,
      artifactCount: 0,
    });
  });
});

describe('RunTrace.recordToolResult (the typed result)', () => {
  it('a cancelled result gives a cancelled tool step with toolIsError true and no artifacts', () => {
    const step = only(new RunTrace().recordToolResult(call(), ToolResult.cancelled('stopped by the user')));
    expect(step.kind).toBe('tool');
    expect(step.toolOutcome).toBe('cancelled');
    expect(step.outcome).toBe('cancelled');
    expect(step.toolIsError).toBe(true);
    expect(step.payload.artifacts).toEqual([]);
    expect(step.payload.content).toBe('stopped by the user');
    expect(step.metadata.artifactCount).toBe(0);
  });

  it('a failed result gives a failed tool step with toolIsError true', () => {
    const step = only(new RunTrace().recordToolResult(call(), ToolResult.failed('boom')));
    expect(step.toolOutcome).toBe('failed');
    expect(step.toolIsError).toBe(true);
  });

  it('an ok result with artifacts stores them in the payload', () => {
    const step = only(new RunTrace().recordToolResult(call(), ToolResult.ok('done', artifacts)));
    expect(step.toolOutcome).toBe('ok');
    expect(step.toolIsError).toBe(false);
    expect(step.payload.artifacts).toEqual(artifacts);
    expect(step.metadata.artifactCount).toBe(1);
  });

  it('an ok result with a write target gives a tool step and then a tool_write step', () => {
    const trace = new RunTrace({ nextSequence: 10 });
    const steps = trace.recordToolResult(call(), ToolResult.ok('created', artifacts, target));
    expect(steps).toHaveLength(2);
    const [tool, write] = steps;
    expect(tool?.kind).toBe('tool');
    expect(tool?.outcome).toBe('ok');
    expect(tool?.writeTarget).toBeNull();
    expect(write?.kind).toBe('tool_write');
    expect(write?.writeTarget).toEqual(target);
    expect(write?.sequence).toBe((tool?.sequence ?? 0) + 1);
    expect(tool?.sequence).toBe(10);
    expect(write?.toolName).toBe(tool?.toolName);
    expect(write?.server).toBe(tool?.server);
    expect(write?.toolName).toBe('create_page');
    expect(write?.server).toBe('cms');
    expect(write?.round).toBe(1);
    expect(write?.occurredAt).toEqual(fixed);
    expect(write?.outcome).toBeNull();
    expect(write?.toRecord().metadata.writeTarget).toEqual(target);
    expect(trace.steps).toEqual(steps);
  });

  it.each(['cancelled', 'failed'] as const)(
    'a %s result given a write target yields only the tool step',
    (outcome) => {
      const trace = new RunTrace();
      const steps = trace.recordToolResult(call(), ToolResult.of(outcome, 'partial', artifacts, target));
      const step = only(steps);
      expect(step.kind).toBe('tool');
      expect(step.toolOutcome).toBe(outcome);
      expect(step.writeTarget).toBeNull();
      expect(step.payload.artifacts).toEqual([]);
      expect(trace.steps).toHaveLength(1);
      expect(trace.steps.some((s) => s.kind === 'tool_write')).toBe(false);
    },
  );

  it('a cancelled result after withWriteTarget yields only the tool step', () => {
    const steps = new RunTrace().recordToolResult(
      call(),
      ToolResult.cancelled('stopped').withWriteTarget(target),
    );
    expect(only(steps).outcome).toBe('cancelled');
  });
});

describe('RunTrace dates', () => {
  it.each(['1969-12-31T23:59:59.999Z', '0000-01-01T00:00:00Z', '+010000-01-01T00:00:00Z'])(
    'refuses a new step dated %s, outside 1970..9999',
    (date) => {
      const trace = new RunTrace();
      expect(() => trace.recordToolExecution(call({ occurredAt: new Date(date) }), 'x', false)).toThrow(
        expect.objectContaining({ code: 'STEP_INVALID_OCCURRED_AT' }),
      );
      expect(() =>
        trace.recordStep({ kind: 'llm', round: 0, durationMs: 0, occurredAt: new Date(date) }),
      ).toThrow(expect.objectContaining({ code: 'STEP_INVALID_OCCURRED_AT' }));
      expect(trace.steps).toEqual([]);
    },
  );
});

describe('RunTrace sequences and clock', () => {
  it('starts at 1 by default', () => {
    const step = only(new RunTrace().recordToolExecution(call(), 'x', false));
    expect(step.sequence).toBe(1);
  });

  it('starts at nextSequence and increases by 1 across calls of every kind', () => {
    const trace = new RunTrace({ nextSequence: 7 });
    trace.recordStep({ kind: 'llm', round: 0, durationMs: 5 });
    trace.recordToolExecution(call(), 'a', false);
    trace.recordToolResult(call(), ToolResult.ok('b', [], target));
    trace.recordToolResult(call(), ToolResult.cancelled('c'));
    trace.recordToolExecution(call(), 'd', true);
    expect(trace.steps.map((s) => s.sequence)).toEqual([7, 8, 9, 10, 11, 12]);
    expect(trace.steps.map((s) => s.kind)).toEqual(['llm', 'tool', 'tool', 'tool_write', 'tool', 'tool']);
    expect(trace.steps.map((s) => s.outcome)).toEqual([null, 'ok', 'ok', null, 'cancelled', 'failed']);
  });

  it('uses the clock when the call has no occurredAt', () => {
    const ticks = [new Date('2024-01-01T00:00:00Z'), new Date('2024-01-02T00:00:00Z')];
    let calls = 0;
    const clock = (): Date => {
      const tick = ticks[calls] ?? new Date(0);
      calls += 1;
      return tick;
    };
    const trace = new RunTrace({ clock });
    const { occurredAt: _dropped, ...withoutTime } = call();
    const [tool, write] = trace.recordToolResult(withoutTime, ToolResult.ok('x', [], target));
    expect(tool?.occurredAt).toEqual(ticks[0]);
    expect(write?.occurredAt).toEqual(ticks[0]);
    const step = only(trace.recordToolExecution(withoutTime, 'y', true));
    expect(step.occurredAt).toEqual(ticks[1]);
    expect(calls).toBe(2);
  });

  it('does not read the clock when the call has its own occurredAt', () => {
    let calls = 0;
    const trace = new RunTrace({
      clock: () => {
        calls += 1;
        return new Date('1999-01-01T00:00:00Z');
      },
    });
    const step = only(trace.recordToolExecution(call(), 'x', false));
    expect(step.occurredAt).toEqual(fixed);
    expect(calls).toBe(0);
  });

  it('uses the clock for a plain step without occurredAt', () => {
    const now = new Date('2030-03-03T03:03:03Z');
    const step = new RunTrace({ clock: () => now }).recordStep({ kind: 'context', round: 0, durationMs: 0 });
    expect(step.occurredAt).toEqual(now);
  });
});

describe('RunTrace bounds before it stores', () => {
  it('stores oversized content truncated with the marker and counts the bounded bytes', () => {
    const content = 'z'.repeat(70_000);
    const step = only(new RunTrace().recordToolExecution(call(), content, false));
    const stored = step.payload.content;
    expect(typeof stored).toBe('string');
    if (typeof stored !== 'string') return;
    expect(stored.endsWith(TRUNCATION_MARKER)).toBe(true);
    expect(stored).toBe(`${'z'.repeat(50_000)}${TRUNCATION_MARKER}`);
    expect(step.metadata.contentBytes).toBe(byteLength(stored));
    expect(step.metadata.contentBytes).toBe(50_000 + byteLength(TRUNCATION_MARKER));
  });

  it('bounds the content of a cancelled result and keeps it cancelled', () => {
    const step = only(new RunTrace().recordToolResult(call(), ToolResult.cancelled('€'.repeat(20_000))));
    expect(step.outcome).toBe('cancelled');
    expect(step.toolIsError).toBe(true);
    expect(String(step.payload.content).endsWith(TRUNCATION_MARKER)).toBe(true);
  });

  it('counts content bytes in UTF-8, not characters', () => {
    const step = only(new RunTrace().recordToolExecution(call(), 'Grüße €', false));
    expect(step.metadata.contentBytes).toBe(11);
  });

  it('stores repaired content', () => {
    const step = only(new RunTrace().recordToolExecution(call(), 'bad\uD800', true));
    expect(step.payload.content).toBe('bad\uFFFD');
    expect(step.metadata.contentBytes).toBe(6);
  });

  it('stores oversized artifacts of an ok result as one omitted artifact', () => {
    const big: ToolArtifact[] = [{ title: 'Big', type: 'text', content: 'x'.repeat(60_000) }];
    const step = only(new RunTrace().recordToolResult(call(), ToolResult.ok('done', big)));
    const stored = step.payload.artifacts;
    expect(Array.isArray(stored)).toBe(true);
    expect(stored).toHaveLength(1);
    expect(stored).toEqual([expect.objectContaining({ title: 'Artifacts omitted', type: 'text' })]);
    expect(step.metadata.artifactCount).toBe(1);
  });
});

describe('RunTrace.recordStep', () => {
  it('records an llm step', () => {
    const trace = new RunTrace({ nextSequence: 3 });
    const step = trace.recordStep({
      kind: 'llm',
      round: 2,
      durationMs: 900,
      occurredAt: fixed,
      payload: { prompt: 'hi' },
      metadata: { promptTokens: 1 },
    });
    expect(step.kind).toBe('llm');
    expect(step.sequence).toBe(3);
    expect(step.round).toBe(2);
    expect(step.durationMs).toBe(900);
    expect(step.occurredAt).toEqual(fixed);
    expect(step.payload).toEqual({ prompt: 'hi' });
    expect(step.metadata).toEqual({ promptTokens: 1 });
    expect(step.outcome).toBeNull();
    expect(step.toolIsError).toBeNull();
    expect(trace.steps).toEqual([step]);
  });

  it.each(['tool', 'tool_write'])('refuses a %s step with STEP_TOOL_NEEDS_RESULT', (kind) => {
    const trace = new RunTrace();
    const step = { kind, round: 0, durationMs: 0 } as unknown as PlainStep;
    let caught: unknown;
    try {
      trace.recordStep(step);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(DomainError);
    expect((caught as DomainError).code).toBe('STEP_TOOL_NEEDS_RESULT');
    expect(trace.steps).toHaveLength(0);
  });

  it('does not use up a sequence number on a refused step', () => {
    const trace = new RunTrace();
    expect(() => trace.recordStep({ kind: 'llm', round: -1, durationMs: 0 })).toThrow(StepInvariantError);
    const step = trace.recordStep({ kind: 'llm', round: 0, durationMs: 0 });
    expect(step.sequence).toBe(1);
    expect(trace.steps).toHaveLength(1);
  });
});
