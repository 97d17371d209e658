import { type SQL, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { runSteps } from '../../drizzle/schema.ts';
import { ToolOutcome } from '../domain/tool-outcome.ts';

/**
 * The boolean-first rule in SQL: a call of `stated_tool_outcome`, defined once
 * in migrations/0008. Every query that filters or groups by outcome goes
 * through here; a test proves it agrees with `statedOutcome()` in src/domain.
 */
export function statedOutcomeSql(
  columns: {
    kind: AnyPgColumn | SQL;
    toolIsError: AnyPgColumn | SQL;
    toolOutcome: AnyPgColumn | SQL;
  } = runSteps,
): SQL<ToolOutcome | null> {
  return sql<ToolOutcome | null>`stated_tool_outcome(${columns.kind}, ${columns.toolIsError}, ${columns.toolOutcome})`;
}

/**
 * Tool calls counted by the outcome they state: the one way every count in SQL
 * is made. bigint, as statistics over many runs can pass 2^31; read as numbers.
 */
export function outcomeTallySql(outcome: SQL<ToolOutcome | null>): Record<ToolOutcome, SQL<number>> {
  const count = (value: ToolOutcome) =>
    sql<number>`count(*) filter (where ${outcome} = ${value})`.mapWith(Number);
  return {
    ok: count(ToolOutcome.Ok),
    failed: count(ToolOutcome.Failed),
    cancelled: count(ToolOutcome.Cancelled),
  };
}
