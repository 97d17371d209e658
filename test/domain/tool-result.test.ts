import { describe, expect, it } from 'vitest';
import { boundToolResult } from '../../src/domain/bounding.ts';
import { RunStep } from '../../src/domain/run-step.ts';
import { RunTrace } from '../../src/domain/run-trace.ts';
import { detailLine } from '../../src/domain/timeline.ts';
import { TOOL_OUTCOMES, type ToolOutcome } from '../../src/domain/tool-outcome.ts';
import {
  FailureCodeRefusal,
  type ToolArtifact,
  ToolResult,
  type WriteTarget,
} from '../../src/domain/tool-result.ts';

const artifacts: ToolArtifact[] = [
  { title: 'Page', type: 'json', content: { id: 42, tags: ['a', 'b'] } },
  { title: 'Note', type: 'text', content: 'hello' },
];
const target: WriteTarget = { table: 'pages', uid: '42', kind: 'created' };
const otherTarget: WriteTarget = { table: 'notes', uid: '7', kind: 'updated' };

describe('ToolResult factories', () => {
  it('ok() holds the outcome ok, its content, a copy of its artifacts and its write target', () => {
    const result = ToolResult.ok('done', artifacts, target);
    expect(result.outcome).toBe('ok');
    expect(result.isError).toBe(false);
    expect(result.content).toBe('done');
    expect(result.artifacts).toEqual(artifacts);
    expect(result.artifacts).not.toBe(artifacts);
    expect(result.writeTarget).toEqual(target);
  });

  it('ok() defaults to no artifacts and no write target', () => {
    const result = ToolResult.ok('done');
    expect(result.outcome).toBe('ok');
    expect(result.artifacts).toEqual([]);
    expect(result.writeTarget).toBeNull();
  });

  it('failed() holds the outcome failed, its content, no artifacts and no write target', () => {
    const result = ToolResult.failed('boom');
    expect(result.outcome).toBe('failed');
    expect(result.isError).toBe(true);
    expect(result.content).toBe('boom');
    expect(result.artifacts).toEqual([]);
    expect(result.writeTarget).toBeNull();
  });

  it('cancelled() holds the outcome cancelled, its content, no artifacts and no write target', () => {
    const result = ToolResult.cancelled('stopped');
    expect(result.outcome).toBe('cancelled');
    expect(result.isError).toBe(true);
    expect(result.content).toBe('stopped');
    expect(result.artifacts).toEqual([]);
    expect(result.writeTarget).toBeNull();
  });

  it.each(TOOL_OUTCOMES)('of(%s) yields a result with that outcome and that content', (outcome) => {
    const result = ToolResult.of(outcome, 'text');
    expect(result.outcome).toBe(outcome);
    expect(result.content).toBe('text');
  });

  it('of(ok) keeps the artifacts and the write target it was given', () => {
    const result = ToolResult.of('ok', 'done', artifacts, target);
    expect(result.outcome).toBe('ok');
    expect(result.artifacts).toEqual(artifacts);
    expect(result.writeTarget).toEqual(target);
  });
});

describe('ToolResult.isError', () => {
  const expected: Record<ToolOutcome, boolean> = { ok: false, failed: true, cancelled: true };

  it('covers every outcome in the table', () => {
    expect(Object.keys(expected).sort()).toEqual([...TOOL_OUTCOMES].sort());
  });

  it.each(TOOL_OUTCOMES)('is true exactly when the outcome is not ok (%s)', (outcome) => {
    expect(ToolResult.of(outcome, 'x').isError).toBe(expected[outcome]);
    expect(ToolResult.of(outcome, 'x').isError).toBe(outcome !== 'ok');
  });

  it('is false for ok() and true for failed() and cancelled()', () => {
    expect(ToolResult.ok('x').isError).toBe(false);
    expect(ToolResult.failed('x').isError).toBe(true);
    expect(ToolResult.cancelled('x').isError).toBe(true);
  });
});

describe('ToolResult is fail-closed', () => {
  it.each(['failed', 'cancelled'] as const)(
    'of(%s, content, artifacts, writeTarget) keeps neither artifacts nor write target',
    (outcome) => {
      const result = ToolResult.of(outcome, 'partial output', artifacts, target);
      expect(result.outcome).toBe(outcome);
      expect(result.isError).toBe(true);
      expect(result.content).toBe('partial output');
      expect(result.artifacts).toEqual([]);
      expect(result.artifacts).toHaveLength(0);
      expect(result.writeTarget).toBeNull();
    },
  );

  it.each(['failed', 'cancelled'] as const)('withWriteTarget on a %s result is a no-op', (outcome) => {
    const result = ToolResult.of(outcome, 'x');
    const attached = result.withWriteTarget(target);
    expect(attached.outcome).toBe(outcome);
    expect(attached.isError).toBe(true);
    expect(attached.writeTarget).toBeNull();
    expect(attached.artifacts).toEqual([]);
    expect(attached.content).toBe('x');
  });

  it('withWriteTarget on an ok result attaches the target and keeps the rest', () => {
    const result = ToolResult.ok('done', artifacts);
    const attached = result.withWriteTarget(target);
    expect(attached.outcome).toBe('ok');
    expect(attached.writeTarget).toEqual(target);
    expect(attached.content).toBe('done');
    expect(attached.artifacts).toEqual(artifacts);
    expect(result.writeTarget).toBeNull();
  });

  it('withWriteTarget on an ok result replaces an earlier target', () => {
    const attached = ToolResult.ok('done', [], target).withWriteTarget(otherTarget);
    expect(attached.writeTarget).toEqual(otherTarget);
  });
});

