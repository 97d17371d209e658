import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface Running {
  child: ChildProcess;
  /** The GraphQL endpoint it printed. */
  url: string;
  /** Everything it wrote to stdout and stderr so far. */
  output: () => string;
  /** The administrator key a fresh database prints once, if it printed one. */
  adminKey: () => string | undefined;
}

export interface StartOptions {
  /** The command that starts it; default: the TypeScript entry point under node. */
  command?: [string, ...string[]];
  /** How long to wait for the URL line. */
  timeoutMs?: number;
}

/** Starts the real entry point, as `npm start` does, on a free port. */
export async function startService(
  env: Record<string, string>,
  { command = [process.execPath, '--import', 'tsx', 'src/main.ts'], timeoutMs = 30_000 }: StartOptions = {},
): Promise<Running> {
  const [program, ...args] = command;
  const child = spawn(program, args, {
    cwd: root,
    env: { ...process.env, PORT: '0', NODE_ENV: 'test', DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    output += String(chunk);
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed:\n${output}`)), timeoutMs);
    const look = () => {
      const match = /GraphQL API at (http:\/\/\S+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', look);
    child.once('exit', (code) => reject(new Error(`exited with ${code}:\n${output}`)));
  });
  return {
    child,
    url,
    output: () => output,
    adminKey: () => /administrator key \(shown once, store it now\): (rl_\S+)/.exec(output)?.[1],
  };
}

/** Posts one GraphQL operation with a key; the status, headers and parsed body. */
export async function post(
  url: string,
  key: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<{
  status: number;
  headers: Headers;
  body: { data?: unknown; errors?: Array<{ extensions?: { code?: unknown } }> };
}> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as never };
}
