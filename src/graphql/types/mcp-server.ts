import {
  findMcpServer,
  listMcpServers,
  type McpServerRow,
  recordContact,
  registerMcpServer,
  removeMcpServer,
  updateMcpServer,
} from '../../db/mcp-servers.ts';
import { InvalidInputError, RunNotFoundError, RunTerminalError } from '../../domain/errors.ts';
import { checkInteger, checkJson, checkName, Limits } from '../../domain/limits.ts';
import type { McpHeader } from '../../domain/mcp-server.ts';
import { can } from '../../domain/permissions.ts';
import { isTerminalStatus, type RunStatus } from '../../domain/run-status.ts';
import { callMcpTool } from '../../mcp/tool-adapter.ts';
import { builder } from '../builder.ts';
import { type Context, forbidden, requirePermission } from '../context.ts';
import { STEP_ERRORS } from './errors.ts';
import { OutcomeCountsRef } from './outcome-counts.ts';
import { RecordedSteps, record, runUuidOf } from './recording.ts';

const McpTransportEnum = builder.enumType('McpTransport', {
  values: { STREAMABLE_HTTP: { value: 'streamable-http' }, STDIO: { value: 'stdio' } } as const,
});

const McpHeaderRef = builder.objectRef<McpHeader>('McpHeader').implement({
  description:
    'A header sent to the server. The value is a reference to the service environment, never the secret.',
  fields: (t) => ({
    name: t.exposeString('name'),
    value: t.exposeString('value', { description: 'env:NAME, or an auth scheme and env:NAME.' }),
  }),
});

/** A server's configuration (where secrets live) is for those who manage servers: null and FORBIDDEN for others. */
function configuration<T>(context: Context, value: T): T {
  requirePermission(context, 'manage_servers');
  return value;
}

const CONFIGURATION = 'Needs manage_servers: null with a FORBIDDEN error otherwise.';

const McpServerRef = builder.objectRef<McpServerRow>('McpServer').implement({
  description:
    'An MCP server tools can be called on inside a run. Identifier, transport and statistics are for anyone who may read runs; the configuration (url, command, args, headers) only for manage_servers.',
  fields: (t) => ({
    identifier: t.exposeString('identifier'),
    transport: t.field({
      type: McpTransportEnum,
      resolve: (server) => server.transport as 'streamable-http' | 'stdio',
    }),
    url: t.string({
      nullable: true,
      description: `For STREAMABLE_HTTP: the endpoint. ${CONFIGURATION}`,
      resolve: (server, _args, context) => configuration(context, server.url),
    }),
    command: t.string({
      nullable: true,
      description: `For STDIO: the program. ${CONFIGURATION}`,
      resolve: (server, _args, context) => configuration(context, server.command),
    }),
    args: t.stringList({
      nullable: true,
      description: `For STDIO: its arguments. ${CONFIGURATION}`,
      resolve: (server, _args, context) => configuration(context, server.args),
    }),
    headers: t.field({
      type: [McpHeaderRef],
      nullable: true,
      description: `For STREAMABLE_HTTP: the headers sent, as references. ${CONFIGURATION}`,
      resolve: (server, _args, context) => configuration(context, server.headers),
    }),
    lastContactAt: t.expose('lastContactAt', {
      type: 'DateTime',
      nullable: true,
      description: 'The last call it answered.',
    }),
    lastLatencyMs: t.exposeInt('lastLatencyMs', { nullable: true }),
    toolOutcomeCounts: t.field({
      type: OutcomeCountsRef,
      description: 'Tool calls on this server over the last 30 days, in runs the caller may see.',
      resolve: (server, _args, context) => context.loaders.serverOutcomeCounts.load(server.identifier),
    }),
  }),
});

const McpHeaderInput = builder.inputType('McpHeaderInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    value: t.string({ required: true, description: 'env:NAME, or an auth scheme and env:NAME.' }),
  }),
});

const McpServerInput = builder.inputType('McpServerInput', {
  fields: (t) => ({
    identifier: t.string({ required: true }),
    transport: t.field({ type: McpTransportEnum, required: true }),
    url: t.string({ description: 'For STREAMABLE_HTTP: the endpoint, http or https.' }),
    command: t.string({ description: 'For STDIO: the program to start.' }),
    args: t.stringList({ description: 'For STDIO: its arguments.' }),
    headers: t.field({
      type: [McpHeaderInput],
      description:
        'For STREAMABLE_HTTP: headers to send. Each value is env:NAME or an auth scheme and env:NAME (Bearer env:GITHUB_TOKEN), read from the service environment at each call; a literal value is refused (MCP_LITERAL_CREDENTIAL).',
    }),
  }),
});

