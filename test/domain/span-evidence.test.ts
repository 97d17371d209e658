import { describe, expect, it } from 'vitest';
import { InvalidInputError, RunTerminalError } from '../../src/domain/errors.ts';
import {
  checkRunAcceptsSpanStep,
  FAILURE_REASON_LENGTH,
  failureCodeFromEvidence,
  failureReasonFromEvidence,
  isCancellationErrorType,
  isCancellationException,
  runEndingFromEvidence,
  type SpanEvidence,
  spanRunUuid,
  toolOutcomeFromEvidence,
  worseEnding,
} from '../../src/domain/span-evidence.ts';
import { checkFailureCode } from '../../src/domain/tool-result.ts';
import { isUuid } from '../../src/domain/uuid.ts';

const silent: SpanEvidence = { statedOutcome: null, errorType: null, status: 'unset', cancelNotified: false };
const outcome = (evidence: Partial<SpanEvidence>) => toolOutcomeFromEvidence({ ...silent, ...evidence });

describe('the outcome of a tool span, by evidence', () => {
  it('is ok when nothing says otherwise, whether the status is UNSET or OK', () => {
    expect(outcome({})).toBe('ok');
    expect(outcome({ status: 'ok' })).toBe('ok');
  });

  it('is failed for status ERROR or any error.type that is not a cancellation', () => {
    expect(outcome({ status: 'error' })).toBe('failed');
    expect(outcome({ errorType: 'tool_error' })).toBe('failed');
    expect(outcome({ errorType: 'tool_error', status: 'error' })).toBe('failed');
    expect(outcome({ errorType: 'TypeError', status: 'error' })).toBe('failed');
    expect(outcome({ errorType: 'timeout', status: 'error' })).toBe('failed');
    expect(outcome({ errorType: '500' })).toBe('failed');
  });

  it('is cancelled for an error.type naming a cancellation or abort, whatever the status says', () => {
    for (const errorType of [
      'cancelled',
      'canceled',
      'CANCELLED',
      'AbortError',
      'CancelledError',
      'OperationCanceledException',
      'TaskCanceledException',
      'context.Canceled',
      'asyncio.CancelledError',
      'tool_cancelled',
      'RequestAborted',
    ]) {
      expect(isCancellationErrorType(errorType), errorType).toBe(true);
      expect(outcome({ errorType, status: 'error' }), errorType).toBe('cancelled');
      expect(outcome({ errorType, status: 'unset' }), errorType).toBe('cancelled');
    }
    for (const errorType of ['tool_error', 'timeout', 'TypeError', 'DeadlineExceeded', 'ECONNRESET']) {
      expect(isCancellationErrorType(errorType), errorType).toBe(false);
    }
  });

  it('is cancelled when an MCP notifications/cancelled was sent for the call, over an ERROR status or tool_error', () => {
    expect(outcome({ cancelNotified: true })).toBe('cancelled');
    expect(outcome({ cancelNotified: true, status: 'error', errorType: 'tool_error' })).toBe('cancelled');
  });

  it('takes runledger.tool.outcome first, over every other piece of evidence', () => {
    expect(
      outcome({ statedOutcome: 'ok', status: 'error', errorType: 'AbortError', cancelNotified: true }),
    ).toBe('ok');
    expect(outcome({ statedOutcome: 'failed', errorType: 'cancelled' })).toBe('failed');
    expect(outcome({ statedOutcome: 'cancelled', errorType: 'tool_error', status: 'error' })).toBe(
      'cancelled',
    );
  });

  it('refuses a stated outcome that is not one of the three, naming the attribute', () => {
    for (const statedOutcome of ['maybe', 'OK', 'canceled', '']) {
      const refusal = (() => {
        try {
          outcome({ statedOutcome });
        } catch (error) {
          return error;
        }
      })();
      expect(refusal, statedOutcome).toBeInstanceOf(InvalidInputError);
      expect((refusal as InvalidInputError).code).toBe('VALUE_INVALID');
      expect((refusal as InvalidInputError).field).toBe('runledger.tool.outcome');
    }
  });

  it('ignores an error.type of blanks', () => {
    expect(outcome({ errorType: '  ' })).toBe('ok');
  });
});

describe('how a root span ends its run', () => {
  it('completed, failed (not_retryable) or cancelled, by the same evidence', () => {
    const ending = (evidence: Partial<Omit<SpanEvidence, 'statedOutcome'>>) =>
      runEndingFromEvidence({ errorType: null, status: 'unset', cancelNotified: false, ...evidence });
    expect(ending({})).toEqual({ status: 'completed', reason: 'completed' });
    expect(ending({ status: 'error' })).toEqual({ status: 'failed', reason: 'not_retryable' });
    expect(ending({ status: 'error', errorType: 'CancelledError' })).toEqual({
      status: 'cancelled',
      reason: 'cancelled',
    });
  });

  it('the worse of two endings: cancelled over failed over completed', () => {
    const completed = { status: 'completed', reason: 'completed' } as const;
    const failed = { status: 'failed', reason: 'not_retryable' } as const;
    const cancelled = { status: 'cancelled', reason: 'cancelled' } as const;
    expect(worseEnding(completed, failed)).toBe(failed);
    expect(worseEnding(failed, completed)).toBe(failed);
    expect(worseEnding(failed, cancelled)).toBe(cancelled);
    expect(worseEnding(cancelled, failed)).toBe(cancelled);
  });
});

