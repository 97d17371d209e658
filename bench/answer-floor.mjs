// A bare HTTP server (node:http and pg, nothing else) for the timeline benchmark's floor:
// what answering over HTTP costs before any GraphQL, any building, any serializing.
//   PUT  /answer        keep the request's body as the answer to send (once, before measuring)
//   POST /answer        send the kept answer
//   POST /fetch-answer  run the plain statement (body: {"uuid": ...}), drop its rows, send the kept answer
//   POST /text-answer   the same, the rows read as arrays of text, nothing parsed: the cheapest read pg offers
import http from 'node:http';
import pg from 'pg';

const plainStatement = process.env.FLOOR_STATEMENT ?? '';
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
let answer = Buffer.alloc(0);
const unparsed = { getTypeParser: () => (text) => text };

async function bodyOf(request) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const server = http.createServer(async (request, response) => {
  try {
    const body = await bodyOf(request);
    if (request.method === 'PUT' && request.url === '/answer') {
      answer = body;
      response.writeHead(204).end();
      return;
    }
    if (request.url === '/fetch-answer' || request.url === '/text-answer') {
      const { uuid } = JSON.parse(body.toString('utf8'));
      await pool.query(
        request.url === '/fetch-answer'
          ? { text: plainStatement, values: [uuid] }
          : { text: plainStatement, values: [uuid], types: unparsed, rowMode: 'array' },
      );
    } else if (request.url !== '/answer') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(answer);
  } catch (error) {
    response.writeHead(500).end(String(error));
  }
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`);
});
// Kept-alive connections would hold a closing server open: the benchmark is done with it.
process.on('SIGTERM', () => process.exit(0));