const CallToolInput = builder.inputType('CallToolInput', {
  fields: (t) => ({
    runUuid: t.string({ required: true }),
    server: t.string({ required: true, description: 'The identifier of a registered MCP server.' }),
    tool: t.string({ required: true }),
    arguments: t.field({ type: 'JSON', description: 'A JSON object.' }),
    timeoutMs: t.int({
      defaultValue: 60_000,
      required: true,
      description: 'The deadline: 1 to 600,000 ms. Past it the call is failed, not cancelled.',
    }),
    round: t.int({ defaultValue: 0, required: true }),
  }),
});

builder.queryFields((t) => ({
  mcpServers: t.field({
    type: [McpServerRef],
    description:
      'Registered servers, for anyone who may read runs (read_own_runs, read_all_runs) or manage servers.',
    resolve: (_root, _args, context) => {
      const reader = (['read_own_runs', 'read_all_runs', 'manage_servers'] as const).some((permission) =>
        can(context.actor, permission),
      );
      if (!reader) throw forbidden('read_own_runs');
      return listMcpServers(context.db);
    },
  }),
}));

builder.mutationFields((t) => ({
  registerMcpServer: t.field({
    type: McpServerRef,
    errors: { types: [InvalidInputError] },
    args: { input: t.arg({ type: McpServerInput, required: true }) },
    resolve: (_root, { input }, context) => {
      requirePermission(context, 'manage_servers');
      return registerMcpServer(context.db, input, context.mcp);
    },
  }),
  updateMcpServer: t.field({
    type: McpServerRef,
    errors: { types: [InvalidInputError] },
    args: { input: t.arg({ type: McpServerInput, required: true }) },
    resolve: (_root, { input }, context) => {
      requirePermission(context, 'manage_servers');
      return updateMcpServer(context.db, input, context.mcp);
    },
  }),
  removeMcpServer: t.field({
    type: McpServerRef,
    errors: { types: [InvalidInputError] },
    args: { identifier: t.arg.string({ required: true }) },
    resolve: (_root, { identifier }, context) => {
      requirePermission(context, 'manage_servers');
      return removeMcpServer(context.db, identifier);
    },
  }),
  callTool: t.field({
    type: RecordedSteps,
    description:
      'Calls a tool on a registered MCP server inside a run and records the step: OK, FAILED (an isError answer, a transport fault, the deadline) or CANCELLED (cancelRun cut it off). Never retried.',
    errors: { types: STEP_ERRORS },
    args: { input: t.arg({ type: CallToolInput, required: true }) },
    resolve: async (_root, { input }, context) => {
      requirePermission(context, 'record');
      const runUuid = runUuidOf(input.runUuid);
      const toolName = checkName(input.tool, 'tool');
      const timeoutMs = checkInteger(input.timeoutMs, 'timeoutMs', 1, 600_000);
      const args = input.arguments ?? {};
      if (typeof args !== 'object' || args === null || Array.isArray(args)) {
        throw new InvalidInputError('VALUE_INVALID', 'arguments must be a JSON object', 'arguments');
      }
      checkJson(args, 'arguments', Limits.maxArgumentsBytes);
      const server = await findMcpServer(context.db, checkName(input.server, 'server', 100));
      const run = await context.loaders.runByUuid.load(runUuid);
      // Calls go into one's own runs only; the loader has already hidden what the actor may not see.
      if (!run || run.owner !== context.actor.name) {
        throw new RunNotFoundError(runUuid);
      }
      if (isTerminalStatus(run.status as RunStatus))
        throw new RunTerminalError(runUuid, run.status, 'it takes no new calls');

      const controller = context.calls.begin(runUuid);
      let outcome: Awaited<ReturnType<typeof callMcpTool>>;
      try {
        outcome = await callMcpTool(server, toolName, args, {
          signal: controller.signal,
          timeoutMs,
          policy: context.mcp,
        });
      } finally {
        context.calls.end(runUuid, controller);
      }
      if (outcome.answered) await recordContact(context.db, server.identifier, outcome.latencyMs);
      const { result, latencyMs } = outcome;
      return record(context, { runUuid }, (now) => [
        {
          type: 'toolResult',
          call: {
            round: input.round,
            durationMs: latencyMs,
            toolName,
            server: server.identifier,
            arguments: args,
            occurredAt: now,
          },
          result,
        },
      ]);
    },
  }),
}));
