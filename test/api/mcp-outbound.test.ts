import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpServers } from '../../drizzle/schema.ts';
import type { McpServerConfig } from '../../src/domain/mcp-server.ts';
import type { Permission } from '../../src/domain/permissions.ts';
import { McpPolicy, normaliseAddress } from '../../src/mcp/outbound-policy.ts';
import { DEFAULT_MCP_SETTINGS, type McpSettings, mcpSettingsFromEnv } from '../../src/mcp/settings.ts';
import { callMcpTool } from '../../src/mcp/tool-adapter.ts';
import { createServer, type Server } from '../../src/server.ts';
import { openTestApi, STDIO_TOOL_SERVER, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { type HttpToolServer, startHttpToolServer } from '../support/mcp-tool-server.ts';

const HOSTILE_URLS = [
  'http://169.254.169.254/',
  'http://2852039166/',
  'http://[::ffff:169.254.169.254]/',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://metadata.google.internal./',
  'http://[fe80::1]/',
  'http://0.0.0.0:4790/',
  'http://[::]:4790/',
  'http://224.0.0.1/',
];

/** Loopback in its many spellings: refused unless the operator lists it. */
const LOOPBACK_URLS = [
  'http://0x7f.0.0.1:4790',
  'http://127.1:4790/',
  'http://0177.0.0.1:4790/',
  'http://[::ffff:127.0.0.1]:4790/',
  'http://[::1]:4790/',
  'http://localhost:4790/',
];

const REGISTERED = { __typename: 'RegisterMcpServerSuccess' };

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

describe('the outbound policy', () => {
  it('reads every spelling of an address as one', () => {
    expect(normaliseAddress('::ffff:a9fe:a9fe')).toEqual({ address: '169.254.169.254', family: 'ipv4' });
    expect(normaliseAddress('[::ffff:127.0.0.1]')).toEqual({ address: '127.0.0.1', family: 'ipv4' });
    expect(normaliseAddress('::a9fe:a9fe')).toEqual({ address: '169.254.169.254', family: 'ipv4' });
    expect(normaliseAddress('64:ff9b::a9fe:a9fe')).toEqual({ address: '169.254.169.254', family: 'ipv4' });
    expect(normaliseAddress('fe80::1%eth0')).toEqual({ address: 'fe80:0:0:0:0:0:0:1', family: 'ipv6' });
    expect(normaliseAddress('::1')).toEqual({ address: '0:0:0:0:0:0:0:1', family: 'ipv6' });
    expect(normaliseAddress('example.com')).toBeNull();
  });

  it('refuses metadata, link-local, unspecified and multicast whatever the allow-list says', () => {
    const policy = new McpPolicy({
      ...DEFAULT_MCP_SETTINGS,
      allowedHosts: ['*', '169.254.0.0/16', '0.0.0.0/0', '::/0', 'metadata.google.internal'],
    });
    for (const address of ['169.254.169.254', '::ffff:a9fe:a9fe', 'fe80::1', '0.0.0.0', '::', '224.0.0.1'])
      expect(policy.hostRefusal(address, 80, [address])).not.toBeNull();
    expect(policy.hostRefusal('metadata.google.internal', 80, null)).toMatch(/metadata/);
    // A name that resolves to such an address is refused the same.
    expect(policy.hostRefusal('mcp.example.com', 443, ['93.184.216.34', '169.254.169.254'])).toMatch(
      /link-local|metadata/,
    );
    // And an address range entry does open loopback and private ranges.
    expect(policy.hostRefusal('127.0.0.1', 80, ['127.0.0.1'])).toBeNull();
    expect(policy.hostRefusal('10.1.2.3', 443, ['10.1.2.3'])).toBeNull();
  });

  it('by default allows public hosts only, on ports 80 and 443', () => {
    const policy = new McpPolicy(DEFAULT_MCP_SETTINGS);
    expect(policy.hostRefusal('mcp.example.com', 443, ['93.184.216.34'])).toBeNull();
    expect(policy.hostRefusal('mcp.example.com', 80, ['93.184.216.34'])).toBeNull();
    expect(policy.hostRefusal('mcp.example.com', 8443, ['93.184.216.34'])).toBe(
      'port 8443 of mcp.example.com is not on RUNLEDGER_MCP_ALLOWED_HOSTS',
    );
    expect(policy.hostRefusal('mcp.example.com', 443, ['93.184.216.34', '10.0.0.1'])).toMatch(/private/);
    for (const address of ['127.0.0.1', '10.0.0.1', '172.16.0.1', '192.168.1.1', 'fd00::1', '::1'])
      expect(policy.hostRefusal(address, 443, [address])).not.toBeNull();
  });

  it('when listing names, refuses other names and leaves internal ranges closed', () => {
    const policy = new McpPolicy({
      ...DEFAULT_MCP_SETTINGS,
      allowedHosts: ['mcp.example.com', '*.corp.example'],
    });
    expect(policy.hostRefusal('mcp.example.com', 443, ['93.184.216.34'])).toBeNull();
    expect(policy.hostRefusal('a.corp.example', 443, ['93.184.216.34'])).toBeNull();
    expect(policy.hostRefusal('other.example.com', 443, ['93.184.216.34'])).toMatch(/not on/);
    expect(policy.hostRefusal('mcp.example.com', 443, ['10.0.0.1'])).toMatch(/private/);
  });

  it('reads its settings from the environment, and refuses entries it cannot read', () => {
    expect(mcpSettingsFromEnv({})).toEqual(DEFAULT_MCP_SETTINGS);
    expect(
      mcpSettingsFromEnv({
        RUNLEDGER_MCP_ALLOWED_HOSTS: '127.0.0.1, 10.0.0.0/8',
        RUNLEDGER_MCP_STDIO_COMMANDS: 'npx -y @modelcontextprotocol/server-filesystem, node',
        RUNLEDGER_MCP_STDIO_ENV: 'GITHUB_TOKEN',
        RUNLEDGER_MCP_HEADER_ENV: 'GITHUB_TOKEN, LINEAR_API_KEY',
      }),
    ).toEqual({
      allowedHosts: ['127.0.0.1', '10.0.0.0/8'],
      stdioCommands: [['npx', '-y', '@modelcontextprotocol/server-filesystem'], ['node']],
      stdioEnv: ['GITHUB_TOKEN'],
      headerEnv: ['GITHUB_TOKEN', 'LINEAR_API_KEY'],
    });
    expect(() => new McpPolicy({ ...DEFAULT_MCP_SETTINGS, allowedHosts: ['10.0.0.0/99'] })).toThrow(
      /RUNLEDGER_MCP_ALLOWED_HOSTS/,
    );
    expect(() => new McpPolicy({ ...DEFAULT_MCP_SETTINGS, stdioEnv: ['NOT A NAME'] })).toThrow(
      /RUNLEDGER_MCP_STDIO_ENV/,
    );
    expect(() => new McpPolicy({ ...DEFAULT_MCP_SETTINGS, headerEnv: ['NOT A NAME'] })).toThrow(
      /RUNLEDGER_MCP_HEADER_ENV/,
    );
  });

  describe('ports on the allow-list', () => {
    const policyOf = (...allowedHosts: string[]) => new McpPolicy({ ...DEFAULT_MCP_SETTINGS, allowedHosts });
    const PORT_REFUSED = (port: number, host: string) =>
      `port ${port} of ${host} is not on RUNLEDGER_MCP_ALLOWED_HOSTS`;

    it('an entry without a port allows 80 and 443 only: not the database, not the service itself', () => {
      const policy = policyOf('127.0.0.1', '10.0.0.5', 'mcp.example.com');
      for (const port of [80, 443]) {
        expect(policy.hostRefusal('127.0.0.1', port, ['127.0.0.1'])).toBeNull();
        expect(policy.hostRefusal('10.0.0.5', port, ['10.0.0.5'])).toBeNull();
        expect(policy.hostRefusal('mcp.example.com', port, ['93.184.216.34'])).toBeNull();
      }
      expect(policy.hostRefusal('127.0.0.1', 5432, ['127.0.0.1'])).toBe(PORT_REFUSED(5432, '127.0.0.1'));
      expect(policy.hostRefusal('127.0.0.1', 4000, ['127.0.0.1'])).toBe(PORT_REFUSED(4000, '127.0.0.1'));
      expect(policy.hostRefusal('10.0.0.5', 6379, ['10.0.0.5'])).toBe(PORT_REFUSED(6379, '10.0.0.5'));
      expect(policy.hostRefusal('mcp.example.com', 8443, ['93.184.216.34'])).toBe(
        PORT_REFUSED(8443, 'mcp.example.com'),
      );
    });

    it('host:port allows that port only; host:* every port', () => {
      const policy = policyOf('10.0.0.5:8080', 'mcp.example.com:*', '*.corp.example:8443');
      expect(policy.hostRefusal('10.0.0.5', 8080, ['10.0.0.5'])).toBeNull();
      for (const port of [80, 443, 5432, 8081])
        expect(policy.hostRefusal('10.0.0.5', port, ['10.0.0.5'])).toBe(PORT_REFUSED(port, '10.0.0.5'));
      for (const port of [80, 443, 8443, 65_535])
        expect(policy.hostRefusal('mcp.example.com', port, ['93.184.216.34'])).toBeNull();
      expect(policy.hostRefusal('a.corp.example', 8443, ['93.184.216.34'])).toBeNull();
      expect(policy.hostRefusal('a.corp.example', 443, ['93.184.216.34'])).toBe(
        PORT_REFUSED(443, 'a.corp.example'),
      );
      // A name entry's port does not open a private address: an address entry must allow the port too.
      expect(policy.hostRefusal('mcp.example.com', 8080, ['10.0.0.5'])).toBeNull();
      expect(policy.hostRefusal('mcp.example.com', 5432, ['10.0.0.5'])).toBe(
        PORT_REFUSED(5432, 'mcp.example.com'),
      );
      expect(policy.hostRefusal('mcp.example.com', 8080, ['10.9.9.9'])).toMatch(/private address not on/);
    });

    it('*:* allows every port of public hosts, and still opens no internal address', () => {
      const policy = policyOf('*:*');
      expect(policy.hostRefusal('mcp.example.com', 8443, ['93.184.216.34'])).toBeNull();
      expect(policy.hostRefusal('127.0.0.1', 8443, ['127.0.0.1'])).toMatch(/loopback address not on/);
      expect(policy.hostRefusal('169.254.169.254', 80, ['169.254.169.254'])).toMatch(/metadata/);
    });

    it('a range carries a port after its prefix; IPv6 with a port in brackets', () => {
      const policy = policyOf(
        '10.0.0.0/8:443',
        '[::1]:3000',
        '[fd00::/8]:8443',
        'fe80::/10',
        '::ffff:7f00:2',
      );
      expect(policy.hostRefusal('10.1.2.3', 443, ['10.1.2.3'])).toBeNull();
      expect(policy.hostRefusal('10.1.2.3', 22, ['10.1.2.3'])).toBe(PORT_REFUSED(22, '10.1.2.3'));
      expect(policy.hostRefusal('[::1]', 3000, ['::1'])).toBeNull();
      expect(policy.hostRefusal('::1', 3001, ['::1'])).toBe(PORT_REFUSED(3001, '::1'));
      expect(policy.hostRefusal('fd00::5', 8443, ['fd00::5'])).toBeNull();
      expect(policy.hostRefusal('fd00::5', 443, ['fd00::5'])).toBe(PORT_REFUSED(443, 'fd00::5'));
      // Unbracketed IPv6 is an address as a whole (no port); link-local stays refused whatever is listed.
      expect(policy.hostRefusal('fe80::1', 443, ['fe80::1'])).toMatch(/link-local/);
      expect(policy.hostRefusal('127.0.0.2', 80, ['127.0.0.2'])).toBeNull();
      expect(policy.hostRefusal('127.0.0.2', 8080, ['127.0.0.2'])).toBe(PORT_REFUSED(8080, '127.0.0.2'));
    });

    it('`::1:3000` is an IPv6 address, not ::1 on port 3000', () => {
      const policy = policyOf('::1:3000');
      expect(policy.hostRefusal('::1', 3000, ['::1'])).toMatch(/loopback address not on/);
    });

    it('a name resolved to several addresses needs the port allowed at every one', () => {
      const policy = policyOf('127.0.0.1:3000', '[::1]:4000');
      expect(policy.hostRefusal('localhost', 3000, ['127.0.0.1'])).toBeNull();
      expect(policy.hostRefusal('localhost', 3000, ['127.0.0.1', '::1'])).toMatch(/port 3000 of localhost/);
    });

    it('reads case, trailing dots and spaces as the same entry', () => {
      const policy = policyOf(' MCP.Example.COM.:8443 ');
      expect(policy.hostRefusal('mcp.example.com', 8443, ['93.184.216.34'])).toBeNull();
      expect(
        mcpSettingsFromEnv({ RUNLEDGER_MCP_ALLOWED_HOSTS: '[::1]:3000, 10.0.0.0/8:443,*:*' }).allowedHosts,
      ).toEqual(['[::1]:3000', '10.0.0.0/8:443', '*:*']);
    });

    it.each([
      'mcp.example.com:0',
      'mcp.example.com:65536',
      'mcp.example.com:',
      'mcp.example.com:08',
      'mcp.example.com:http',
      ':443',
      '*:',
      '[::1',
      '[::1]3000',
      '[::1]:',
      '[10.0.0.1]:80',
      '[mcp.example.com]:443',
      'fd00::/8:443',
      '10.0.0.0/8/9:443',
      '10.0.0.0/33:443',
      'a:b:c',
    ])('refuses the entry %s at start, naming the setting and the syntax', (entry) => {
      expect(() => policyOf(entry)).toThrow(
        new RegExp(
          `^RUNLEDGER_MCP_ALLOWED_HOSTS: cannot read the entry "${entry.replace(/[[\]*/]/g, '\\$&')}": .*host:port`,
        ),
      );
    });

    it('checks a literal at resolution with its port, as registration and the socket do', async () => {
      const policy = policyOf('127.0.0.1:3000');
      expect((await policy.resolveHost('127.0.0.1', 3000)).refusal).toBeNull();
      expect((await policy.resolveHost('127.0.0.1', 5432)).refusal).toBe(PORT_REFUSED(5432, '127.0.0.1'));
    });
  });

  it('allows a stdio program only with the leading arguments of its entry', () => {
    const policy = new McpPolicy({ ...DEFAULT_MCP_SETTINGS, stdioCommands: [['npx', '-y', 'pkg']] });
    expect(policy.commandRefusal('npx', ['-y', 'pkg', '/srv'])).toBeNull();
    expect(policy.commandRefusal('npx', ['-c', 'sh'])).toMatch(/RUNLEDGER_MCP_STDIO_COMMANDS/);
    expect(policy.commandRefusal('/bin/sh', ['-c', 'id'])).not.toBeNull();
  });
});

describe.each(backendNames)('MCP server secrets and outbound calls (%s)', (backend) => {
  let api: TestApi;
  let http: HttpToolServer;
  /** The service as it ships: public hosts only, no stdio program. */
  let strict: Server;
  const serverWith = (mcp: McpSettings) =>
    createServer({ handle: api.database.handle, graphiql: false, mcp });

  const register = async (input: Record<string, unknown>, server?: Server) =>
    (
      await api.query<{ registerMcpServer: { __typename: string; code?: string; field?: string } }>(
        `mutation ($input: McpServerInput!) { registerMcpServer(input: $input) {
          __typename ... on Error { code } ... on InvalidInputError { field } } }`,
        { input },
        { server },
      )
    ).data?.registerMcpServer;
  const storedRow = async (identifier: string) =>
    (await api.database.handle.db.select().from(mcpServers).where(eq(mcpServers.identifier, identifier)))[0];
  const startRun = async () =>
    (
      await api.query<{ startRun: { data: { uuid: string } } }>(
        'mutation { startRun(input: { configuration: "mcp-outbound" }) { ... on StartRunSuccess { data { uuid } } } }',
      )
    ).data?.startRun.data.uuid ?? '';
  /** Calls a tool and reads the recorded step back, payload included. */
  const call = async (server: string, tool: string, args: Record<string, unknown> = {}, via?: Server) => {
    const runUuid = await startRun();
    const result = await api.query<{
      callTool: {
        __typename: string;
        code?: string;
        data?: { steps: Array<{ outcome: string; payload: { content: string } }> };
      };
    }>(
      `mutation ($input: CallToolInput!) { callTool(input: $input) {
        __typename ... on Error { code }
        ... on RecordedStepsSuccess { data { steps { outcome payload } } } } }`,
      { input: { runUuid, server, toolName: tool, arguments: args, timeoutMs: 20_000 } },
      { server: via },
    );
    return result.data?.callTool;
  };

  beforeAll(async () => {
    api = await openTestApi(backend);
    http = await startHttpToolServer();
    strict = serverWith(DEFAULT_MCP_SETTINGS);
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await api?.dispose();
  });

  describe('who sees a server configuration', () => {
    const CONFIG = ['url', 'command', 'args', 'headers'];
    const LIST = `{ mcpServers { identifier transport lastContactAt lastLatencyMs toolOutcomeCounts { total }
      url command args headers { name value } } }`;
    type Listed = Record<string, unknown> & { identifier: string };
    let identifier: string;

    beforeAll(async () => {
      identifier = unique('visible');
      expect(
        await register(
          {
            identifier,
            transport: 'STREAMABLE_HTTP',
            url: `${http.url}?tenant=acme`,
            headers: [{ name: 'Authorization', value: 'Bearer env:RUNLEDGER_TEST_VISIBLE_TOKEN' }],
          },
          serverWith({ ...TEST_MCP_SETTINGS, headerEnv: ['RUNLEDGER_TEST_VISIBLE_TOKEN'] }),
        ),
      ).toEqual(REGISTERED);
    });

    const listAs = async (permissions: Permission[]) => {
      const result = await api.query<{ mcpServers: Listed[] | null }>(
        LIST,
        {},
        { actor: 'vera', permissions },
      );
      return {
        server: result.data?.mcpServers?.find((s) => s.identifier === identifier),
        errors: result.errors ?? [],
      };
    };

    it.each([[['read_own_runs']], [['read_all_runs']]] as Permission[][][])(
      'with %j: identifier, transport and statistics; configuration null with FORBIDDEN',
      async (permissions) => {
        const { server, errors } = await listAs(permissions);
        expect(server).toMatchObject({
          identifier,
          transport: 'STREAMABLE_HTTP',
          toolOutcomeCounts: { total: 0 },
          url: null,
          command: null,
          args: null,
          headers: null,
        });
        const forbidden = errors.filter(
          (error) => error.path?.[2] !== undefined && error.path[1] !== undefined,
        );
        expect(new Set(forbidden.map((error) => error.extensions?.code))).toEqual(new Set(['FORBIDDEN']));
        expect(new Set(forbidden.map((error) => error.path?.[2]))).toEqual(new Set(CONFIG));
        // Nothing of the configuration is anywhere in the answer.
        expect(JSON.stringify({ server, errors })).not.toMatch(
          /tenant=acme|RUNLEDGER_TEST_VISIBLE_TOKEN|127\.0\.0\.1/,
        );
      },
    );

    it('with manage_servers: the configuration, headers as references', async () => {
      const { server, errors } = await listAs(['manage_servers']);
      expect(errors).toEqual([]);
      expect(server).toMatchObject({
        url: `${http.url}?tenant=acme`,
        command: null,
        args: [],
        headers: [{ name: 'Authorization', value: 'Bearer env:RUNLEDGER_TEST_VISIBLE_TOKEN' }],
      });
    });

    it('without any read permission: FORBIDDEN', async () => {
      const result = await api.query(LIST, {}, { actor: 'vera', permissions: ['record'] });
      expect(result.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect(result.data?.mcpServers ?? null).toBeNull();
    });
  });

  describe('refused at registration, nothing written', () => {
    it.each(HOSTILE_URLS)('%s, even when the allow-list names it', async (url) => {
      const listsEverything = serverWith({
        ...TEST_MCP_SETTINGS,
        allowedHosts: ['*', '169.254.0.0/16', '0.0.0.0/0', '::/0', 'metadata.google.internal'],
      });
      for (const server of [strict, listsEverything, undefined]) {
        const identifier = unique('hostile');
        expect(await register({ identifier, transport: 'STREAMABLE_HTTP', url }, server)).toEqual({
          __typename: 'InvalidInputError',
          code: 'MCP_REFUSED_HOST',
          field: 'url',
        });
        expect(await storedRow(identifier)).toBeUndefined();
      }
    });

    it.each(LOOPBACK_URLS)('%s, by default', async (url) => {
      const identifier = unique('loopback');
      expect(await register({ identifier, transport: 'STREAMABLE_HTTP', url }, strict)).toEqual({
        __typename: 'InvalidInputError',
        code: 'MCP_REFUSED_HOST',
        field: 'url',
      });
      expect(await storedRow(identifier)).toBeUndefined();
    });

    it('a secret in the url or a literal header value', async () => {
      for (const [input, field] of [
        [{ url: 'http://user:hunter2@127.0.0.1:4790/mcp' }, 'url'],
        [
          { url: http.url, headers: [{ name: 'Authorization', value: 'Bearer ghp_abc123' }] },
          'headers.0.value',
        ],
        [{ url: http.url, headers: [{ name: 'X-Api-Key', value: 'env:' }] }, 'headers.0.value'],
      ] as const) {
        const identifier = unique('literal');
        expect(await register({ identifier, transport: 'STREAMABLE_HTTP', ...input })).toEqual({
          __typename: 'InvalidInputError',
          code: 'MCP_LITERAL_CREDENTIAL',
          field,
        });
        expect(await storedRow(identifier)).toBeUndefined();
      }
    });
  });

  describe('an allowed host on a port the allow-list does not name', () => {
    /** A second server on the same host, another port: what an allowed host's every port would expose. */
    let other: HttpToolServer;
    const portOf = (url: string) => new URL(url).port;
    /** Loopback on the first tool server's port only. */
    const onePort = () =>
      serverWith({
        ...TEST_MCP_SETTINGS,
        allowedHosts: [`127.0.0.1:${portOf(http.url)}`, `[::1]:${portOf(http.url)}`],
      });

    beforeAll(async () => {
      other = await startHttpToolServer();
    });
    afterAll(async () => {
      await other?.close();
    });

    it('is refused at registration, nothing written; the allowed port on the same host works', async () => {
      const only = onePort();
      // An entry without a port, as operators wrote them before ports existed: 80 and 443 only.
      const bare = serverWith({ ...TEST_MCP_SETTINGS, allowedHosts: ['127.0.0.1', '::1'] });
      for (const [url, server] of [
        [other.url, only],
        [other.url.replace('127.0.0.1', 'localhost'), only],
        [other.url, bare],
      ] as const) {
        const identifier = unique('other-port');
        expect(await register({ identifier, transport: 'STREAMABLE_HTTP', url }, server)).toEqual({
          __typename: 'InvalidInputError',
          code: 'MCP_REFUSED_HOST',
          field: 'url',
        });
        expect(await storedRow(identifier)).toBeUndefined();
      }
      const allowed = unique('one-port');
      expect(
        await register({ identifier: allowed, transport: 'STREAMABLE_HTTP', url: http.url }, only),
      ).toEqual(REGISTERED);
      expect((await call(allowed, 'echo', { text: 'hi' }, only))?.data?.steps[0]?.outcome).toBe('OK');
    });

    it('is refused at call time, as a failed step, and nothing reaches it', async () => {
      const identifier = unique('later-port');
      // Registered where loopback's every port is allowed; called where one port is.
      expect(await register({ identifier, transport: 'STREAMABLE_HTTP', url: other.url })).toEqual(
        REGISTERED,
      );
      const before = other.authorizations.length;
      const refused = await call(identifier, 'echo', { text: 'hi' }, onePort());
      expect(refused?.data?.steps[0]?.outcome).toBe('FAILED');
      expect(refused?.data?.steps[0]?.payload.content).toBe(
        `refused host: port ${portOf(other.url)} of 127.0.0.1 is not on RUNLEDGER_MCP_ALLOWED_HOSTS`,
      );
      expect(other.authorizations.length).toBe(before);
    });
  });

  describe('refused at call time, as a failed step', () => {
    it.each([
      ['an address the allow-list no longer names', () => http.url],
      ['a name that resolves to a refused address', () => http.url.replace('127.0.0.1', 'localhost')],
    ])('%s', async (_case, url) => {
      const identifier = unique('later-refused');
      expect(await register({ identifier, transport: 'STREAMABLE_HTTP', url: url() })).toEqual(REGISTERED);
      // Allowed, it answers: the refusal below is the setting's doing.
      expect((await call(identifier, 'echo', { text: 'hi' }))?.data?.steps[0]?.outcome).toBe('OK');
      // No call reaches the server (the allowed session's own pings or stream may still come).
      const before = http.calls.length;
      const refused = await call(identifier, 'echo', { text: 'hi' }, strict);
      expect(refused?.data?.steps[0]?.outcome).toBe('FAILED');
      expect(refused?.data?.steps[0]?.payload.content).toMatch(/^refused host: .*loopback/);
      expect(http.calls.length).toBe(before);
    });

    it.each([
      'http://127.0.0.1:4790/mcp',
      'http://0x7f.0.0.1:4790/mcp',
      'http://[::ffff:127.0.0.1]:4790/mcp',
      'http://localhost:4790/mcp',
      'http://169.254.169.254/latest/meta-data/',
      'http://metadata.google.internal/computeMetadata/v1/',
    ])('%s: MCP_REFUSED_HOST from the adapter', async (url) => {
      const server: McpServerConfig = {
        identifier: 'unregistered',
        transport: 'streamable-http',
        url,
        command: null,
        args: [],
        headers: [],
      };
      const outcome = await callMcpTool(
        server,
        'echo',
        {},
        {
          signal: new AbortController().signal,
          timeoutMs: 5_000,
          policy: new McpPolicy(DEFAULT_MCP_SETTINGS),
        },
      );
      expect([outcome.result.outcome, outcome.fault, outcome.answered]).toEqual([
        'failed',
        'MCP_REFUSED_HOST',
        false,
      ]);
    });
  });

  describe('stdio programs', () => {
    const marker = () => join(mkdtempSync(join(tmpdir(), 'runledger-stdio-')), 'ran');
    const shell = (file: string) => ({
      transport: 'STDIO',
      command: '/bin/sh',
      args: ['-c', `touch ${file}`],
    });

    it('not on the allow-list: refused at registration, nothing written, nothing run', async () => {
      const file = marker();
      const identifier = unique('shell');
      expect(await register({ identifier, ...shell(file) })).toEqual({
        __typename: 'InvalidInputError',
        code: 'MCP_REFUSED_COMMAND',
        field: 'command',
      });
      expect(await storedRow(identifier)).toBeUndefined();
      expect(existsSync(file)).toBe(false);
    });

    it('no longer on the allow-list: refused at call time, nothing run', async () => {
      const file = marker();
      const identifier = unique('shell');
      const shellAllowed = serverWith({ ...TEST_MCP_SETTINGS, stdioCommands: [['/bin/sh']] });
      expect(await register({ identifier, ...shell(file) }, shellAllowed)).toEqual(REGISTERED);
      const refused = await call(identifier, 'echo');
      expect(refused?.data?.steps[0]?.outcome).toBe('FAILED');
      expect(refused?.data?.steps[0]?.payload.content).toMatch(/^refused command: /);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(existsSync(file)).toBe(false);
      // Where it is allowed the same call does run the program: the marker can appear.
      expect((await call(identifier, 'echo', {}, shellAllowed))?.data?.steps[0]?.outcome).toBe('FAILED');
      await expect.poll(() => existsSync(file)).toBe(true);
    });

    it('see the safe environment only, unless the operator names more', async () => {
      const variable = `RUNLEDGER_TEST_SECRET_${randomBytes(4).toString('hex')}`;
      process.env[variable] = 'do-not-pass';
      try {
        const identifier = unique('stdio-env');
        expect(
          await register({
            identifier,
            transport: 'STDIO',
            command: STDIO_TOOL_SERVER[0],
            args: STDIO_TOOL_SERVER.slice(1),
          }),
        ).toEqual(REGISTERED);
        const names = async (via?: Server) =>
          (await call(identifier, 'env-names', {}, via))?.data?.steps[0]?.payload.content.split('\n') ?? [];
        const safe = await names();
        expect(safe).toContain('PATH');
        expect(safe).not.toContain(variable);
        expect(safe).not.toContain('DATABASE_URL');
        expect(await names(serverWith({ ...TEST_MCP_SETTINGS, stdioEnv: [variable] }))).toContain(variable);
      } finally {
        delete process.env[variable];
      }
    }, 60_000);
  });

  describe('credentials by reference', () => {
    it('read from the environment at each call; the row never holds the secret', async () => {
      const variable = `RUNLEDGER_TEST_TOKEN_${randomBytes(4).toString('hex')}`;
      const secret = `s3cret-${randomBytes(8).toString('hex')}`;
      const identifier = unique('with-token');
      const listing = serverWith({ ...TEST_MCP_SETTINGS, headerEnv: [variable] });
      expect(
        await register(
          {
            identifier,
            transport: 'STREAMABLE_HTTP',
            url: http.url,
            headers: [{ name: 'Authorization', value: `Bearer env:${variable}` }],
          },
          listing,
        ),
      ).toEqual(REGISTERED);

      // Not set: a failed step naming the variable, and nothing sent.
      const before = http.authorizations.length;
      const missing = await call(identifier, 'echo', { text: 'x' }, listing);
      expect(missing?.data?.steps[0]?.outcome).toBe('FAILED');
      expect(missing?.data?.steps[0]?.payload.content).toBe(
        `no credential for header Authorization: the environment variable ${variable} is not set`,
      );
      expect(http.authorizations.length).toBe(before);

      process.env[variable] = secret;
      try {
        expect((await call(identifier, 'echo', { text: 'x' }, listing))?.data?.steps[0]?.outcome).toBe('OK');
        expect(http.authorizations.slice(before)).toContain(`Bearer ${secret}`);
      } finally {
        delete process.env[variable];
      }
      const row = await storedRow(identifier);
      expect(row?.headers).toEqual([{ name: 'Authorization', value: `Bearer env:${variable}` }]);
      expect(JSON.stringify(row)).not.toContain(secret);
    });

    it('a missing variable is MCP_MISSING_CREDENTIAL from the adapter', async () => {
      const server: McpServerConfig = {
        identifier: 'unregistered',
        transport: 'streamable-http',
        url: http.url,
        command: null,
        args: [],
        headers: [{ name: 'X-Api-Key', value: 'env:RUNLEDGER_TEST_NEVER_SET' }],
      };
      const outcome = await callMcpTool(
        server,
        'echo',
        { text: 'x' },
        {
          signal: new AbortController().signal,
          timeoutMs: 5_000,
          policy: new McpPolicy({ ...TEST_MCP_SETTINGS, headerEnv: ['RUNLEDGER_TEST_NEVER_SET'] }),
        },
      );
      expect([outcome.result.outcome, outcome.fault]).toEqual(['failed', 'MCP_MISSING_CREDENTIAL']);
      expect(outcome.result.content).toMatch(/RUNLEDGER_TEST_NEVER_SET/);
    });
  });
});
