// A stdio MCP server seen from the wire: `node mcp-stdio-tap.mjs <log> <program> [args...]` starts the
// program, passes stdin and stdout through unchanged, and appends one JSON line per event to <log>:
// its start (with the server's pid), each JSON-RPC message in either direction (method, id, the id a
// cancellation names) and the server's exit. Plain JavaScript: it starts as fast as the server itself.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [log, program, ...args] = process.argv.slice(2);
const note = (event) => appendFileSync(log, `${JSON.stringify({ at: Date.now(), ...event })}\n`);

const server = spawn(program, args, { stdio: ['pipe', 'pipe', 'ignore'] });
note({ event: 'start', tap: process.pid, pid: server.pid });

/** Each line is one JSON-RPC message (stdio framing): noted, then passed on as it came. */
function relay(from, to, direction) {
  createInterface({ input: from, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
    try {
      const message = JSON.parse(line);
      note({
        event: direction,
        method: message.method,
        id: message.id,
        tool: message.params?.name,
        requestId: message.params?.requestId,
        error: message.error?.code,
      });
    } catch {
      note({ event: direction, unreadable: true });
    }
    to.write(`${line}\n`);
  });
}
relay(process.stdin, server.stdin, 'to-server');
relay(server.stdout, process.stdout, 'from-server');
process.stdin.on('end', () => server.stdin.end());
server.stdin.on('error', () => {});
server.on('exit', (code, signal) => {
  note({ event: 'exit', pid: server.pid, code, signal });
  process.exit(code ?? 1);
});
// Stopped by the client (SIGTERM after stdin closed): the server goes with it.
process.on('SIGTERM', () => server.kill('SIGTERM'));
