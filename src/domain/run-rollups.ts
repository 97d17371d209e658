import { checkRunTokenTotal } from './limits.ts';
import type { RunStep } from './run-step.ts';

/** What a batch of steps adds to its run's rollups: the highest round, tokens and cost. */
export interface RunRollups {
  /** The highest round among the steps; the run keeps the greatest it has seen. */
  rounds: number;
  promptTokens: number;
  completionTokens: number;
  estimatedCost: number;
}

/** A number the step's metadata states under this name; anything else counts as 0. */
function numberFact(step: RunStep, name: string): number {
  const value = step.metadata[name];
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function sum(steps: readonly RunStep[], value: (step: RunStep) => number): number {
  return steps.reduce((total, step) => total + value(step), 0);
}

/**
 * The rollups of new steps, read from their metadata (`promptTokens`,
 * `completionTokens`, `estimatedCost`), refused when they would take the run's
 * token totals past what every client reads exactly.
 */
export function stepRollups(
  steps: readonly RunStep[],
  run: { promptTokens: number; completionTokens: number },
): RunRollups {
  const promptTokens = sum(steps, (s) => numberFact(s, 'promptTokens'));
  const completionTokens = sum(steps, (s) => numberFact(s, 'completionTokens'));
  checkRunTokenTotal(run.promptTokens, promptTokens, 'model.promptTokens');
  checkRunTokenTotal(run.completionTokens, completionTokens, 'model.completionTokens');
  return {
    rounds: steps.reduce((highest, step) => Math.max(highest, step.round), 0),
    promptTokens,
    completionTokens,
    estimatedCost: sum(steps, (s) => numberFact(s, 'estimatedCost')),
  };
}