describe('ToolResult is immutable', () => {
  it.each(TOOL_OUTCOMES)('a %s result and its artifacts list are frozen', (outcome) => {
    const result = ToolResult.of(outcome, 'x', artifacts, target);
    expect(Object.isFrozen(result)).toBe(true);
    expect(Object.isFrozen(result.artifacts)).toBe(true);
  });

  it('refuses assignment to its fields', () => {
    const result = ToolResult.failed('boom');
    const writable = result as unknown as { outcome: string; content: string; writeTarget: unknown };
    expect(() => {
      writable.outcome = 'ok';
    }).toThrow(TypeError);
    expect(() => {
      writable.content = 'fine';
    }).toThrow(TypeError);
    expect(() => {
      writable.writeTarget = target;
    }).toThrow(TypeError);
    expect(result.outcome).toBe('failed');
    expect(result.content).toBe('boom');
    expect(result.writeTarget).toBeNull();
  });

  it('refuses changes to its artifacts list', () => {
    const result = ToolResult.ok('done', artifacts);
    const list = result.artifacts as ToolArtifact[];
    expect(() => list.push({ title: 'x', type: 'text', content: 'y' })).toThrow(TypeError);
    expect(result.artifacts).toHaveLength(2);
  });

  it('is not changed when the array passed to it changes afterwards', () => {
    const input: ToolArtifact[] = [{ title: 'A', type: 'text', content: 'a' }];
    const result = ToolResult.ok('done', input);
    input.push({ title: 'B', type: 'text', content: 'b' });
    expect(result.artifacts).toHaveLength(1);
  });
});

describe('ToolResult.withChannels', () => {
  it.each(TOOL_OUTCOMES)('keeps the outcome %s and replaces the content', (outcome) => {
    const result = ToolResult.of(outcome, 'before').withChannels('after', []);
    expect(result.outcome).toBe(outcome);
    expect(result.isError).toBe(outcome !== 'ok');
    expect(result.content).toBe('after');
  });

  it('on ok replaces the artifacts and keeps the write target', () => {
    const replacement: ToolArtifact[] = [{ title: 'New', type: 'text', content: 'n' }];
    const result = ToolResult.ok('before', artifacts, target).withChannels('after', replacement);
    expect(result.outcome).toBe('ok');
    expect(result.artifacts).toEqual(replacement);
    expect(result.writeTarget).toEqual(target);
  });

  it.each(['failed', 'cancelled'] as const)(
    'on %s stays fail-closed even when given artifacts',
    (outcome) => {
      const result = ToolResult.of(outcome, 'before').withChannels('after', artifacts);
      expect(result.outcome).toBe(outcome);
      expect(result.artifacts).toEqual([]);
      expect(result.writeTarget).toBeNull();
    },
  );
});

describe('a failure code', () => {
  it('is kept by a failed result, through bounding, and stated in the step', () => {
    const result = ToolResult.failed('x'.repeat(60_000), 'MCP_TRANSPORT_FAILURE');
    expect(result.failureCode).toBe('MCP_TRANSPORT_FAILURE');
    expect(boundToolResult(result).failureCode).toBe('MCP_TRANSPORT_FAILURE');
    expect(ToolResult.of('failed', 'x', [], null, 'TOOL_ERROR').failureCode).toBe('TOOL_ERROR');
  });

  it.each(['ok', 'cancelled'] as const)('is never held by a %s result', (outcome) => {
    expect(ToolResult.of(outcome, 'x', [], null, 'TOOL_ERROR').failureCode).toBeNull();
  });

  it.each(['', 'tool_error', '1CODE', 'A-B', `A${'B'.repeat(64)}`])(
    '%j is refused: FAILURE_CODE_INVALID',
    (code) => {
      expect(() => ToolResult.failed('x', code)).toThrow(
        expect.objectContaining({ code: FailureCodeRefusal.Invalid }),
      );
    },
  );

  it('is public in the step and its detail line; the failed text stays in the payload', () => {
    const call = {
      round: 0,
      durationMs: 12,
      toolName: 'echo',
      server: 'fs',
      arguments: {},
      sessionStartMs: 340,
    };
    const [step] = new RunTrace().recordToolResult(call, ToolResult.failed('secret words', 'TOOL_ERROR'));
    expect(step?.metadata).toMatchObject({ failureCode: 'TOOL_ERROR', sessionStartMs: 340 });
    expect(JSON.stringify(step?.metadata)).not.toContain('secret');
    expect(step && RunStep.failureCodeOf(step)).toBe('TOOL_ERROR');
    expect(step && detailLine(step)).toBe(
      'fs/echo · failed: TOOL_ERROR · session start 340 ms · args 2 B · result 12 B',
    );
    const [ok] = new RunTrace().recordToolResult({ ...call, sessionStartMs: null }, ToolResult.ok('fine'));
    expect(ok && RunStep.failureCodeOf(ok)).toBeNull();
    expect(ok?.metadata).not.toHaveProperty('sessionStartMs');
  });
});
