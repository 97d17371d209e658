import { readFileSync } from 'node:fs';
import { type GraphQLEnumType, isEnumType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { runSteps } from '../../drizzle/schema.ts';
import { OUTCOME_LABELS, outcomeLabelKey } from '../../src/domain/labels.ts';
import { TOOL_OUTCOMES, ToolOutcome } from '../../src/domain/tool-outcome.ts';
import { ToolResult } from '../../src/domain/tool-result.ts';
import { printContract, schema } from '../../src/graphql/schema.ts';
import { appendSteps } from '../../src/ledger/record-steps.ts';
import { createRun } from '../../src/ledger/start-run.ts';
import { openTestDatabase } from '../support/databases.ts';

describe('the committed contract', () => {
  it('schema.graphql is the printed, sorted schema the code builds', () => {
    const committed = readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8');
    expect(committed, 'schema.graphql drifted from the code: run npm run schema:print and review').toBe(
      printContract(),
    );
  });

  it('names the types and fields clients rely on', () => {
    const sdl = printContract();
    expect(sdl).toContain('enum ToolOutcome {\n  CANCELLED\n  FAILED\n  OK\n}');
    for (const [type, fields] of Object.entries({
      Run: [
        'id',
        'uuid',
        'status',
        'terminationReason',
        'configuration',
        'owner',
        'createdAt',
        'startedAt',
        'finishedAt',
        'rounds',
        'promptTokens',
        'completionTokens',
        'estimatedCost',
        'steps',
        'timeline',
        'toolOutcomeCounts',
      ],
      RunStep: [
        'id',
        'sequence',
        'kind',
        'round',
        'durationMs',
        'occurredAt',
        'toolName',
        'server',
        'toolIsError',
        'outcome',
        'outcomeLabel',
      ],
      OutcomeCounts: ['ok', 'failed', 'cancelled', 'total', 'failureRate'],
      Query: ['run', 'runs', 'node'],
    })) {
      const object = schema.getType(type);
      expect(object && 'getFields' in object ? Object.keys(object.getFields()) : []).toEqual(
        expect.arrayContaining(fields),
      );
    }
  });
});

describe('one string travels, end to end', () => {
  it('enum values, stored values, label keys and GraphQL enum values are the same strings', async () => {
    const domain = [...TOOL_OUTCOMES];
    expect(domain).toEqual(['ok', 'failed', 'cancelled']);
    expect(Object.values(ToolOutcome)).toEqual(domain);

    for (const locale of Object.keys(OUTCOME_LABELS) as Array<keyof typeof OUTCOME_LABELS>) {
      const suffixes = Object.keys(OUTCOME_LABELS[locale]).map((key) =>
        key.replace(/^runs\.detail\.outcome\./, ''),
      );
      expect(suffixes).toEqual(domain);
    }
    expect(domain.map(outcomeLabelKey)).toEqual(domain.map((o) => `runs.detail.outcome.${o}`));

    const graphqlEnum = schema.getType('ToolOutcome');
    expect(isEnumType(graphqlEnum)).toBe(true);
    const values = (graphqlEnum as GraphQLEnumType).getValues();
    const byName = Object.fromEntries(values.map((v) => [v.name, v.value]));
    expect(byName).toEqual(Object.fromEntries(domain.map((o) => [o.toUpperCase(), o])));

    // What the database stores when each outcome is recorded through the service.
    const database = await openTestDatabase('pglite');
    try {
      const run = await createRun(database.handle.db, { owner: 'a', configuration: 'c' });
      await appendSteps(database.handle.db, {
        runUuid: run.uuid,
        build: (trace) => {
          for (const outcome of domain) {
            trace.recordToolResult(
              { round: 1, durationMs: 1, toolName: 't', server: 's', arguments: null },
              ToolResult.of(outcome, ''),
            );
          }
        },
      });
      const stored = await database.handle.db
        .select({ outcome: runSteps.toolOutcome })
        .from(runSteps)
        .orderBy(runSteps.sequence);
      expect(stored.map((row) => row.outcome)).toEqual(domain);
    } finally {
      await database.dispose();
    }
  });
});
