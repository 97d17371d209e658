// Which of the service's environment variables a header may carry to a server: only those the operator
// lists in RUNLEDGER_MCP_HEADER_ENV, checked at registration, at update and again at every call.
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpServers } from '../../drizzle/schema.ts';
import type { McpServerConfig } from '../../src/domain/mcp-server.ts';
import { McpPolicy } from '../../src/mcp/outbound-policy.ts';
import type { McpSettings } from '../../src/mcp/settings.ts';
import { callMcpTool } from '../../src/mcp/tool-adapter.ts';
import { createServer, type Server } from '../../src/server.ts';
import { openTestApi, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { type HttpToolServer, startHttpToolServer } from '../support/mcp-tool-server.ts';

const REGISTERED = { __typename: 'RegisterMcpServerSuccess' };
const NOT_ALLOWED = 'MCP_HEADER_ENV_NOT_ALLOWED';

const hex = () => randomBytes(4).toString('hex');
const unique = (prefix: string) => `${prefix}-${hex()}`;

/** A variable of the test's own, set to a value that must never leave the process unless listed. */
function tracer(prefix: string): { name: string; value: string; unset: () => void } {
  const name = `RUNLEDGER_TEST_${prefix}_${hex().toUpperCase()}`;
  const value = `postgres://runledger:pw-${hex()}@db.internal:5432/runledger`;
  process.env[name] = value;
  return { name, value, unset: () => delete process.env[name] };
}

describe('the header variable allow-list', () => {
  const config = (variable: string): McpServerConfig => ({
    identifier: 'unregistered',
    transport: 'streamable-http',
    url: 'http://127.0.0.1:9/mcp',
    command: null,
    args: [],
    headers: [{ name: 'X-Db', value: `env:${variable}` }],
  });

  it('lists nothing by default: no variable may be referenced', () => {
    const policy = new McpPolicy(TEST_MCP_SETTINGS);
    expect(policy.headerEnvRefusal('DATABASE_URL')).toBe(
      'the variable DATABASE_URL is not on RUNLEDGER_MCP_HEADER_ENV',
    );
    expect(policy.headerEnvValue('PATH')).toBeUndefined();
  });

  it('allows exactly the names listed, case and all', () => {
    const policy = new McpPolicy({ ...TEST_MCP_SETTINGS, headerEnv: ['GITHUB_TOKEN'] });
    expect(policy.headerEnvRefusal('GITHUB_TOKEN')).toBeNull();
    expect(policy.headerEnvRefusal('github_token')).not.toBeNull();
    expect(policy.headerEnvRefusal('DATABASE_URL')).not.toBeNull();
  });

  it('never reads a variable not listed, at call time: the adapter fails the call before any lookup', async () => {
    const secret = tracer('UNREAD');
    const reads: string[] = [];
    const environment = process.env;
    // Every read of the environment during the call is seen: the secret's must not be among them.
    process.env = new Proxy(environment, {
      get(target, key, receiver) {
        if (typeof key === 'string') reads.push(key);
        return Reflect.get(target, key, receiver);
      },
    });
    try {
      const outcome = await callMcpTool(
        config(secret.name),
        'echo',
        { text: 'x' },
        { signal: new AbortController().signal, timeoutMs: 5_000, policy: new McpPolicy(TEST_MCP_SETTINGS) },
      );
      expect([outcome.result.outcome, outcome.fault, outcome.answered]).toEqual([
        'failed',
        NOT_ALLOWED,
        false,
      ]);
      expect(outcome.result.content).toBe(
        `header X-Db: the variable ${secret.name} is not on RUNLEDGER_MCP_HEADER_ENV`,
      );
      expect(reads).not.toContain(secret.name);
    } finally {
      process.env = environment;
      secret.unset();
    }
  });
});

describe.each(backendNames)('header secrets from the environment (%s)', (backend) => {
  let api: TestApi;
  let http: HttpToolServer;
  const serverWith = (mcp: McpSettings) =>
    createServer({ handle: api.database.handle, graphiql: false, mcp });

  type Answer = { __typename: string; code?: string; field?: string };
  const save = async (mutation: 'registerMcpServer' | 'updateMcpServer', input: object, server?: Server) =>
    (
      await api.query<Record<string, Answer>>(
        `mutation ($input: McpServerInput!) { ${mutation}(input: $input) {
          __typename ... on Error { code } ... on InvalidInputError { field } } }`,
        { input },
        { server, actor: 'operator', permissions: ['manage_servers'] },
      )
    ).data?.[mutation];
  const register = (input: object, server?: Server) => save('registerMcpServer', input, server);
  const storedRow = async (identifier: string) =>
    (await api.database.handle.db.select().from(mcpServers).where(eq(mcpServers.identifier, identifier)))[0];
  /** Calls a tool in a new run and reads the recorded step back. */
  const call = async (server: string, via?: Server) => {
    const started = await api.query<{ startRun: { data: { uuid: string } } }>(
      'mutation { startRun(input: { configuration: "mcp-secrets" }) { ... on StartRunSuccess { data { uuid } } } }',
    );
    const result = await api.query<{
      callTool: {
        data?: {
          steps: Array<{ outcome: string; failureCode: string | null; payload: { content: string } }>;
        };
      };
    }>(
      `mutation ($input: CallToolInput!) { callTool(input: $input) {
        ... on RecordedStepsSuccess { data { steps { outcome failureCode payload } } } } }`,
      {
        input: {
          runUuid: started.data?.startRun.data.uuid,
          server,
          toolName: 'echo',
          arguments: { text: 'x' },
          timeoutMs: 20_000,
        },
      },
      { server: via },
    );
    return result.data?.callTool.data?.steps[0];
  };

  beforeAll(async () => {
    api = await openTestApi(backend);
    http = await startHttpToolServer();
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await api?.dispose();
  });

  describe('refused at registration and at update, nothing written', () => {
    it('a header that references DATABASE_URL, which no operator listed', async () => {
      const identifier = unique('exfiltrate');
      expect(
        await register({
          identifier,
          transport: 'STREAMABLE_HTTP',
          url: http.url,
          headers: [{ name: 'X-Db', value: 'env:DATABASE_URL' }],
        }),
      ).toEqual({ __typename: 'InvalidInputError', code: NOT_ALLOWED, field: 'headers.0.value' });
      expect(await storedRow(identifier)).toBeUndefined();
    });

    it('any variable not listed, whatever else is listed, its scheme or its spelling', async () => {
      const listing = serverWith({
        ...TEST_MCP_SETTINGS,
        headerEnv: ['RUNLEDGER_TEST_LISTED', 'DATABASE_URL'],
      });
      for (const [headers, field] of [
        [[{ name: 'Authorization', value: 'Bearer env:PGPASSWORD' }], 'headers.0.value'],
        [
          [
            { name: 'Authorization', value: 'Bearer env:RUNLEDGER_TEST_LISTED' },
            { name: 'X-Key', value: 'Token ENV:AWS_SECRET_ACCESS_KEY' },
          ],
          'headers.1.value',
        ],
        // Names are exact: a listed DATABASE_URL does not let database_url through.
        [[{ name: 'X-Db', value: 'env:database_url' }], 'headers.0.value'],
      ] as const) {
        const identifier = unique('not-listed');
        expect(
          await register({ identifier, transport: 'STREAMABLE_HTTP', url: http.url, headers }, listing),
        ).toEqual({ __typename: 'InvalidInputError', code: NOT_ALLOWED, field });
        expect(await storedRow(identifier)).toBeUndefined();
      }
    });

    it('an update that adds such a header leaves the server as it was', async () => {
      const identifier = unique('updated');
      const input = { identifier, transport: 'STREAMABLE_HTTP', url: http.url };
      expect(await register(input)).toEqual(REGISTERED);
      expect(
        await save('updateMcpServer', { ...input, headers: [{ name: 'X-Db', value: 'env:DATABASE_URL' }] }),
      ).toEqual({ __typename: 'InvalidInputError', code: NOT_ALLOWED, field: 'headers.0.value' });
      expect((await storedRow(identifier))?.headers).toEqual([]);
    });
  });

  it('a listed variable reaches the server, read at the call; the row holds the reference only', async () => {
    const secret = tracer('LISTED');
    try {
      const listing = serverWith({ ...TEST_MCP_SETTINGS, headerEnv: [secret.name] });
      const identifier = unique('listed');
      expect(
        await register(
          {
            identifier,
            transport: 'STREAMABLE_HTTP',
            url: http.url,
            headers: [{ name: 'Authorization', value: `Bearer env:${secret.name}` }],
          },
          listing,
        ),
      ).toEqual(REGISTERED);
      const before = http.authorizations.length;
      expect(await call(identifier, listing)).toMatchObject({ outcome: 'OK', failureCode: null });
      expect(http.authorizations.slice(before)).toContain(`Bearer ${secret.value}`);
      expect(JSON.stringify(await storedRow(identifier))).not.toContain(secret.value);
    } finally {
      secret.unset();
    }
  });

  describe('refused at call time, as a failed step, nothing sent', () => {
    const refusedStep = (header: string, variable: string) => ({
      outcome: 'FAILED',
      failureCode: NOT_ALLOWED,
      payload: expect.objectContaining({
        content: `header ${header}: the variable ${variable} is not on RUNLEDGER_MCP_HEADER_ENV`,
      }),
    });

    it('a variable no longer listed', async () => {
      const secret = tracer('DELISTED');
      try {
        const identifier = unique('delisted');
        const listing = serverWith({ ...TEST_MCP_SETTINGS, headerEnv: [secret.name] });
        const headers = [{ name: 'X-Db', value: `env:${secret.name}` }];
        expect(
          await register({ identifier, transport: 'STREAMABLE_HTTP', url: http.url, headers }, listing),
        ).toEqual(REGISTERED);
        expect(await call(identifier, listing)).toMatchObject({ outcome: 'OK' });
        // The same row, on a service whose operator has taken the variable off the list.
        const before = http.authorizations.length;
        const step = await call(identifier);
        expect(step).toMatchObject(refusedStep('X-Db', secret.name));
        expect(JSON.stringify(step)).not.toContain(secret.value);
        expect(http.authorizations.length).toBe(before);
      } finally {
        secret.unset();
      }
    });

    it('a row written before the list existed, naming DATABASE_URL', async () => {
      const identifier = unique('legacy');
      await api.database.handle.db.insert(mcpServers).values({
        identifier,
        transport: 'streamable-http',
        url: http.url,
        headers: [{ name: 'X-Db', value: 'env:DATABASE_URL' }],
      });
      const before = http.authorizations.length;
      const step = await call(identifier);
      expect(step).toMatchObject(refusedStep('X-Db', 'DATABASE_URL'));
      if (process.env.DATABASE_URL) expect(JSON.stringify(step)).not.toContain(process.env.DATABASE_URL);
      expect(http.authorizations.length).toBe(before);
    });
  });
});
