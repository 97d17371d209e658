import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from './builder.ts';
import './types/scalars.ts';
import './types/enums.ts';
import './types/outcome-counts.ts';
import './types/timeline.ts';
import './types/run-step.ts';
import './types/run.ts';
import './types/query.ts';
import './types/json.ts';
import './types/errors.ts';
import './types/recording.ts';
import './types/outcome-stats.ts';
import './types/run-stats.ts';
import './types/mcp-server.ts';
import './types/viewer.ts';
import './types/live.ts';
import './types/human-request.ts';
import './types/api-key.ts';

export const schema = builder.toSchema();

/** The contract as committed in schema.graphql: printed, lexicographically sorted. */
export function printContract(): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
