// Every code example of README.md and docs/ runs here, against the real service on a fresh
// embedded database with the demo data (docs/maintainers/testing.md says what each kind of block must do).
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type OperationDefinitionNode, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/db/api-keys.ts';
import { openDatabase } from '../../src/db/connection.ts';
import { migrate } from '../../src/db/migrator.ts';
import { PERMISSIONS, type Permission } from '../../src/domain/permissions.ts';
import { seedDemoData } from '../../src/ledger/seed.ts';
import { type FakeModel, startFakeModel } from '../support/agents/fake-model.ts';
import { type Running, startService } from '../support/service.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
/** The address the examples are written for; the test's service answers elsewhere. */
const DOCUMENTED_ORIGIN = 'http://127.0.0.1:4000';

interface Block {
  file: string;
  line: number;
  language: string;
  code: string;
}

/** The fenced blocks of a Markdown file, with the language of each. */
function blocksOf(file: string, text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const open = /^```(\S*)\s*$/.exec(lines[index] ?? '');
    if (!open) continue;
    const start = index;
    const body: string[] = [];
    for (index++; index < lines.length && !/^```\s*$/.test(lines[index] ?? ''); index++)
      body.push(lines[index] ?? '');
    blocks.push({ file, line: start + 1, language: open[1] ?? '', code: body.join('\n') });
  }
  return blocks;
}

async function markdownFiles(): Promise<string[]> {
  const files = ['README.md'];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      // The reference is generated from the code, and holds no examples.
      if (entry.isDirectory() && path !== 'docs/reference') await walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  await walk('docs');
  return files;
}

const allBlocks = async (): Promise<Block[]> =>
  (
    await Promise.all(
      (await markdownFiles()).map(async (file) => blocksOf(file, await readFile(join(root, file), 'utf8'))),
    )
  ).flat();

const RUNNABLE = new Set(['graphql', 'sh', 'ts', 'json', 'text']);

/**
 * The agent's key as the README tells the reader to make it
 * (`npm run keys -- create --actor … --grant …`): the examples an agent runs
 * are run with it, so a guide that needs more than it grants fails here.
 */
async function readmeAgentKey(): Promise<{ actor: string; grants: string[] }> {
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  const match = /npm run keys -- create --actor (\S+) --grant (\S+)/.exec(readme);
  if (!match?.[1] || !match[2]) throw new Error('README.md makes no agent key');
  return { actor: match[1], grants: match[2].split(',') };
}
/** Pages whose examples an operator runs (following any run): with the administrator's key. */
const OPERATOR_PAGES = new Set([
  'docs/live.md',
  'docs/contract.md',
  'docs/statistics.md',
  'docs/mcp.md',
  'docs/keys.md',
  'docs/viewer.md',
  'docs/operating.md',
  'README.md',
]);
const where = (block: Block) => `${block.file}:${block.line}`;

