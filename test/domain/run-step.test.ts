import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.ts';
import {
  RunStep,
  type RunStepProps,
  type RunStepRecord,
  StepInvariantError,
  StepRefusal,
  type StepRefusalCode,
} from '../../src/domain/run-step.ts';
import { STEP_KINDS, type StepKind } from '../../src/domain/step-kind.ts';
import { TOOL_OUTCOMES, type ToolOutcome } from '../../src/domain/tool-outcome.ts';
import type { WriteTarget } from '../../src/domain/tool-result.ts';

const at = new Date('2024-05-01T12:00:00.000Z');
const target: WriteTarget = { table: 'pages', uid: '42', kind: 'created' };

function props(overrides: Partial<RunStepProps> = {}): RunStepProps {
  return { sequence: 1, kind: 'llm', round: 0, durationMs: 0, occurredAt: at, ...overrides };
}

function toolProps(overrides: Partial<RunStepProps> = {}): RunStepProps {
  return props({ kind: 'tool', toolName: 'search', server: 'docs', ...overrides });
}

function refusalOf(build: () => unknown): unknown {
  try {
    build();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** Fails unless `build` throws a StepInvariantError with exactly `code`. */
function expectRefusal(build: () => unknown, code: StepRefusalCode): void {
  const error = refusalOf(build);
  expect(error).toBeInstanceOf(StepInvariantError);
  expect(error).toBeInstanceOf(DomainError);
  expect((error as StepInvariantError).code).toBe(code);
  expect((error as StepInvariantError).name).toBe('StepInvariantError');
}

const nonToolKinds = STEP_KINDS.filter((kind) => kind !== 'tool');
const errorOf: Record<ToolOutcome, boolean> = { ok: false, failed: true, cancelled: true };

describe('StepRefusal', () => {
  it('has the stable codes clients match on', () => {
    expect(StepRefusal).toEqual({
      InvalidKind: 'STEP_INVALID_KIND',
      InvalidSequence: 'STEP_INVALID_SEQUENCE',
      InvalidRound: 'STEP_INVALID_ROUND',
      InvalidDuration: 'STEP_INVALID_DURATION',
      InvalidOccurredAt: 'STEP_INVALID_OCCURRED_AT',
      UnknownOutcome: 'STEP_UNKNOWN_OUTCOME',
      OutcomeOnNonToolStep: 'STEP_OUTCOME_ON_NON_TOOL_STEP',
      OutcomeWithoutIsError: 'STEP_OUTCOME_WITHOUT_IS_ERROR',
      OutcomeContradictsIsError: 'STEP_OUTCOME_CONTRADICTS_IS_ERROR',
      WriteTargetOnWrongKind: 'STEP_WRITE_TARGET_ON_WRONG_KIND',
    });
  });
});

describe('RunStep refuses an outcome on a non-tool step', () => {
  const table = nonToolKinds.flatMap((kind) => TOOL_OUTCOMES.map((outcome) => ({ kind, outcome })));

  it('covers every kind but tool', () => {
    expect(nonToolKinds).toHaveLength(STEP_KINDS.length - 1);
    expect(nonToolKinds).toContain('tool_write');
  });

  it.each(table)('a $kind step with outcome $outcome', ({ kind, outcome }) => {
    expectRefusal(
      () => new RunStep(props({ kind, toolOutcome: outcome, toolIsError: errorOf[outcome] })),
      StepRefusal.OutcomeOnNonToolStep,
    );
  });
});

describe('RunStep refuses an outcome that contradicts toolIsError', () => {
  it('ok with toolIsError true', () => {
    expectRefusal(
      () => new RunStep(toolProps({ toolOutcome: 'ok', toolIsError: true })),
      StepRefusal.OutcomeContradictsIsError,
    );
  });

  it.each(['failed', 'cancelled'] as const)('%s with toolIsError false', (outcome) => {
    expectRefusal(
      () => new RunStep(toolProps({ toolOutcome: outcome, toolIsError: false })),
      StepRefusal.OutcomeContradictsIsError,
    );
  });

  it.each(TOOL_OUTCOMES)('%s with toolIsError null', (outcome) => {
    expectRefusal(
      () => new RunStep(toolProps({ toolOutcome: outcome, toolIsError: null })),
      StepRefusal.OutcomeWithoutIsError,
    );
  });

  it.each(TOOL_OUTCOMES)('%s with toolIsError left out', (outcome) => {
    expectRefusal(() => new RunStep(toolProps({ toolOutcome: outcome })), StepRefusal.OutcomeWithoutIsError);
    expectRefusal(
      () => new RunStep(toolProps({ toolOutcome: outcome, toolIsError: undefined })),
      StepRefusal.OutcomeWithoutIsError,
    );
  });
});

describe('RunStep refuses malformed values', () => {
  it('an unknown outcome string', () => {
    const bogus = 'timeout' as unknown as ToolOutcome;
    expectRefusal(
      () => new RunStep(toolProps({ toolOutcome: bogus, toolIsError: true })),
      StepRefusal.UnknownOutcome,
    );
    expectRefusal(
      () => new RunStep(toolProps({ toolOutcome: bogus, toolIsError: false })),
      StepRefusal.UnknownOutcome,
    );
    const cased = 'OK' as unknown as ToolOutcome;
    expectRefusal(
      () => new RunStep(toolProps({ toolOutcome: cased, toolIsError: false })),
      StepRefusal.UnknownOutcome,
    );
  });

  it('an unknown kind', () => {
    expectRefusal(
      () => new RunStep(props({ kind: 'thought' as unknown as StepKind })),
      StepRefusal.InvalidKind,
    );
    expectRefusal(() => new RunStep(props({ kind: 'TOOL' as unknown as StepKind })), StepRefusal.InvalidKind);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31])('sequence %s', (sequence) => {
    expectRefusal(() => new RunStep(props({ sequence })), StepRefusal.InvalidSequence);
  });

  it.each([-1, 0.5, Number.NaN])('round %s', (round) => {
    expectRefusal(() => new RunStep(props({ round })), StepRefusal.InvalidRound);
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('durationMs %s', (durationMs) => {
    expectRefusal(() => new RunStep(props({ durationMs })), StepRefusal.InvalidDuration);
  });

  it('an invalid date', () => {
    expectRefusal(
      () => new RunStep(props({ occurredAt: new Date('not a date') })),
      StepRefusal.InvalidOccurredAt,
    );
    expectRefusal(
      () => new RunStep(props({ occurredAt: '2024-05-01' as unknown as Date })),
      StepRefusal.InvalidOccurredAt,
    );
  });

  it.each(STEP_KINDS.filter((kind) => kind !== 'tool_write'))('a write target on a %s step', (kind) => {
    expectRefusal(
      () => new RunStep(props({ kind, writeTarget: target })),
      StepRefusal.WriteTargetOnWrongKind,
    );
  });
});

describe('RunStep accepts consistent steps', () => {
  it.each([
    ['ok', false],
    ['failed', true],
    ['cancelled', true],
  ] as const)('a tool step with outcome %s and toolIsError %s', (outcome, toolIsError) => {
    const step = new RunStep(toolProps({ toolOutcome: outcome, toolIsError }));
    expect(step.toolOutcome).toBe(outcome);
    expect(step.toolIsError).toBe(toolIsError);
    expect(step.outcome).toBe(outcome);
  });

  it.each([
    [true, 'failed'],
    [false, 'ok'],
  ] as const)('a legacy tool step with toolIsError %s and no outcome states %s', (toolIsError, stated) => {
    const step = new RunStep(toolProps({ toolIsError }));
    expect(step.toolOutcome).toBeNull();
    expect(step.toolIsError).toBe(toolIsError);
    expect(step.outcome).toBe(stated);
  });

  it('a tool step with neither boolean nor outcome states no outcome', () => {
    const step = new RunStep(toolProps());
    expect(step.toolIsError).toBeNull();
    expect(step.toolOutcome).toBeNull();
    expect(step.outcome).toBeNull();
  });

  it.each(nonToolKinds)('a %s step with neither boolean nor outcome', (kind) => {
    const step = new RunStep(props({ kind }));
    expect(step.kind).toBe(kind);
    expect(step.toolIsError).toBeNull();
    expect(step.toolOutcome).toBeNull();
    expect(step.outcome).toBeNull();
  });

  it('a tool_write step with a write target', () => {
    const step = new RunStep(props({ kind: 'tool_write', writeTarget: target, toolName: 'save' }));
    expect(step.writeTarget).toEqual(target);
    expect(step.outcome).toBeNull();
  });

  it('boundary values: sequence 1, round 0, durationMs 0', () => {
    const step = new RunStep(props({ sequence: 1, round: 0, durationMs: 0 }));
    expect(step.sequence).toBe(1);
    expect(step.round).toBe(0);
    expect(step.durationMs).toBe(0);
  });

  it('defaults the optional fields', () => {
    const step = new RunStep(props());
    expect(step.toolName).toBeNull();
    expect(step.server).toBeNull();
    expect(step.writeTarget).toBeNull();
    expect(step.payload).toEqual({});
    expect(step.metadata).toEqual({});
  });

  it('is frozen', () => {
    const step = new RunStep(toolProps({ toolOutcome: 'cancelled', toolIsError: true }));
    expect(Object.isFrozen(step)).toBe(true);
    const writable = step as unknown as { toolOutcome: string };
    expect(() => {
      writable.toolOutcome = 'ok';
    }).toThrow(TypeError);
    expect(step.outcome).toBe('cancelled');
  });
});

describe('RunStep.outcome follows the boolean-first rule', () => {
  const booleans = [null, true, false] as const;
  const outcomes = [null, ...TOOL_OUTCOMES] as const;

  it('for every accepted combination on a tool step', () => {
    let accepted = 0;
    for (const toolIsError of booleans) {
      for (const toolOutcome of outcomes) {
        const build = () => new RunStep(toolProps({ toolIsError, toolOutcome }));
        const consistent =
          toolOutcome === null || (toolIsError !== null && errorOf[toolOutcome] === toolIsError);
        if (!consistent) {
          expect(refusalOf(build)).toBeInstanceOf(StepInvariantError);
          continue;
        }
        accepted += 1;
        const expected = toolIsError === null ? null : (toolOutcome ?? (toolIsError ? 'failed' : 'ok'));
        expect(build().outcome).toBe(expected);
      }
    }
    // (null,null), (true,null), (false,null), (false,ok), (true,failed), (true,cancelled)
    expect(accepted).toBe(6);
  });
});

describe('RunStep records', () => {
  const samples: RunStepProps[] = [
    toolProps({
      sequence: 3,
      round: 2,
      durationMs: 120,
      toolOutcome: 'cancelled',
      toolIsError: true,
      payload: { arguments: { q: 'x' }, content: 'stopped', artifacts: [] },
      metadata: { contentBytes: 7, artifactCount: 0 },
    }),
    toolProps({ sequence: 4, toolOutcome: 'ok', toolIsError: false }),
    toolProps({ sequence: 5, toolOutcome: 'failed', toolIsError: true }),
    toolProps({ sequence: 6, toolIsError: true }),
    toolProps({ sequence: 7 }),
    props({ sequence: 8, kind: 'llm', payload: { prompt: 'hi' }, metadata: { promptTokens: 3 } }),
    props({ sequence: 9, kind: 'tool_write', toolName: 'save', server: 'cms', writeTarget: target }),
  ];

  it.each(samples)('round-trip step $sequence through toRecord and fromRecord', (sample) => {
    const step = new RunStep(sample);
    const back = RunStep.fromRecord(step.toRecord());
    expect(back).toEqual(step);
    expect(back.outcome).toBe(step.outcome);
    expect(back.writeTarget).toEqual(step.writeTarget);
  });

  it('toRecord holds the columns of the step', () => {
    const record = new RunStep(samples[0] ?? toolProps()).toRecord();
    expect(record).toEqual({
      sequence: 3,
      kind: 'tool',
      round: 2,
      durationMs: 120,
      occurredAt: at,
      toolName: 'search',
      server: 'docs',
      toolIsError: true,
      toolOutcome: 'cancelled',
      payload: { arguments: { q: 'x' }, content: 'stopped', artifacts: [] },
      metadata: { contentBytes: 7, artifactCount: 0 },
    });
  });

  it('stores the write target of a tool_write step as metadata.writeTarget', () => {
    const step = new RunStep(props({ kind: 'tool_write', writeTarget: target, metadata: { note: 'n' } }));
    const record = step.toRecord();
    expect(record.metadata).toEqual({
      note: 'n',
      writeTarget: { table: 'pages', uid: '42', kind: 'created' },
    });
    expect(step.metadata).toEqual({ note: 'n' });
    const back = RunStep.fromRecord(record);
    expect(back.writeTarget).toEqual(target);
    expect(back.metadata).toEqual({ note: 'n' });
  });

  it('does not add writeTarget to the metadata of a step without one', () => {
    const record = new RunStep(toolProps({ toolOutcome: 'ok', toolIsError: false })).toRecord();
    expect(record.metadata).not.toHaveProperty('writeTarget');
  });

  function record(overrides: Partial<RunStepRecord>): RunStepRecord {
    return {
      sequence: 1,
      kind: 'tool',
      round: 0,
      durationMs: 0,
      occurredAt: at,
      toolName: 'search',
      server: null,
      toolIsError: null,
      toolOutcome: null,
      payload: {},
      metadata: {},
      ...overrides,
    };
  }

  it.each([
    [{ toolOutcome: 'ok', toolIsError: true }, StepRefusal.OutcomeContradictsIsError],
    [{ toolOutcome: 'failed', toolIsError: false }, StepRefusal.OutcomeContradictsIsError],
    [{ toolOutcome: 'cancelled', toolIsError: false }, StepRefusal.OutcomeContradictsIsError],
    [{ toolOutcome: 'cancelled', toolIsError: null }, StepRefusal.OutcomeWithoutIsError],
    [{ toolOutcome: 'ok', toolIsError: null }, StepRefusal.OutcomeWithoutIsError],
    [{ toolOutcome: 'timeout', toolIsError: true }, StepRefusal.UnknownOutcome],
    [{ kind: 'llm', toolOutcome: 'failed', toolIsError: true }, StepRefusal.OutcomeOnNonToolStep],
    [{ kind: 'tool_write', toolOutcome: 'ok', toolIsError: false }, StepRefusal.OutcomeOnNonToolStep],
    [{ kind: 'thought' }, StepRefusal.InvalidKind],
    [{ sequence: 0 }, StepRefusal.InvalidSequence],
    [{ round: -1 }, StepRefusal.InvalidRound],
    [{ durationMs: -5 }, StepRefusal.InvalidDuration],
    [{ occurredAt: new Date(Number.NaN) }, StepRefusal.InvalidOccurredAt],
    [
      { kind: 'tool', metadata: { writeTarget: { table: 'pages', uid: '1', kind: 'created' } } },
      StepRefusal.WriteTargetOnWrongKind,
    ],
  ] as const)('fromRecord refuses the contradictory record %o with %s', (overrides, code) => {
    expectRefusal(() => RunStep.fromRecord(record(overrides as Partial<RunStepRecord>)), code);
  });

  it('fromRecord reads a legacy tool row by the boolean-first rule', () => {
    expect(RunStep.fromRecord(record({ toolIsError: true })).outcome).toBe('failed');
    expect(RunStep.fromRecord(record({ toolIsError: false })).outcome).toBe('ok');
    expect(RunStep.fromRecord(record({ toolIsError: null })).outcome).toBeNull();
  });
});
