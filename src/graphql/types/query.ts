import { listRuns, type RunPageRow, type RunFilter as RunRowFilter } from '../../db/runs.ts';
import { Limits } from '../../domain/limits.ts';
import { restrictOwners } from '../../domain/permissions.ts';
import { builder } from '../builder.ts';
import { decodeCursor, encodeCursor, isRunPosition, RUN_CURSOR, requireUuid, runListHash } from '../ids.ts';
import { storableStrings } from '../input-text.ts';
import { pageSize, toPage } from '../pagination.ts';
import { RunStatusEnum, ToolOutcomeEnum } from './enums.ts';
import { RunConnection, runPage } from './run.ts';
import { RunRef } from './run-ref.ts';

const RunFilter = builder.inputType('RunFilter', {
  fields: (t) => ({
    statuses: t.field({ type: [RunStatusEnum], description: 'Runs in any of these statuses.' }),
    configurations: t.stringList({ description: 'Runs of any of these configurations.' }),
    owners: t.stringList({ description: 'Runs started by any of these actors.' }),
    createdAfter: t.field({ type: 'DateTime', description: 'Created at or after this instant (inclusive).' }),
    createdBefore: t.field({ type: 'DateTime', description: 'Created before this instant (exclusive).' }),
    hasToolOutcome: t.field({
      type: ToolOutcomeEnum,
      description: 'Runs with at least one tool step stating this outcome (boolean-first rule).',
    }),
  }),
});

builder.queryFields((t) => ({
  run: t.field({
    type: RunRef,
    nullable: true,
    description: 'The run with this UUID, or null when there is none.',
    args: { uuid: t.arg.string({ required: true }) },
    resolve: (_root, { uuid }, context) => context.loaders.runByUuid.load(requireUuid(uuid, 'uuid')),
  }),
  runs: t.field({
    type: RunConnection,
    description: 'Runs, newest first.',
    args: {
      first: t.arg.int({
        description: `Page size: default ${Limits.defaultPageSize}, at most ${Limits.maxPageSize}.`,
      }),
      after: t.arg.string(),
      filter: t.arg({ type: RunFilter }),
    },
    resolve: async (_root, args, context) => {
      const size = pageSize(args.first);
      const filter = args.filter ?? {};
      const hash = runListHash({
        statuses: filter.statuses,
        configurations: filter.configurations,
        owners: filter.owners,
        createdAfter: filter.createdAfter,
        createdBefore: filter.createdBefore,
        hasToolOutcome: filter.hasToolOutcome,
      });
      const after = args.after ? decodeCursor(RUN_CURSOR, args.after, isRunPosition, hash) : null;
      const configurations = storableStrings(filter.configurations, 'filter.configurations');
      const owners = restrictOwners(context.actor, storableStrings(filter.owners, 'filter.owners'));
      const cursorOf = (run: RunPageRow) => encodeCursor(RUN_CURSOR, run.position, hash);
      if (owners?.length === 0) return runPage(toPage<RunPageRow>([], size, after !== null, cursorOf), null);
      const runFilter: RunRowFilter = {
        statuses: filter.statuses,
        configurations,
        owners,
        createdFrom: filter.createdAfter,
        createdTo: filter.createdBefore,
        hasToolOutcome: filter.hasToolOutcome,
      };
      const rows = await listRuns(context.db, { filter: runFilter, limit: size + 1, after });
      // Prime the loader so run(uuid) and node(id) in the same request reuse these rows.
      for (const row of rows) context.loaders.runById.prime(row.id, row);
      return runPage(toPage<RunPageRow>(rows, size, after !== null, cursorOf), runFilter);
    },
  }),
}));
