import type { RunRow } from '../../db/runs.ts';
import { builder } from '../builder.ts';
import { nodeTypename } from '../ids.ts';

/** Declared apart from its fields so that steps and runs can refer to each other. */
export const RunRef = builder.objectRef<RunRow>(nodeTypename('Run'));