describe('the examples of the documentation', () => {
  let service: Running;
  let dataDir: string;
  /** The model of the agent libraries' examples: they read OPENAI_BASE_URL, as a reader's would. */
  let model: FakeModel;
  const keys = { admin: '', approver: '', agent: '' };
  let origin = '';

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'runledger-docs-'));
    const handle = await openDatabase({ dataDir });
    await migrate(handle);
    await seedDemoData(handle.db);
    keys.admin = (await createApiKey(handle.db, 'admin', PERMISSIONS)).key;
    keys.approver = (await createApiKey(handle.db, 'carol', ['read_all_runs', 'approve_runs'])).key;
    const agent = await readmeAgentKey();
    keys.agent = (await createApiKey(handle.db, agent.actor, agent.grants as Permission[])).key;
    await handle.close();
    // The reference MCP server, allowed as docs/mcp.md tells the reader to allow it.
    service = await startService({
      PGLITE_DATA_DIR: dataDir,
      RUNLEDGER_MCP_STDIO_COMMANDS: 'node node_modules/@modelcontextprotocol/server-everything/dist/index.js',
    });
    origin = new URL(service.url).origin;
    model = await startFakeModel();
  }, 120_000);

  afterAll(async () => {
    service?.child.kill('SIGKILL');
    await model?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function send(query: string, operationName: string | undefined, variables: object, key: string) {
    const response = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, operationName, variables }),
    });
    return (await response.json()) as { data?: unknown; errors?: unknown[] };
  }

  /** The uuid of the last request a result names (`… request { uuid }`), for `$request`. */
  function requestIn(value: unknown): string | undefined {
    if (value === null || typeof value !== 'object') return undefined;
    const request = (value as { request?: { uuid?: unknown } }).request;
    if (typeof request?.uuid === 'string') return request.uuid;
    for (const child of Object.values(value)) {
      const found = requestIn(child);
      if (found) return found;
    }
    return undefined;
  }

  it('holds only blocks of a kind it can run, in every file', async () => {
    const blocks = await allBlocks();
    expect(blocks.length).toBeGreaterThan(20);
    expect(blocks.filter((block) => !RUNNABLE.has(block.language)).map(where)).toEqual([]);
  });

  it('answers every GraphQL example without an error, page by page', async () => {
    const byFile = new Map<string, Block[]>();
    for (const block of (await allBlocks()).filter((b) => b.language === 'graphql')) {
      byFile.set(block.file, [...(byFile.get(block.file) ?? []), block]);
    }
    let sent = 0;
    for (const [file, blocks] of byFile) {
      // An agent's page is run with the agent's key, from its own run on.
      const own = OPERATOR_PAGES.has(file) ? keys.admin : keys.agent;
      const started = (await send(
        'mutation { startRun(input: { configuration: "docs" }) { ... on StartRunSuccess { data { uuid } } } }',
        undefined,
        {},
        own,
      )) as { data: { startRun: { data: { uuid: string } } } };
      const variables: Record<string, string> = { run: started.data.startRun.data.uuid };
      const waits: Array<() => Promise<void>> = [];
      for (const block of blocks) {
        const operations = parse(block.code).definitions.filter(
          (definition): definition is OperationDefinitionNode => definition.kind === 'OperationDefinition',
        );
        for (const operation of operations) {
          const name = operation.name?.value;
          const used = Object.fromEntries(
            (operation.variableDefinitions ?? []).map((definition) => {
              const variable = definition.variable.name.value;
              return [variable, variables[variable]];
            }),
          );
          const ask = async () => {
            const key = name?.startsWith('Decide') ? keys.approver : own;
            const answer = await send(block.code, name, used, key);
            expect(answer.errors, `${where(block)} ${name ?? '(anonymous)'}`).toBeUndefined();
            expect(answer.data, `${where(block)} ${name ?? '(anonymous)'}`).toBeTruthy();
            const request = requestIn(answer.data);
            if (request) variables.request = request;
            sent++;
          };
          // A wait for a decision is answered once the page's decisions are made.
          if (name?.startsWith('Wait')) waits.push(ask);
          else await ask();
        }
      }
      for (const wait of waits) await wait();
      expect(file).toBeTruthy();
    }
    expect(sent).toBeGreaterThan(5);
  }, 120_000);

  it('runs every shell example: npm scripts that exist, curl against the service, the rest well-formed', async () => {
    const scripts = (JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { scripts: object })
      .scripts;
    // `npm install …`: the install line of a setup.
    const known = new Set([...Object.keys(scripts), 'ci', 'start', 'test', 'install']);
    const blocks = (await allBlocks()).filter((block) => block.language === 'sh');
    expect(blocks.length).toBeGreaterThan(5);
    for (const block of blocks) {
      await run('bash', ['-n', '-c', block.code]);
      for (const [command, script] of block.code.matchAll(/\bnpm (?:run )?([\w:-]+)/g)) {
        expect(known.has(script ?? ''), `${where(block)}: ${command}`).toBe(true);
      }
      if (!block.code.includes('curl ')) continue;
      const { stdout } = await run('bash', ['-e', '-c', block.code.replaceAll(DOCUMENTED_ORIGIN, origin)], {
        env: { ...process.env, KEY: keys.admin },
        timeout: 30_000,
      });
      expect(stdout, where(block)).toContain('"data"');
      expect(stdout, where(block)).not.toContain('"errors"');
    }
  }, 120_000);

  it('runs every TypeScript example against the service', async () => {
    const blocks = (await allBlocks()).filter((block) => block.language === 'ts');
    expect(blocks.length).toBeGreaterThan(1);
    const runCount = async () => {
      const answer = (await send('{ runs(first: 1) { totalCount } }', undefined, {}, keys.admin)) as {
        data: { runs: { totalCount: number } };
      };
      return answer.data.runs.totalCount;
    };
    // Beside the code, so its imports resolve as they would in a project that installed them.
    const fileOf = (block: Block) => join(root, 'test', 'docs', `.example-${block.line}.ts`);
    try {
      // Every example passes strict tsc, as a reader's project would check it (one run for all).
      for (const block of blocks) await writeFile(fileOf(block), `${block.code}\nexport {};\n`);
      await run(
        process.execPath,
        [
          join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
          '--ignoreConfig',
          '--noEmit',
          '--strict',
          '--skipLibCheck',
          // As tsx and bundlers resolve packages (a package's ESM types throughout: under nodenext a
          // library's CommonJS types of a dual package clash with the example's ESM ones).
          '--module',
          'preserve',
          '--target',
          'es2022',
          '--types',
          'node',
          ...blocks.map(fileOf),
        ],
        { cwd: root, timeout: 120_000 },
      ).catch((error: { stdout?: string }) => {
        throw new Error(`the TypeScript examples do not pass strict tsc:\n${error.stdout ?? String(error)}`);
      });
    } finally {
      for (const block of blocks) await rm(fileOf(block), { force: true });
    }
    for (const block of blocks) {
      const file = fileOf(block);
      await writeFile(file, block.code);
      const before = await runCount();
      let stdout = '';
      try {
        ({ stdout } = await run(process.execPath, ['--import', 'tsx', file], {
          cwd: root,
          env: {
            ...process.env,
            RUNLEDGER_URL: origin,
            RUNLEDGER_KEY: OPERATOR_PAGES.has(block.file) ? keys.admin : keys.agent,
            OPENAI_BASE_URL: model.baseURL,
            OPENAI_API_KEY: 'sk-docs',
          },
          timeout: 60_000,
        }));
      } catch (error) {
        throw new Error(`${where(block)} failed: ${String(error)}`);
      } finally {
        await rm(file, { force: true });
      }
      // An example that prints shows something.
      if (block.code.includes('console.log')) expect(stdout.trim(), where(block)).not.toBe('');
      // An exporter drops what it cannot send without failing: an example that sends spans must have made
      // a run, and one only (a span without its parent would be a trace, and a run, of its own).
      if (/@opentelemetry\/|@traceloop\//.test(block.code))
        expect(await runCount(), where(block)).toBe(before + 1);
    }
  }, 300_000);

  it('holds JSON examples that parse', async () => {
    const blocks = (await allBlocks()).filter((block) => block.language === 'json');
    for (const block of blocks) expect(() => JSON.parse(block.code), where(block)).not.toThrow();
  });

  it('finds the blocks of a page as a reader sees them', () => {
    const page = ['# A', '```graphql', '{ viewer { actor } }', '```', 'text', '```text', 'out', '```'].join(
      '\n',
    );
    expect(blocksOf('page.md', page).map((block) => [block.language, block.code, block.line])).toEqual([
      ['graphql', '{ viewer { actor } }', 2],
      ['text', 'out', 6],
    ]);
  });
});
