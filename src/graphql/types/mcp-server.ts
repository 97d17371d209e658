import type { McpServerRow } from '../../db/mcp-servers.ts';
import { Limits } from '../../domain/limits.ts';
import type { McpHeader } from '../../domain/mcp-server.ts';
import type { JsonObject } from '../../domain/run-step.ts';
import { callTool } from '../../ledger/call-tool.ts';
import {
  findServers,
  LIST_TOOLS_TIMEOUT_MS,
  type ListedTool,
  listServers,
  listServerTools,
  MAX_LISTED_TOOLS,
  registerServer,
  removeServer,
  updateServer,
} from '../../ledger/mcp-servers.ts';
import { builder, privateField } from '../builder.ts';
import { nodeTypename } from '../ids.ts';
import { SERVER_ERRORS } from './errors.ts';
import { OutcomeCountsRef } from './outcome-counts.ts';
import { RecordedStepsSuccess, STEP_RESULT } from './recording.ts';

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

/** A server's configuration (where secrets live) is for those who manage servers. */
const configuration = (description: string) => privateField(description, 'manage_servers');

const McpServerRef = builder.objectRef<McpServerRow>(nodeTypename('McpServer'));

const McpToolRef = builder.objectRef<ListedTool>('McpTool').implement({
  description: 'A tool an MCP server lists (tools/list), as it states it; its texts cleaned and cut.',
  fields: (t) => ({
    name: t.exposeString('name', { description: 'What callTool takes as toolName.' }),
    title: t.exposeString('title', { nullable: true }),
    description: t.exposeString('description', { nullable: true }),
    inputSchema: t.field({
      type: 'JSON',
      description: 'The JSON Schema of its arguments.',
      resolve: (tool) => tool.inputSchema as JsonObject,
    }),
  }),
});

builder.node(McpServerRef, {
  isTypeOf: (value) =>
    typeof value === 'object' && value !== null && 'transport' in value && 'identifier' in value,
  id: { resolve: (server) => server.identifier },
  loadMany: (identifiers, context) => findServers(context, identifiers),
  description:
    'An MCP server tools can be called on inside a run. Identifier, transport and statistics are for anyone who may read runs; the configuration (url, command, args, headers) only for manage_servers. node(id) finds it for those who may list servers, and is null for anyone else.',
  fields: (t) => ({
    identifier: t.exposeString('identifier'),
    transport: t.field({
      type: McpTransportEnum,
      resolve: (server) => server.transport as 'streamable-http' | 'stdio',
    }),
    url: t.string({
      ...configuration('For STREAMABLE_HTTP: the endpoint.'),
      resolve: (server) => server.url,
    }),
    command: t.string({
      ...configuration('For STDIO: the program.'),
      resolve: (server) => server.command,
    }),
    args: t.stringList({
      ...configuration('For STDIO: its arguments.'),
      resolve: (server) => server.args,
    }),
    headers: t.field({
      type: [McpHeaderRef],
      ...configuration('For STREAMABLE_HTTP: the headers sent, as references.'),
      resolve: (server) => server.headers,
    }),
    lastContactAt: t.expose('lastContactAt', {
      type: 'DateTime',
      nullable: true,
      description: 'The last call it answered.',
    }),
    lastLatencyMs: t.exposeInt('lastLatencyMs', { nullable: true }),
    tools: t.field({
      type: [McpToolRef],
      // Null with its error where it cannot be listed: the rest of the server still reads.
      nullable: true,
      description: `The tools the server lists now, asked on its kept session (started if need be), within timeoutMs in all; at most ${MAX_LISTED_TOOLS.toLocaleString('en-US')}. For those who may call them (record) or manage servers, else FORBIDDEN; a fault of the server is its MCP_* code (MCP_DEADLINE_EXHAUSTED past the deadline).`,
      args: {
        timeoutMs: t.arg.int({
          defaultValue: LIST_TOOLS_TIMEOUT_MS,
          required: true,
          description: `1 to ${Limits.maxToolCallTimeoutMs.toLocaleString('en-US')} ms.`,
        }),
      },
      resolve: (server, { timeoutMs }, context) =>
        listServerTools(context, server.identifier, context.mcp.sessions, timeoutMs),
    }),
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
    url: t.string({
      description:
        'For STREAMABLE_HTTP: the endpoint, http or https. Its host and port must be on RUNLEDGER_MCP_ALLOWED_HOSTS (an entry without a port allows 80 and 443), else MCP_REFUSED_HOST.',
    }),
    command: t.string({ description: 'For STDIO: the program to start.' }),
    args: t.stringList({ description: 'For STDIO: its arguments.' }),
    headers: t.field({
      type: [McpHeaderInput],
      description:
        'For STREAMABLE_HTTP: headers to send. Each value is env:NAME or an auth scheme and env:NAME (Bearer env:GITHUB_TOKEN), read from the service environment at each call; a literal value is refused (MCP_LITERAL_CREDENTIAL), and so is a NAME the operator did not list in RUNLEDGER_MCP_HEADER_ENV (MCP_HEADER_ENV_NOT_ALLOWED).',
    }),
  }),
});

const CallToolInput = builder.inputType('CallToolInput', {
  fields: (t) => ({
    runUuid: t.string({ required: true }),
    server: t.string({ required: true, description: 'The identifier of a registered MCP server.' }),
    toolName: t.string({ required: true }),
    arguments: t.field({ type: 'JSON', description: 'A JSON object.' }),
    timeoutMs: t.int({
      defaultValue: Limits.defaultToolCallTimeoutMs,
      required: true,
      description: `The deadline: 1 to ${Limits.maxToolCallTimeoutMs.toLocaleString('en-US')} ms. Past it the call is failed, not cancelled.`,
    }),
    round: t.int({ defaultValue: 0, required: true }),
  }),
});

builder.queryFields((t) => ({
  mcpServers: t.field({
    type: [McpServerRef],
    description:
      'Registered servers, for anyone who may read runs (read_own_runs, read_all_runs) or manage servers.',
    resolve: (_root, _args, context) => listServers(context),
  }),
}));

builder.mutationFields((t) => ({
  registerMcpServer: t.field({
    type: McpServerRef,
    errors: { types: SERVER_ERRORS },
    args: { input: t.arg({ type: McpServerInput, required: true }) },
    resolve: (_root, { input }, context) => registerServer(context, input, context.mcp.policy),
  }),
  updateMcpServer: t.field({
    type: McpServerRef,
    errors: { types: SERVER_ERRORS },
    args: { input: t.arg({ type: McpServerInput, required: true }) },
    resolve: (_root, { input }, context) =>
      updateServer(context, input, context.mcp.policy, context.mcp.sessions),
  }),
  removeMcpServer: t.field({
    type: McpServerRef,
    errors: { types: SERVER_ERRORS },
    args: { identifier: t.arg.string({ required: true }) },
    resolve: (_root, { identifier }, context) => removeServer(context, identifier, context.mcp.sessions),
  }),
  callTool: t.field({
    type: RecordedStepsSuccess,
    description:
      'Calls a tool on a registered MCP server inside a run and records the step: OK, FAILED (an isError answer, a transport fault, the deadline) or CANCELLED (cancelRun cut it off). Never retried.',
    errors: STEP_RESULT,
    args: { input: t.arg({ type: CallToolInput, required: true }) },
    resolve: (_root, { input }, context) => callTool(context, input, context.mcp),
  }),
}));
