// Private fields are declared once, with the permission that opens them (authScopes), and denied
// by one rule: null, with a FORBIDDEN error naming the permission. Every private field is asked
// here with and without it, on both databases; the schema and docs/keys.md must list the same set.
import { readFileSync } from 'node:fs';
import { type GraphQLError, type GraphQLField, isNonNullType, isObjectType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcessChannel } from '../../src/db/notifications.ts';
import { PERMISSIONS, type Permission } from '../../src/domain/permissions.ts';
import { privacyNote } from '../../src/graphql/builder.ts';
import { schema } from '../../src/graphql/schema.ts';
import { RunEvents } from '../../src/ledger/run-events.ts';
import { createServer, type Server } from '../../src/server.ts';
import {
  type AskAs,
  openTestApi,
  STDIO_TOOL_SERVER,
  TEST_MCP_SETTINGS,
  type TestApi,
} from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { SseReader, subscriptionRequest } from '../support/sse.ts';

/** Every private field and the permissions that open it, the first being the one a denial names. */
const PRIVATE: Record<string, readonly Permission[]> = {
  'HumanRequest.arguments': ['read_payloads', 'approve_runs'],
  'HumanRequest.comment': ['read_payloads', 'approve_runs'],
  'HumanRequest.prompt': ['read_payloads', 'approve_runs'],
  'HumanRequest.reason': ['read_payloads', 'approve_runs'],
  'HumanRequest.values': ['read_payloads', 'approve_runs'],
  'McpServer.args': ['manage_servers'],
  'McpServer.command': ['manage_servers'],
  'McpServer.headers': ['manage_servers'],
  'McpServer.url': ['manage_servers'],
  'RunStep.payload': ['read_payloads'],
  'ToolCallProgress.message': ['read_payloads'],
};

type Scopes = { $any?: Scopes; $all?: Scopes } & Partial<Record<Permission, unknown>>;

/** The permissions a scope map names, in order. */
function scopePermissions(scopes: Scopes): Permission[] {
  return Object.entries(scopes).flatMap(([name, value]) =>
    name === '$any' || name === '$all'
      ? scopePermissions(value as Scopes)
      : PERMISSIONS.filter((permission) => permission === name),
  );
}

function authScopesOf(field: GraphQLField<unknown, unknown>): Scopes | undefined {
  const options = field.extensions.pothosOptions as { authScopes?: Scopes } | undefined;
  return options?.authScopes;
}

/** Every field of the schema that has an auth scope, by Type.field. */
function scopedFields(): Map<string, { field: GraphQLField<unknown, unknown>; opens: Permission[] }> {
  const found = new Map<string, { field: GraphQLField<unknown, unknown>; opens: Permission[] }>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      const scopes = authScopesOf(field);
      if (scopes) found.set(`${type.name}.${field.name}`, { field, opens: scopePermissions(scopes) });
    }
  }
  return found;
}

