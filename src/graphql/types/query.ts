import type { RunPageRow } from '../../db/runs.ts';
import { listRuns } from '../../db/runs.ts';
import { Limits } from '../../domain/limits.ts';
import { restrictOwners } from '../../domain/permissions.ts';
import { builder } from '../builder.ts';
import { decodeCursor, encodeCursor, isRunPosition, RUN_CURSOR, requireUuid } from '../ids.ts';
import { storableStrings } from '../input-text.ts';
import { pageSize, toPage } from '../pagination.ts';
import { RunStatusEnum, ToolOutcomeEnum } from './enums.ts';
import { RunConnection } from './run.ts';
import { RunRef } from './run-ref.ts';

const RunFilter = builder.inputType('RunFilter', {
  fields: (t) => ({
    status: t.field({ type: [RunStatusEnum], description: 'Runs in any of these statuses.' }),
    configuration: t.stringList({ description: 'Runs of any of these configurations.' }),
    owner: t.stringList({ description: 'Runs started by any of these actors.' }),
    createdAfter: t.field({ type: 'DateTime', description: 'Created at or after this instant.' }),
    createdBefore: t.field({ type: 'DateTime', description: 'Created at or before this instant.' }),
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
      const after = args.after ? decodeCursor(RUN_CURSOR, args.after, isRunPosition) : null;
      const filter = args.filter ?? {};
      const configurations = storableStrings(filter.configuration, 'filter.configuration');
      const owners = restrictOwners(context.actor, storableStrings(filter.owner, 'filter.owner'));
      if (owners?.length === 0) return toPage<RunPageRow>([], size, after !== null, () => '');
      const rows = await listRuns(context.db, {
        filter: {
          statuses: filter.status,
          configurations,
          owners,
          createdFrom: filter.createdAfter,
          createdTo: filter.createdBefore,
          hasToolOutcome: filter.hasToolOutcome,
        },
        limit: size + 1,
        after,
      });
      // Prime the loader so run(uuid) and node(id) in the same request reuse these rows.
      for (const row of rows) context.loaders.runById.prime(row.id, row);
      return toPage<RunPageRow>(rows, size, after !== null, (run) => encodeCursor(RUN_CURSOR, run.position));
    },
  }),
}));
