import type { StepKind } from './step-kind.ts';
import { isToolOutcome, outcomeFromIsError, type ToolOutcome } from './tool-outcome.ts';

/**
 * The boolean-first rule: only a tool step states an outcome; its
 * `toolIsError` decides WHETHER it states one, `toolOutcome` decides WHICH.
 * Rows written before outcomes existed carry only the boolean and so keep the
 * outcome they always had. A non-tool step states none, whatever its boolean.
 *
 * Its SQL twin is `stated_tool_outcome(kind, tool_is_error, tool_outcome)`
 * (migrations/0008); a test runs every combination through both.
 */
export function statedOutcome(
  kind: StepKind | string,
  toolIsError: boolean | null,
  toolOutcome: string | null,
): ToolOutcome | null {
  if (kind !== 'tool' || toolIsError === null) return null;
  if (toolOutcome !== null) {
    // Stored outcomes are guarded by a CHECK constraint; anything else is a corrupt row.
    if (!isToolOutcome(toolOutcome)) throw new TypeError(`unknown stored tool outcome: ${toolOutcome}`);
    return toolOutcome;
  }
  return outcomeFromIsError(toolIsError);
}
