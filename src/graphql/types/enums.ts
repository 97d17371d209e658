import { LOCALES } from '../../domain/labels.ts';
import { PERMISSIONS } from '../../domain/permissions.ts';
import { RUN_STATUSES, TERMINATION_REASONS } from '../../domain/run-status.ts';
import { STEP_KINDS } from '../../domain/step-kind.ts';
import { TOOL_OUTCOMES } from '../../domain/tool-outcome.ts';
import { builder } from '../builder.ts';

/** GraphQL enum values are the domain strings upper-cased; their internal values are the strings themselves. */
export function enumValues<T extends string>(values: readonly T[]) {
  return Object.fromEntries(values.map((value) => [value.toUpperCase(), { value }])) as Record<
    Uppercase<T>,
    { value: T }
  >;
}

export const ToolOutcomeEnum = builder.enumType('ToolOutcome', {
  description:
    'What became of one tool call. CANCELLED is never a failure: it does not count in failure rates.',
  values: enumValues(TOOL_OUTCOMES),
});

export const RunStatusEnum = builder.enumType('RunStatus', {
  description: 'COMPLETED, FAILED and CANCELLED are terminal.',
  values: enumValues(RUN_STATUSES),
});

export const StepKindEnum = builder.enumType('StepKind', { values: enumValues(STEP_KINDS) });

export const TerminationReasonEnum = builder.enumType('TerminationReason', {
  values: enumValues(TERMINATION_REASONS),
});

export const LocaleEnum = builder.enumType('Locale', { values: enumValues(LOCALES) });

export const PermissionEnum = builder.enumType('Permission', {
  description: 'What an API key lets its actor do (see the README: Keys, permissions and who sees what).',
  values: enumValues(PERMISSIONS),
});
