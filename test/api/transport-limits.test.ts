import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { RequestLimits } from '../../src/domain/limits.ts';
import { createServer, type Server } from '../../src/server.ts';
import { defaultTransportLimits, TRANSPORT_SETTINGS, transportLimitsFromEnv } from '../../src/transport.ts';
import { openTestApi, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { codesIn, internals, type Listening, listen, RawConnection } from '../support/http.ts';
import { type Running, startService } from '../support/service.ts';

const MB = 1024 * 1024;

/** A startRun mutation whose variables carry padding: accepted, it would write a run. */
const bodyStart =
  '{"query":"mutation { startRun(input: { configuration: \\"oversized\\" }) { __typename } }","variables":{"padding":"';
const bodyEnd = '"}}';

describe.each(backendNames)('transport limits over HTTP, against the real server (%s)', (backend) => {
  let api: TestApi;
  let server: Listening;
  let key = '';

  beforeAll(async () => {
    api = await openTestApi(backend);
    server = await listen(api.server);
    key = await api.keyFor();
  });
  afterAll(async () => {
    await server?.close();
    await api?.dispose();
  });

  const written = async () => ({
    runs: await api.database.handle.db.$count(runs),
    steps: await api.database.handle.db.$count(runSteps),
  });

  async function healthy(on: Listening = server) {
    expect((await fetch(`${on.base}/health`)).status).toBe(200);
  }

  function head(framing: string): string {
    return [
      'POST /graphql HTTP/1.1',
      'Host: runledger.test',
      'Content-Type: application/json',
      `Authorization: Bearer ${key}`,
      framing,
      '',
      '',
    ].join('\r\n');
  }

  /** Sends a chunked body of `total` bytes, stopping as soon as the server answers or closes. */
  async function sendChunked(connection: RawConnection, total: number): Promise<void> {
    await connection.write(head('Transfer-Encoding: chunked'));
    const frame = (data: Buffer | string) =>
      connection.write(`${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`);
    await frame(bodyStart);
    const padding = Buffer.alloc(64 * 1024, 'x');
    let body = Buffer.byteLength(bodyStart) + Buffer.byteLength(bodyEnd);
    while (body < total && !connection.answered && !connection.isClosed) {
      await frame(padding);
      body += padding.length;
    }
    if (!connection.answered && !connection.isClosed)
      await connection.write(`${bodyEnd.length}\r\n${bodyEnd}\r\n0\r\n\r\n`);
  }

  it.each([20, 40])(
    'refuses a chunked %i MB body with 413 REQUEST_TOO_LARGE once the limit is passed, and closes',
    async (megabytes) => {
      const before = await written();
      const rssBefore = process.memoryUsage().rss;
      const connection = await RawConnection.open(server.port);
      await sendChunked(connection, megabytes * MB);
      expect(await connection.waitClosed(10_000)).toBe(true);
      const [answer, ...more] = connection.answers();
      expect([answer?.status, ...codesIn(answer?.body ?? '')]).toEqual([413, 'REQUEST_TOO_LARGE']);
      expect(answer?.headers).toMatch(/^connection: close$/im);
      expect(more).toEqual([]);
      // The answer comes once the limit is passed (plus what the sockets hold), not after the whole body.
      expect(connection.sentWhenAnswered).toBeLessThan(RequestLimits.maxBodyBytes + 8 * MB);
      // Loose: the refused body is not kept around (40 MB would show).
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(160 * MB);
      expect(await written()).toEqual(before);
      await healthy();
    },
  );

  it('lets a client that sends on past its 413, reading only afterwards, still read the 413', async () => {
    const before = await written();
    const connection = await RawConnection.open(server.port);
    // Not reading while sending: closing on unread bytes would reset the connection, and the client's next
    // write would fail and drop the answer waiting unread.
    connection.socket.pause();
    await connection.write(head('Transfer-Encoding: chunked'));
    await connection.write(`${Buffer.byteLength(bodyStart).toString(16)}\r\n${bodyStart}\r\n`);
    const padding = Buffer.alloc(64 * 1024, 'x');
    while (connection.sent < RequestLimits.maxBodyBytes + 8 * MB && !connection.isClosed) {
      await connection.write(`${padding.length.toString(16)}\r\n${padding}\r\n`);
    }
    expect(connection.isClosed).toBe(false);
    connection.socket.resume();
    expect(await connection.waitClosed(defaultTransportLimits.lingerMs + 5_000)).toBe(true);
    const [answer, ...more] = connection.answers();
    expect([answer?.status, ...codesIn(answer?.body ?? '')]).toEqual([413, 'REQUEST_TOO_LARGE']);
    expect(more).toEqual([]);
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('closes a lingering connection whose client neither stops sending nor closes, after the linger time', async () => {
    const before = await written();
    const lingering = await listen(api.server, { lingerMs: 1_000 });
    try {
      const connection = await RawConnection.open(lingering.port, { allowHalfOpen: true });
      await connection.write(head('Transfer-Encoding: chunked'));
      await connection.write(`${Buffer.byteLength(bodyStart).toString(16)}\r\n${bodyStart}\r\n`);
      const padding = Buffer.alloc(64 * 1024, 'x');
      // Sends on after the answer, a frame every 20 ms, for at most 10 s.
      while (!connection.isClosed && Date.now() - connection.openedAt < 10_000) {
        await connection.write(`${padding.length.toString(16)}\r\n${padding}\r\n`);
        if (connection.answered) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(connection.isClosed).toBe(true);
      expect(connection.answers()[0]?.status).toBe(413);
      const lingered = (connection.closedAt ?? Number.NaN) - (connection.answeredAt ?? Number.NaN);
      // The client reads the answer between its writes, up to a few hundred ms after the server sent it
      // on a loaded machine: half the linger time still tells a linger from a close at once.
      expect(lingered).toBeGreaterThanOrEqual(500);
      expect(lingered).toBeLessThan(5_000);
      expect(await written()).toEqual(before);
      await healthy(lingering);
    } finally {
      await lingering.close();
    }
  });

  it('refuses a 40 MB body declared by Content-Length at once, before any of it is sent', async () => {
    const before = await written();
    const connection = await RawConnection.open(server.port);
    await connection.write(head(`Content-Length: ${40 * MB}`));
    expect(await connection.waitClosed(5_000)).toBe(true);
    expect(connection.sentWhenAnswered).toBe(connection.sent);
    const [answer] = connection.answers();
    expect([answer?.status, ...codesIn(answer?.body ?? '')]).toEqual([413, 'REQUEST_TOO_LARGE']);
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('answers a 40 MB body sent with fetch with 413 REQUEST_TOO_LARGE', async () => {
    const before = await written();
    const response = await fetch(`${server.base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: `${bodyStart}${'x'.repeat(40 * MB)}${bodyEnd}`,
    });
    const text = await response.text();
    expect([response.status, ...codesIn(text)]).toEqual([413, 'REQUEST_TOO_LARGE']);
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('takes a body to be what Content-Length says: the bytes beyond are refused, not read as body', async () => {
    const before = await written();
    const connection = await RawConnection.open(server.port);
    // 100 bytes declared, 20 MB sent: the body is cut at 100 bytes and the rest is no valid request.
    await connection.write(head('Content-Length: 100'));
    await connection.write(bodyStart);
    const padding = Buffer.alloc(64 * 1024, 'x');
    while (connection.sent < 20 * MB && !connection.isClosed) await connection.write(padding);
    expect(await connection.waitClosed(5_000)).toBe(true);
    expect(connection.sent).toBeLessThan(20 * MB);
    // The cut body may be answered (malformed JSON) before the garbage after it is refused: one or two 400s.
    const answers = connection.answers().map((answer) => [answer.status, ...codesIn(answer.body)]);
    expect(answers.length).toBeGreaterThanOrEqual(1);
    for (const answer of answers) expect(answer).toEqual([400, 'BAD_REQUEST']);
    expect(connection.received).not.toMatch(internals);
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('lets a client that sends on past a malformed request, reading only afterwards, still read its 400', async () => {
    const before = await written();
    const connection = await RawConnection.open(server.port);
    connection.socket.pause();
    // A request line no parser takes, then 4 MB more while not reading.
    await connection.write('NOT A REQUEST\r\n\r\n');
    const garbage = Buffer.alloc(64 * 1024, 'x');
    while (connection.sent < 4 * MB && !connection.isClosed) await connection.write(garbage);
    expect(connection.isClosed).toBe(false);
    connection.socket.resume();
    expect(await connection.waitClosed(defaultTransportLimits.lingerMs + 5_000)).toBe(true);
    const answers = connection.answers().map((answer) => [answer.status, ...codesIn(answer.body)]);
    expect(answers).toEqual([[400, 'BAD_REQUEST']]);
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('refuses a request with both Content-Length and chunked framing', async () => {
    const before = await written();
    const connection = await RawConnection.open(server.port);
    await connection.write(head('Content-Length: 10\r\nTransfer-Encoding: chunked'));
    await connection.write(`${bodyStart.length.toString(16)}\r\n${bodyStart}\r\n`);
    expect(await connection.waitClosed(5_000)).toBe(true);
    expect(connection.answers().map((answer) => [answer.status, ...codesIn(answer.body)])).toEqual([
      [400, 'BAD_REQUEST'],
    ]);
    expect(await written()).toEqual(before);
    await healthy();
  });

  it('refuses headers over the size limit with 431 HEADERS_TOO_LARGE', async () => {
    const small = await listen(api.server, { maxHeaderBytes: 4_096 });
    try {
      const connection = await RawConnection.open(small.port);
      await connection.write(head(`X-Padding: ${'y'.repeat(8_192)}\r\nContent-Length: 2\r\n\r\n{}`));
      expect(await connection.waitClosed(5_000)).toBe(true);
      expect(connection.answers().map((answer) => [answer.status, ...codesIn(answer.body)])).toEqual([
        [431, 'HEADERS_TOO_LARGE'],
      ]);
      await healthy(small);
    } finally {
      await small.close();
    }
  });

  it('cuts off a client that dribbles its body, with 408 REQUEST_TIMEOUT, within the request time', async () => {
    const requestTimeoutMs = 1_500;
    const slow = await listen(api.server, { headersTimeoutMs: 1_000, requestTimeoutMs });
    try {
      const before = await written();
      const connection = await RawConnection.open(slow.port);
      const body = `${bodyStart}x${bodyEnd}`;
      await connection.write(head(`Content-Length: ${body.length}`));
      for (const byte of body) {
        if (!(await connection.write(byte))) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await connection.waitClosed(5_000)).toBe(true);
      const lived = Number(connection.closedAt) - connection.openedAt;
      expect(lived).toBeGreaterThanOrEqual(requestTimeoutMs - 100);
      expect(lived).toBeLessThan(requestTimeoutMs + 1_500);
      expect(connection.answers().map((answer) => [answer.status, ...codesIn(answer.body)])).toEqual([
        [408, 'REQUEST_TIMEOUT'],
      ]);
      expect(await written()).toEqual(before);
      await healthy(slow);
    } finally {
      await slow.close();
    }
  });

  it('cuts off a client that dribbles its headers, with 408 REQUEST_TIMEOUT, within the header time', async () => {
    const headersTimeoutMs = 1_000;
    const slow = await listen(api.server, { headersTimeoutMs, requestTimeoutMs: 5_000 });
    try {
      const connection = await RawConnection.open(slow.port);
      for (const byte of head('X-Slow: 1')) {
        if (!(await connection.write(byte))) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await connection.waitClosed(5_000)).toBe(true);
      const lived = Number(connection.closedAt) - connection.openedAt;
      expect(lived).toBeGreaterThanOrEqual(headersTimeoutMs - 100);
      expect(lived).toBeLessThan(headersTimeoutMs + 1_500);
      expect(connection.answers().map((answer) => [answer.status, ...codesIn(answer.body)])).toEqual([
        [408, 'REQUEST_TIMEOUT'],
      ]);
      await healthy(slow);
    } finally {
      await slow.close();
    }
  });

  it('closes a connection that never sends a request, and a keep-alive one left idle', async () => {
    const strict = await listen(api.server, { headersTimeoutMs: 1_000, keepAliveTimeoutMs: 500 });
    try {
      const silent = await RawConnection.open(strict.port);
      const idle = await RawConnection.open(strict.port);
      await idle.write('GET /health HTTP/1.1\r\nHost: runledger.test\r\n\r\n');
      expect(await silent.waitClosed(3_000)).toBe(true);
      expect(Number(silent.closedAt) - silent.openedAt).toBeLessThan(2_500);
      expect(await idle.waitClosed(3_000)).toBe(true);
      expect(idle.answers().map((answer) => answer.status)).toEqual([200]);
    } finally {
      await strict.close();
    }
  });

  it('over the maximum, a new connection takes the place of the oldest half-open one; when all are answering it is refused', async () => {
    const busy = await listen(api.server, { maxConnections: 3 });
    const held: RawConnection[] = [];
    try {
      // A client's idle keep-alive connection, then two that never finish their headers: a newcomer takes
      // the place of the oldest half-open one, not of the older idle one.
      const keptAlive = await RawConnection.open(busy.port);
      await keptAlive.write('GET /health HTTP/1.1\r\nHost: runledger.test\r\n\r\n');
      await keptAlive.waitAnswer(2_000);
      held.push(keptAlive);
      for (let i = 0; i < 2; i++) held.push(await RawConnection.open(busy.port));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const newcomer = await RawConnection.open(busy.port);
      await newcomer.write('GET /health HTTP/1.1\r\nHost: runledger.test\r\nConnection: close\r\n\r\n');
      await newcomer.waitAnswer(2_000);
      expect(newcomer.answers().map((answer) => answer.status)).toEqual([200]);
      expect(await held[1]?.waitClosed(2_000)).toBe(true);
      expect(keptAlive.closedAt).toBeUndefined();
      expect(held[2]?.closedAt).toBeUndefined();
      for (const connection of held) connection.destroy();
      held.length = 0;
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Three connections being answered (their bodies still on the way) are never cut for a newcomer.
      for (let i = 0; i < 3; i++) {
        const answering = await RawConnection.open(busy.port);
        await answering.write(head('Content-Length: 100'));
        held.push(answering);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      const refused = await RawConnection.open(busy.port);
      await refused.write('GET /health HTTP/1.1\r\nHost: runledger.test\r\n\r\n');
      expect(await refused.waitClosed(2_000)).toBe(true);
      expect(refused.received).toBe('');
      for (const connection of held) expect(connection.closedAt).toBeUndefined();
      for (const connection of held) connection.destroy();
      await Promise.all(held.map((connection) => connection.closed));
      await new Promise((resolve) => setTimeout(resolve, 50));
      await healthy(busy);
    } finally {
      for (const connection of held) connection.destroy();
      await busy.close();
    }
  });
});

describe.each(backendNames)('what errors tell a client (%s)', (backend) => {
  let api: TestApi;
  let production: Server;
  let productionHttp: Listening;
  let developmentHttp: Listening;
  let key = '';

  beforeAll(async () => {
    api = await openTestApi(backend);
    production = createServer({ handle: api.database.handle, production: true });
    productionHttp = await listen(production);
    developmentHttp = await listen(createServer({ handle: api.database.handle, production: false }));
    key = await api.keyFor();
  });
  afterAll(async () => {
    await productionHttp?.close();
    await developmentHttp?.close();
    await api?.dispose();
  });

  async function post(
    on: Listening,
    body: string,
  ): Promise<{ status: number; text: string; codes: unknown[] }> {
    const response = await fetch(`${on.base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body,
    });
    const text = await response.text();
    return { status: response.status, text, codes: codesIn(text) };
  }

  const misspellings: Array<[string, string, Record<string, unknown> | undefined, string]> = [
    [
      'a misspelt field',
      '{ runs { edges { node { configuratio } } } }',
      undefined,
      'GRAPHQL_VALIDATION_FAILED',
    ],
    [
      'a misspelt argument',
      '{ runs(frist: 1) { edges { cursor } } }',
      undefined,
      'GRAPHQL_VALIDATION_FAILED',
    ],
    [
      'a misspelt input field',
      '{ runs(filter: { statu: [RUNNING] }) { edges { cursor } } }',
      undefined,
      'GRAPHQL_VALIDATION_FAILED',
    ],
    [
      'a misspelt enum value',
      '{ runs(filter: { statuses: [RUNNIN] }) { edges { cursor } } }',
      undefined,
      'GRAPHQL_VALIDATION_FAILED',
    ],
    [
      'a misspelt enum value in variables',
      'query ($filter: RunFilter) { runs(filter: $filter) { edges { cursor } } }',
      { filter: { statuses: ['RUNNIN'] } },
      'BAD_USER_INPUT',
    ],
    [
      'a misspelt type',
      'query ($n: Intt) { runs(first: $n) { edges { cursor } } }',
      undefined,
      'GRAPHQL_VALIDATION_FAILED',
    ],
  ];

  it.each(misspellings)(
    'answers %s in production without any suggestion',
    async (_name, query, variables, code) => {
      const answer = await post(productionHttp, JSON.stringify({ query, variables }));
      expect(answer.codes[0]).toBe(code);
      expect(answer.text).not.toMatch(/Did you mean/i);
      expect(answer.text).not.toMatch(internals);
      // Outside production the suggestion helps: the same request proves the test can see one.
      expect((await post(developmentHttp, JSON.stringify({ query, variables }))).text).toMatch(
        /Did you mean/,
      );
    },
  );

  it.each([
    ['production', () => productionHttp],
    ['development', () => developmentHttp],
  ])('answers malformed JSON without the parser error inside (%s)', async (_mode, on) => {
    const answer = await post(
      on(),
      `{"query": "{ runs { edges { cursor } } }", "secret": "${'z'.repeat(64)}`,
    );
    expect([answer.status, ...answer.codes]).toEqual([400, 'BAD_REQUEST']);
    expect(answer.text).not.toMatch(internals);
    expect(answer.text).not.toContain('zzzz');
  });

  it.each([
    ['production', true],
    ['development', false],
  ])(
    'masks an unexpected error without originalError or stack (%s, NODE_ENV=development)',
    async (_mode, isProduction) => {
      const failing = new Proxy(api.database.handle.db, {
        get() {
          // A fault of ours, not an outage (an outage answers 503 DATABASE_UNAVAILABLE).
          throw new Error('relation "secret-host" does not exist');
        },
      });
      const broken = await listen(
        createServer({ handle: { ...api.database.handle, db: failing }, production: isProduction }),
      );
      // Yoga adds the original error to masked ones when NODE_ENV is development.
      const previous = process.env.NODE_ENV;
      process.env.NODE_ENV = 'development';
      try {
        const answer = await post(broken, JSON.stringify({ query: '{ runs { edges { cursor } } }' }));
        expect(answer.codes).toEqual(['INTERNAL_SERVER_ERROR']);
        expect(answer.text).not.toMatch(internals);
        expect(answer.text).not.toContain('secret-host');
      } finally {
        process.env.NODE_ENV = previous;
        await broken.close();
      }
    },
  );
});

describe('transport settings from the environment', () => {
  it('keeps each default when its variable is unset or empty', () => {
    expect(transportLimitsFromEnv({})).toEqual(defaultTransportLimits);
    expect(transportLimitsFromEnv({ HTTP_MAX_CONNECTIONS: ' ' })).toEqual(defaultTransportLimits);
  });

  it('reads every limit from its variable', () => {
    const env = Object.fromEntries(
      Object.values(TRANSPORT_SETTINGS).map((setting, index) => [setting.env, String(1_000 + index)]),
    );
    const limits = transportLimitsFromEnv(env);
    expect(Object.values(limits)).toEqual(Object.values(TRANSPORT_SETTINGS).map((_, index) => 1_000 + index));
  });

  it.each(['0', '-5', '1.5', 'ten', '1e400'])('refuses %s, naming the variable', (value) => {
    expect(() => transportLimitsFromEnv({ HTTP_REQUEST_TIMEOUT_MS: value })).toThrow(
      /HTTP_REQUEST_TIMEOUT_MS/,
    );
  });

  it('refuses a header time longer than the request time', () => {
    expect(() =>
      transportLimitsFromEnv({ HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' }),
    ).toThrow(/HTTP_HEADERS_TIMEOUT_MS.*HTTP_REQUEST_TIMEOUT_MS/);
  });
});

describe('the entry point applies the transport settings', () => {
  let running: Running | undefined;
  afterAll(() => {
    if (running?.child.exitCode === null) running.child.kill('SIGKILL');
  });

  it('cuts off a silent connection after HTTP_HEADERS_TIMEOUT_MS, and over HTTP_MAX_CONNECTIONS lets a newcomer take its place', async () => {
    running = await startService({
      PGLITE_DATA_DIR: 'memory://',
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      HTTP_MAX_CONNECTIONS: '1',
    });
    const port = Number(new URL(running.url).port);
    const silent = await RawConnection.open(port);
    expect(await silent.waitClosed(3_000)).toBe(true);
    expect(Number(silent.closedAt) - silent.openedAt).toBeLessThan(2_500);
    expect(silent.answers().map((answer) => [answer.status, ...codesIn(answer.body)])).toEqual([
      [408, 'REQUEST_TIMEOUT'],
    ]);
    const halfOpen = await RawConnection.open(port);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const newcomer = await RawConnection.open(port);
    await newcomer.write('GET /health HTTP/1.1\r\nHost: runledger.test\r\nConnection: close\r\n\r\n');
    await newcomer.waitAnswer(2_000);
    expect(newcomer.answers().map((answer) => answer.status)).toEqual([200]);
    expect(await halfOpen.waitClosed(2_000)).toBe(true);
    expect(halfOpen.received).toBe('');
  }, 90_000);

  it('does not start with a limit that is no limit', async () => {
    await expect(startService({ PGLITE_DATA_DIR: 'memory://', HTTP_MAX_CONNECTIONS: '0' })).rejects.toThrow(
      /HTTP_MAX_CONNECTIONS must be a whole number/,
    );
  });
});
