import { appendFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { buildToolServer } from './mcp-tool-server.ts';

// The same tools over stdio. `--cancel-log <file>`: where to note each cancellation the server sees;
// `--start-log <file>`: where to note each slow call it begins.
const option = (name: string) => {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
};
const cancelLog = option('--cancel-log');
const startLog = option('--start-log');
await buildToolServer(
  (tool) => {
    if (cancelLog) appendFileSync(cancelLog, `${tool}\n`);
  },
  (tool) => {
    if (startLog) appendFileSync(startLog, `${tool}\n`);
  },
).connect(new StdioServerTransport());
