import { appendFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { buildToolServer } from './mcp-tool-server.ts';

// The same tools over stdio. `--cancel-log <file>`: where to note each cancellation the server sees;
// `--start-log <file>`: where to note each slow call it begins; `--start-delay-ms <ms>`: how long it
// takes to start (as `npx -y` does on a first run) before it reads stdin; `--banner <text>`: text it
// writes to stdout, without a newline, before its first message (as some servers print a greeting).
const option = (name: string) => {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
};
const cancelLog = option('--cancel-log');
const startLog = option('--start-log');
const startDelayMs = Number(option('--start-delay-ms') ?? 0);
const banner = option('--banner');
if (startDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, startDelayMs));
if (banner) process.stdout.write(banner);
await buildToolServer(
  (tool) => {
    if (cancelLog) appendFileSync(cancelLog, `${tool}\n`);
  },
  (tool) => {
    if (startLog) appendFileSync(startLog, `${tool}\n`);
  },
).connect(new StdioServerTransport());
