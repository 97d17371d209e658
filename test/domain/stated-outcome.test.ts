import { describe, expect, it } from 'vitest';
import { statedOutcome } from '../../src/domain/stated-outcome.ts';
import { STEP_KINDS } from '../../src/domain/step-kind.ts';
import { TOOL_OUTCOMES, type ToolOutcome } from '../../src/domain/tool-outcome.ts';

describe('statedOutcome: the boolean-first rule', () => {
  const nonToolKinds = STEP_KINDS.filter((kind) => kind !== 'tool');

  it.each(nonToolKinds)('a %s step states no outcome, whatever its boolean and stored outcome', (kind) => {
    for (const toolIsError of [null, true, false]) {
      for (const toolOutcome of [null, ...TOOL_OUTCOMES]) {
        expect(statedOutcome(kind, toolIsError, toolOutcome)).toBeNull();
      }
    }
  });

  const outcomes = [null, ...TOOL_OUTCOMES] as const;

  it.each(outcomes)('toolIsError null states no outcome whatever the stored outcome (%s)', (toolOutcome) => {
    expect(statedOutcome('tool', null, toolOutcome)).toBeNull();
  });

  it('toolIsError null states no outcome even beside an unknown stored string', () => {
    expect(statedOutcome('tool', null, 'timeout')).toBeNull();
  });

  const bothSet = [true, false].flatMap((toolIsError) =>
    TOOL_OUTCOMES.map((toolOutcome) => ({ toolIsError, toolOutcome })),
  );

  it.each(bothSet)(
    'toolIsError $toolIsError beside the stored outcome $toolOutcome states that outcome',
    ({ toolIsError, toolOutcome }) => {
      expect(statedOutcome('tool', toolIsError, toolOutcome)).toBe(toolOutcome);
    },
  );

  it('toolIsError true with no stored outcome states failed', () => {
    expect(statedOutcome('tool', true, null)).toBe('failed');
  });

  it('toolIsError false with no stored outcome states ok', () => {
    expect(statedOutcome('tool', false, null)).toBe('ok');
  });

  it('a legacy error row is failed, never cancelled', () => {
    expect(statedOutcome('tool', true, null)).not.toBe('cancelled');
  });

  it('the full table', () => {
    const expected: Array<[boolean | null, ToolOutcome | null, ToolOutcome | null]> = [
      [null, null, null],
      [null, 'ok', null],
      [null, 'failed', null],
      [null, 'cancelled', null],
      [true, null, 'failed'],
      [true, 'ok', 'ok'],
      [true, 'failed', 'failed'],
      [true, 'cancelled', 'cancelled'],
      [false, null, 'ok'],
      [false, 'ok', 'ok'],
      [false, 'failed', 'failed'],
      [false, 'cancelled', 'cancelled'],
    ];
    const actual = expected.map(([toolIsError, toolOutcome]) => [
      toolIsError,
      toolOutcome,
      statedOutcome('tool', toolIsError, toolOutcome),
    ]);
    expect(actual).toEqual(expected);
  });

  it.each([true, false])('an unknown stored string beside toolIsError %s throws', (toolIsError) => {
    expect(() => statedOutcome('tool', toolIsError, 'timeout')).toThrow(TypeError);
    expect(() => statedOutcome('tool', toolIsError, 'OK')).toThrow(/unknown stored tool outcome/);
    expect(() => statedOutcome('tool', toolIsError, '')).toThrow(TypeError);
  });
});
