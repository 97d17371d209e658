import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestApi, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';
import { EVERYTHING_SERVER } from '../support/mcp-everything.ts';

/**
 * A registered server's tools, listed through the API on its kept session:
 * the published reference server (@modelcontextprotocol/server-everything)
 * over stdio, what an agent needs to know before it calls one.
 */

const TOOLS = `query ($timeoutMs: Int) { mcpServers { identifier tools(timeoutMs: $timeoutMs) { name title description inputSchema } } }`;

interface Listed {
  mcpServers: Array<{
    identifier: string;
    tools: Array<{
      name: string;
      title: string | null;
      description: string | null;
      inputSchema: unknown;
    }> | null;
  }>;
}

/** The reference server, and a program that exits at once, allowed as the operator would list them. */
const SETTINGS = {
  ...TEST_MCP_SETTINGS,
  stdioCommands: [
    ...TEST_MCP_SETTINGS.stdioCommands,
    [process.execPath, EVERYTHING_SERVER],
    [process.execPath, '-e'],
  ],
};

let api: TestApi;

beforeAll(async () => {
  api = await openTestApi('pglite', { mcp: SETTINGS });
  const registered = await api.query<{ registerMcpServer: { __typename: string } }>(
    'mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename } }',
    {
      input: {
        identifier: 'everything',
        transport: 'STDIO',
        command: process.execPath,
        args: [EVERYTHING_SERVER, 'stdio'],
      },
    },
  );
  expect(registered.data?.registerMcpServer.__typename).toBe('RegisterMcpServerSuccess');
}, 60_000);

afterAll(async () => {
  await api?.dispose();
});

describe("a server's tools", () => {
  it('are listed with their descriptions and argument schemas, for a key that may record (and read its runs, to list servers)', async () => {
    const answer = await api.query<Listed>(
      TOOLS,
      {},
      { actor: 'agent', permissions: ['record', 'read_own_runs'] },
    );
    expect(answer.errors).toBeUndefined();
    const tools = answer.data?.mcpServers[0]?.tools ?? [];
    const echo = tools.find((tool) => tool.name === 'echo');
    expect(echo).toMatchObject({
      description: expect.stringContaining('Echo'),
      inputSchema: { type: 'object', properties: { message: expect.objectContaining({ type: 'string' }) } },
    });
    expect(tools.map((tool) => tool.name)).toContain('trigger-long-running-operation');
  });

  it('are FORBIDDEN to a key that may only read, the rest of the server still readable', async () => {
    const answer = await api.query<Listed>(TOOLS, {}, { actor: 'reader', permissions: ['read_own_runs'] });
    expect(answer.data?.mcpServers[0]?.identifier).toBe('everything');
    expect(answer.errors?.map((error) => error.extensions?.code)).toEqual(['FORBIDDEN']);
  });

  it('refuse a timeout out of range with its field', async () => {
    const answer = await api.query<Listed>(
      TOOLS,
      { timeoutMs: 0 },
      { actor: 'agent', permissions: ['record', 'read_own_runs'] },
    );
    expect(answer.errors?.map((error) => [error.extensions?.code, error.extensions?.field])).toEqual([
      ['VALUE_OUT_OF_RANGE', 'timeoutMs'],
    ]);
  });

  it('answer a server that cannot be started with its MCP code', async () => {
    await api.query(
      'mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename } }',
      {
        input: {
          identifier: 'broken',
          transport: 'STDIO',
          command: process.execPath,
          args: ['-e', 'process.exit(3)'],
        },
      },
    );
    const answer = await api.query<Listed>(
      `{ mcpServers { identifier tools(timeoutMs: 5000) { name } } }`,
      {},
      { actor: 'agent', permissions: ['record', 'read_own_runs'] },
    );
    const broken = answer.data?.mcpServers.find((server) => server.identifier === 'broken');
    expect(broken?.tools).toBeNull();
    const codes = answer.errors?.map((error) => String(error.extensions?.code)) ?? [];
    expect(codes).toHaveLength(1);
    expect(codes[0]).toMatch(/^MCP_/);
  });
});