describe('private fields in the schema', () => {
  it('are the listed ones, each scoped to its permissions', () => {
    const scoped = scopedFields();
    expect(Object.fromEntries([...scoped].map(([name, { opens }]) => [name, opens]))).toEqual(PRIVATE);
  });

  it('are nullable (a denied one reads null) and say in their description what they need', () => {
    for (const [name, { field, opens }] of scopedFields()) {
      expect(isNonNullType(field.type), `${name} must be nullable`).toBe(false);
      const [named, ...others] = opens;
      if (!named) throw new Error(`${name} has a scope that names no permission`);
      expect(field.description, name).toContain(privacyNote([named, ...others]));
    }
  });

  it('are listed with their permissions in docs/keys.md', () => {
    const keys = readFileSync(new URL('../../docs/keys.md', import.meta.url), 'utf8');
    const section = keys.split(/^## /m).find((part) => part.startsWith('Private fields')) ?? '';
    const rows = [...section.matchAll(/^\| `(\w+\.\w+)` \| (.+) \|$/gm)].map(([, field, opens]) => [
      field,
      [...(opens ?? '').matchAll(/`(\w+)`/g)].map(([, permission]) => permission),
    ]);
    expect(Object.fromEntries(rows)).toEqual(PRIVATE);
  });
});

const owner: AskAs = { actor: 'agent', permissions: ['read_own_runs', 'record', 'read_payloads'] };
const decider: AskAs = { actor: 'carol', permissions: ['read_all_runs', 'approve_runs'] };
const admin: AskAs = { actor: 'admin', permissions: ['read_all_runs', 'record', 'manage_servers'] };

const HEADER_VARIABLE = 'RUNLEDGER_TEST_PRIVATE_TOKEN';
const [command, ...args] = STDIO_TOOL_SERVER;

/** A denial as the rule has it: the field's path, FORBIDDEN, the permission named. */
function denial(path: ReadonlyArray<string | number>, permission: Permission) {
  return expect.objectContaining({
    path,
    extensions: { code: 'FORBIDDEN', permission },
  });
}

describe.each(backendNames)('private fields asked with and without their permission (%s)', (backend) => {
  let api: TestApi;
  let events: RunEvents;
  let server: Server;
  let run = '';
  let approval = '';
  let input = '';

  const ask = async <T = Record<string, unknown>>(
    query: string,
    variables: Record<string, unknown>,
    as: AskAs,
  ) => api.query<T>(query, variables, { ...as, server });
  /** dave sees every run and lists servers: he may ask every private field, and read those his permissions open. */
  const askWith = (permissions: Permission[]): AskAs => ({
    actor: 'dave',
    permissions: [...new Set<Permission>(['read_all_runs', ...permissions])],
  });
  const succeeded = async (query: string, variables: Record<string, unknown>, as: AskAs) => {
    const result = await ask<Record<string, { __typename: string; data?: unknown }>>(query, variables, as);
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    const answer = Object.values(result.data ?? {})[0];
    expect(answer?.__typename, JSON.stringify(answer)).toMatch(/Success$/);
    return answer?.data as Record<string, unknown>;
  };

  beforeAll(async () => {
    api = await openTestApi(backend);
    events = new RunEvents(inProcessChannel());
    server = createServer({
      handle: api.database.handle,
      graphiql: false,
      mcp: { ...TEST_MCP_SETTINGS, headerEnv: [HEADER_VARIABLE] },
      events,
    });
    const started = await succeeded(
      'mutation { startRun(input: { configuration: "private" }) { __typename ... on StartRunSuccess { data { uuid } } } }',
      {},
      owner,
    );
    run = String(started.uuid);
    await succeeded(
      `mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename ... on RecordedStepsSuccess { data { replayed } } } }`,
      { input: { runUuid: run, kind: 'LLM', round: 1, durationMs: 5, payload: { prompt: 'secret prompt' } } },
      owner,
    );
    const recorded = `__typename ... on RequestRecordedSuccess { data { request { uuid } } }`;
    const requestOf = (data: Record<string, unknown>) => (data.request as { uuid: string }).uuid;
    approval = requestOf(
      await succeeded(
        `mutation ($input: RequestApprovalInput!) { requestApproval(input: $input) { ${recorded} } }`,
        { input: { runUuid: run, toolName: 'deploy', arguments: { env: 'prod' }, reason: 'ship it' } },
        owner,
      ),
    );
    await succeeded(
      `mutation ($input: DecideApprovalInput!) { decideApproval(input: $input) { ${recorded} } }`,
      { input: { runUuid: run, request: approval, decision: 'APPROVE', comment: 'looks fine' } },
      decider,
    );
    input = requestOf(
      await succeeded(
        `mutation ($input: RequestInputInput!) { requestInput(input: $input) { ${recorded} } }`,
        {
          input: {
            runUuid: run,
            prompt: 'Which branch?',
            schema: { type: 'object', properties: { branch: { type: 'string' } }, required: ['branch'] },
          },
        },
        owner,
      ),
    );
    await succeeded(
      `mutation ($input: ProvideInputInput!) { provideInput(input: $input) { ${recorded} } }`,
      { input: { runUuid: run, request: input, values: { branch: 'main' } } },
      decider,
    );
    const register = `mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename ... on Error { code message } ... on RegisterMcpServerSuccess { data { identifier } } } }`;
    await succeeded(
      register,
      {
        input: {
          identifier: 'private-http',
          transport: 'STREAMABLE_HTTP',
          url: 'http://127.0.0.1:9/mcp',
          headers: [{ name: 'Authorization', value: `Bearer env:${HEADER_VARIABLE}` }],
        },
      },
      admin,
    );
    await succeeded(
      register,
      { input: { identifier: 'private-stdio', transport: 'STDIO', command, args } },
      admin,
    );
  }, 60_000);
  afterAll(async () => {
    await events?.close();
    await api?.dispose();
  });

  const PAYLOAD = 'query ($u: String!) { run(uuid: $u) { steps(first: 1) { edges { node { payload } } } } }';

  it('RunStep.payload', async () => {
    const denied = await ask(PAYLOAD, { u: run }, askWith([]));
    expect(denied.data).toEqual({ run: { steps: { edges: [{ node: { payload: null } }] } } });
    expect(denied.errors).toEqual([denial(['run', 'steps', 'edges', 0, 'node', 'payload'], 'read_payloads')]);
    const allowed = await ask(PAYLOAD, { u: run }, askWith(['read_payloads']));
    expect(allowed.errors).toBeUndefined();
    expect(allowed.data).toEqual({
      run: { steps: { edges: [{ node: { payload: { prompt: 'secret prompt' } } }] } },
    });
  });

  const REQUESTS = `query ($a: String!, $i: String!) {
    approval: humanRequest(uuid: $a) { arguments reason comment }
    input: humanRequest(uuid: $i) { prompt values } }`;

  it('HumanRequest.arguments, reason, comment, prompt, values', async () => {
    const denied = await ask(REQUESTS, { a: approval, i: input }, askWith([]));
    expect(denied.data).toEqual({
      approval: { arguments: null, reason: null, comment: null },
      input: { prompt: null, values: null },
    });
    const paths = [
      ['approval', 'arguments'],
      ['approval', 'reason'],
      ['approval', 'comment'],
      ['input', 'prompt'],
      ['input', 'values'],
    ];
    expect(denied.errors).toHaveLength(paths.length);
    expect(denied.errors).toEqual(expect.arrayContaining(paths.map((path) => denial(path, 'read_payloads'))));
    // Either permission opens them: read_payloads, or approve_runs (whoever may decide a request reads it).
    for (const permissions of [['read_payloads'], ['approve_runs']] satisfies Permission[][]) {
      const allowed = await ask(REQUESTS, { a: approval, i: input }, askWith(permissions));
      expect(allowed.errors, permissions.join()).toBeUndefined();
      expect(allowed.data).toEqual({
        approval: { arguments: { env: 'prod' }, reason: 'ship it', comment: 'looks fine' },
        input: { prompt: 'Which branch?', values: { branch: 'main' } },
      });
    }
  });

  const SERVERS = '{ mcpServers { identifier url command args headers { name value } } }';

  it('McpServer.url, command, args, headers', async () => {
    type Servers = { mcpServers: Array<Record<string, unknown>> };
    const denied = await ask<Servers>(SERVERS, {}, askWith([]));
    const deniedServers = denied.data?.mcpServers ?? [];
    expect(deniedServers.map((s) => s.identifier).sort()).toEqual(['private-http', 'private-stdio']);
    for (const listed of deniedServers)
      expect(listed).toEqual({
        identifier: listed.identifier,
        url: null,
        command: null,
        args: null,
        headers: null,
      });
    const fields = ['url', 'command', 'args', 'headers'];
    expect(denied.errors).toHaveLength(deniedServers.length * fields.length);
    expect(denied.errors).toEqual(
      expect.arrayContaining(
        deniedServers.flatMap((_, index) =>
          fields.map((field) => denial(['mcpServers', index, field], 'manage_servers')),
        ),
      ),
    );
    const allowed = await ask<Servers>(SERVERS, {}, { actor: 'ops', permissions: ['manage_servers'] });
    expect(allowed.errors).toBeUndefined();
    expect(allowed.data?.mcpServers).toEqual(
      expect.arrayContaining([
        {
          identifier: 'private-http',
          url: 'http://127.0.0.1:9/mcp',
          command: null,
          args: [],
          headers: [{ name: 'Authorization', value: `Bearer env:${HEADER_VARIABLE}` }],
        },
        { identifier: 'private-stdio', url: null, command, args, headers: [] },
      ]),
    );
  });

  const PROGRESS = `subscription ($uuid: String!, $after: Int) { runEvents(uuid: $uuid, afterSequence: $after) {
    progress { callId message } } }`;

  it('ToolCallProgress.message, in a live event', async () => {
    const open = async (permissions: Permission[]) => {
      const key = await api.keyFor('dave', askWith(permissions).permissions);
      const response = await server.fetch(
        subscriptionRequest(
          'http://runledger.test/graphql',
          key,
          { uuid: run, after: 1_000 },
          undefined,
          PROGRESS,
        ),
      );
      const stream = new SseReader(response);
      // The first event, the run itself: the stream is watching.
      expect((await stream.next())?.event).toBe('next');
      return stream;
    };
    /** The first event that reports progress, as it came: data and errors. */
    const progressOf = async (stream: SseReader) => {
      for (;;) {
        const message = await stream.next();
        if (message?.event !== 'next') throw new Error(`the stream ended: ${JSON.stringify(message)}`);
        const event = (message.data.data as { runEvents: { progress: unknown } } | undefined)?.runEvents;
        if (event?.progress) return message.data;
      }
    };
    const denied = await open([]);
    const allowed = await open(['read_payloads']);
    try {
      await events.callProgress(
        run,
        { id: 'call-1', toolName: 'deploy', server: 'private-http' },
        { progress: 1, total: 2, message: 'halfway there' },
      );
      const deniedEvent = await progressOf(denied);
      expect(deniedEvent.data).toEqual({ runEvents: { progress: { callId: 'call-1', message: null } } });
      expect(deniedEvent.errors as ReadonlyArray<GraphQLError> | undefined).toEqual([
        denial(['runEvents', 'progress', 'message'], 'read_payloads'),
      ]);
      const allowedEvent = await progressOf(allowed);
      expect(allowedEvent.errors).toBeUndefined();
      expect(allowedEvent.data).toEqual({
        runEvents: { progress: { callId: 'call-1', message: 'halfway there' } },
      });
    } finally {
      await denied.close();
      await allowed.close();
    }
  });
});