describe('late spans', () => {
  const ended = { uuid: 'r', status: 'completed' as const, finishedAt: new Date('2026-01-01T00:00:10Z') };

  it('a run that has not ended takes every step', () => {
    const running = { ...ended, status: 'running' as const, finishedAt: null };
    expect(() =>
      checkRunAcceptsSpanStep(running, { occurredAt: new Date('2030-01-01T00:00:00Z'), durationMs: 0 }),
    ).not.toThrow();
  });

  it('an ended run takes the steps of calls that started before it ended, and no later one', () => {
    expect(() =>
      checkRunAcceptsSpanStep(ended, { occurredAt: new Date('2026-01-01T00:00:12Z'), durationMs: 2_000 }),
    ).not.toThrow();
    expect(() =>
      checkRunAcceptsSpanStep(ended, { occurredAt: new Date('2026-01-01T00:00:12Z'), durationMs: 1_999 }),
    ).toThrow(RunTerminalError);
  });
});

describe('the run a group of spans goes to', () => {
  it('is a UUID decided by the secret, sender, kind and key, and by nothing else', () => {
    const secret = 'k'.repeat(43);
    const trace = '0af7651916cd43dd8448eb211c80319c';
    const a = spanRunUuid(secret, 'alice', 'trace', trace);
    expect(isUuid(a)).toBe(true);
    expect(a[14]).toBe('8');
    expect(['8', '9', 'a', 'b']).toContain(a[19]);
    expect(spanRunUuid(secret, 'alice', 'trace', trace)).toBe(a);
    expect(spanRunUuid(secret, 'bob', 'trace', trace)).not.toBe(a);
    expect(spanRunUuid(secret, 'alice', 'conversation', trace)).not.toBe(a);
    // Without the service's secret the id cannot be computed from what travels (owner name, trace id).
    expect(spanRunUuid('x'.repeat(43), 'alice', 'trace', trace)).not.toBe(a);
  });
});

describe('the evidence the instrumentation libraries send', () => {
  const thrown = (type: string | null, message: string | null = null) =>
    outcome({ status: 'error', exceptions: [{ type, message }] });

  it.each([
    ['AbortError', null],
    ['ABORT_ERR', null],
    ['20', 'This operation was aborted'],
    ['CancelledError', null],
    ['-32001', 'MCP error -32001: AbortError: This operation was aborted'],
    ['Error', 'The operation was aborted'],
    [null, 'AbortError: This operation was aborted'],
    [null, 'Abort\n\nError: Abort\n    at EventTarget.listener'],
    ['Error', 'Request was aborted.'],
  ])('an exception %s / %s is a cancellation', (type, message) => {
    expect(thrown(type, message)).toBe('cancelled');
    expect(isCancellationException({ type, message })).toBe(true);
  });

  it.each([
    ['-32001', 'MCP error -32001: Request timed out'],
    ['TimeoutError', 'The operation was aborted due to timeout'],
    ['AbortError', 'signal timed out'],
    ['TypeError', 'path must be a string'],
    ['Error', 'connection refused'],
  ])('an exception %s / %s is a failure', (type, message) => {
    expect(thrown(type, message)).toBe('failed');
  });

  it('a timeout named by error.type is a failure, even with "abort" beside it', () => {
    expect(outcome({ errorType: 'TimeoutError' })).toBe('failed');
    expect(isCancellationErrorType('AbortedByTimeout')).toBe(false);
  });

  it('an exception without an ERROR status is still a failure, and a result saying isError too', () => {
    expect(outcome({ exceptions: [{ type: 'Error', message: 'boom' }] })).toBe('failed');
    expect(outcome({ resultIsError: true })).toBe('failed');
  });

  it.each([
    [{ errorType: 'tool_error' }, 'TOOL_ERROR'],
    [{ errorType: 'TypeError' }, 'TYPE_ERROR'],
    [{ errorType: 'AI_APICallError' }, 'AI_API_CALL_ERROR'],
    [{ errorType: 'openai.APIError' }, 'OPENAI_API_ERROR'],
    [{ errorType: '-32603' }, 'MCP_ERROR_32603'],
    [{ exceptions: [{ type: 'ECONNREFUSED', message: 'x' }] }, 'ECONNREFUSED'],
    [{ errorType: '500' }, 'MCP_ERROR_500'],
    [{ resultIsError: true }, 'TOOL_ERROR'],
    [
      {
        exceptions: [{ type: null, message: "MCP tool 'x' returned an error: y\n\nToolException: MCP tool" }],
      },
      'TOOL_EXCEPTION',
    ],
    [{ exceptions: [{ type: null, message: 'order service unavailable' }] }, 'EXCEPTION'],
    [{ status: 'error' as const }, null],
  ])('the public code of %j is %s', (evidence, code) => {
    expect(failureCodeFromEvidence({ ...silent, ...evidence })).toBe(code);
    // Whatever it derives is a failure code every entry point accepts.
    if (code !== null) expect(checkFailureCode(code)).toBe(code);
  });

  it('keeps the reason an exception or the status told, bounded', () => {
    expect(
      failureReasonFromEvidence({ ...silent, exceptions: [{ type: 'E', message: ' boom ' }] }, 'status says'),
    ).toBe('boom');
    expect(failureReasonFromEvidence(silent, 'x'.repeat(5_000))).toHaveLength(FAILURE_REASON_LENGTH);
    expect(failureReasonFromEvidence(silent, null)).toBeNull();
  });
});
