import { isOneOf } from './one-of.ts';

export const STEP_KINDS = [
  'request',
  'llm',
  'tool',
  'tool_write',
  'assembled',
  'context',
  'dropped',
  'approval',
  'input',
] as const;

export type StepKind = (typeof STEP_KINDS)[number];

export function isStepKind(value: unknown): value is StepKind {
  return isOneOf(value, STEP_KINDS);
}
