import { isToolOutcome, outcomeFromIsError, type ToolOutcome } from './tool-outcome.ts';

/**
 * The boolean-first rule: `toolIsError` decides WHETHER a step states an
 * outcome, `toolOutcome` decides WHICH. Rows written before outcomes existed
 * carry only the boolean and so keep the outcome they always had.
 *
 * Its SQL twin is `stated_tool_outcome(...)` (migrations/0002); a test runs
 * every combination through both.
 */
export function statedOutcome(toolIsError: boolean | null, toolOutcome: string | null): ToolOutcome | null {
  if (toolIsError === null) return null;
  if (toolOutcome !== null) {
    // Stored outcomes are guarded by a CHECK constraint; anything else is a corrupt row.
    if (!isToolOutcome(toolOutcome)) throw new TypeError(`unknown stored tool outcome: ${toolOutcome}`);
    return toolOutcome;
  }
  return outcomeFromIsError(toolIsError);
}
