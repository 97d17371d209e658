import { appendFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { buildToolServer } from './mcp-tool-server.ts';

// The same tools over stdio. `--cancel-log <file>`: where to note each cancellation the server sees.
const logIndex = process.argv.indexOf('--cancel-log');
const cancelLog = logIndex >= 0 ? process.argv[logIndex + 1] : undefined;
await buildToolServer((tool) => {
  if (cancelLog) appendFileSync(cancelLog, `${tool}\n`);
}).connect(new StdioServerTransport());
