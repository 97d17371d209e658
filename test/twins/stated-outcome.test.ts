// Twins: the boolean-first rule (docs/architecture.md, "The rule it keeps") is written twice, as `statedOutcome` in
// src/domain/stated-outcome.ts and as the SQL function `stated_tool_outcome` of the migrations.
// The first suite pins the TypeScript definition to a table written by hand; the second runs the
// SQL function on every combination and compares it with the TypeScript one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statedOutcome } from '../../src/domain/stated-outcome.ts';
import { STEP_KINDS } from '../../src/domain/step-kind.ts';
import { TOOL_OUTCOMES, type ToolOutcome } from '../../src/domain/tool-outcome.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';

describe('statedOutcome (TypeScript): the boolean-first rule', () => {
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

const booleans = [null, true, false] as const;
const storedOutcomes = [null, ...TOOL_OUTCOMES] as const;
const combinations = STEP_KINDS.flatMap((kind) =>
  booleans.flatMap((toolIsError) =>
    storedOutcomes.map((toolOutcome) => ({ kind, toolIsError, toolOutcome })),
  ),
);

describe.each(backendNames)(
  'stated_tool_outcome (SQL) agrees with statedOutcome (TypeScript) (%s)',
  (backend) => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await openTestDatabase(backend);
    });
    afterAll(async () => database?.dispose());

    it('for every combination of kind, tool_is_error and tool_outcome, evaluated by the SQL function', async () => {
      const rows = await database.handle.withSession((session) =>
        session.query<{ i: number; stated: string | null }>(
          `SELECT i::int AS i, stated_tool_outcome(k, e, o) AS stated
           FROM unnest($1::int[], $2::text[], $3::boolean[], $4::text[]) AS c(i, k, e, o) ORDER BY i`,
          [
            combinations.map((_, i) => i),
            combinations.map((c) => c.kind),
            combinations.map((c) => c.toolIsError),
            combinations.map((c) => c.toolOutcome),
          ],
        ),
      );
      expect(rows).toHaveLength(combinations.length);
      for (const row of rows) {
        const combination = combinations[row.i];
        if (!combination) throw new Error(`no combination ${row.i}`);
        expect({ ...combination, stated: row.stated }).toEqual({
          ...combination,
          stated: statedOutcome(combination.kind, combination.toolIsError, combination.toolOutcome),
        });
      }
    });
  },
);
