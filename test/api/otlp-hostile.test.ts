import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OtlpLimits } from '../../src/domain/limits.ts';
import { decodeJson, decodeProtobuf, ExportTooLargeError, messages } from '../../src/otlp/decode.ts';
import { openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { agentTrace } from '../support/otel.ts';
import { type Running, startService } from '../support/service.ts';

/**
 * Hostile OTLP requests: small bodies that would decode into millions of
 * objects. Each is counted while it is read and refused with 413 at the first
 * span or value over the limit, before anything is built, and writes nothing;
 * a request exactly at the limits is still recorded.
 */

type Encoding = 'protobuf' | 'json';
const CONTENT_TYPE: Record<Encoding, string> = {
  protobuf: 'application/x-protobuf',
  json: 'application/json',
};
const AGENT = 'otel-hostile';
const PERMISSIONS = ['record', 'read_own_runs'] as const;
const MB = 1024 * 1024;
/** Generous: the old decoder took +708 MB for 1 M empty spans, and 4.8 GB before dying for 16.8 M. */
const MAX_GROWTH = 100 * MB;

function varint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest > 127) {
    out.push((rest & 127) | 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

/** A length-delimited protobuf field (wire type 2) holding `body`. */
function field(fieldNumber: number, body: Uint8Array): Uint8Array {
  return Buffer.concat([Uint8Array.from([(fieldNumber << 3) | 2, ...varint(body.length)]), body]);
}

/** `count` copies of the two bytes of an empty message (its tag, length 0) in field `fieldNumber`. */
function emptyMessages(fieldNumber: number, count: number): Uint8Array {
  return Buffer.alloc(count * 2, Uint8Array.from([(fieldNumber << 3) | 2, 0]));
}

/** ExportTraceServiceRequest { resourceSpans { scopeSpans { spans: <spans> } } }: field numbers 1, 2, 2. */
const requestOfSpans = (spans: Uint8Array) => field(1, field(2, spans));
/** The same in OTLP/JSON, spans given as text. */
const jsonRequestOfSpans = (spans: string) => `{"resourceSpans":[{"scopeSpans":[{"spans":[${spans}]}]}]}`;

/**
 * Values as the limit counts them, read independently of the decoder: in
 * protobuf every message below the request and every element of a repeated
 * field; in JSON every value.
 */
function protobufValues(body: Uint8Array): number {
  const { request } = messages();
  const isMessage = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
  const inside = (message: Record<string, unknown>): number =>
    Object.values(message).reduce<number>((n, v) => {
      if (Array.isArray(v))
        return n + v.reduce<number>((m, item) => m + 1 + (isMessage(item) ? inside(item) : 0), 0);
      return n + (isMessage(v) ? 1 + inside(v) : 0);
    }, 0);
  return inside(request.toObject(request.decode(body), { longs: String }));
}

function jsonValues(value: unknown): number {
  if (Array.isArray(value)) return value.reduce<number>((n, item) => n + jsonValues(item), 1);
  if (typeof value === 'object' && value !== null)
    return Object.values(value).reduce<number>((n, item) => n + jsonValues(item), 1);
  return 1;
}

/** Memory now, to compare with after a request: heap, RSS, and the process's high-water RSS. */
function memory() {
  return {
    heap: process.memoryUsage().heapUsed,
    rss: process.memoryUsage().rss,
    peakRss: process.resourceUsage().maxRSS * 1024,
  };
}

function expectBoundedGrowth(before: ReturnType<typeof memory>): void {
  const after = memory();
  expect(after.heap - before.heap).toBeLessThan(MAX_GROWTH);
  expect(after.rss - before.rss).toBeLessThan(MAX_GROWTH);
  // The process's high-water mark catches a peak freed before the answer came back (one that
  // rises past the worker's earlier peak: opening PGlite often sits higher).
  expect(after.peakRss - before.peakRss).toBeLessThan(MAX_GROWTH);
}

/**
 * The empty-span bomb: as many empty spans (two bytes each) as fit under the
 * inflate limit with `room` bytes left for something else: 16.8 M, 32 KB gzipped.
 */
function protobufSpanBomb(room = 0): Uint8Array {
  const count = Math.floor((OtlpLimits.maxInflatedBytes - room - 16) / 2);
  return requestOfSpans(emptyMessages(2, count));
}

/** The same in JSON: `{},` is three bytes, 11 M spans. */
function jsonSpanBomb(room = 0): string {
  const count = Math.floor((OtlpLimits.maxInflatedBytes - room - 100) / 3);
  return jsonRequestOfSpans(`${'{},'.repeat(count - 1)}{}`);
}

/** A JSON request of the resourceSpans of `first`, then those of `second`. */
function joinJson(first: string, second: string): string {
  return `${first.slice(0, first.lastIndexOf(']'))},${second.slice('{"resourceSpans":['.length)}`;
}

/** The code a decoder refuses a body with, or null when it decodes. */
function refusalOf(decode: () => unknown): string | null {
  try {
    decode();
    return null;
  } catch (error) {
    if (error instanceof ExportTooLargeError) return error.code;
    throw error;
  }
}

describe('the count cannot be dodged', () => {
  const spans = (count: number) => Array.from({ length: count }, () => '{}').join(',');

  it('JSON keys spelled with escapes still name the spans; brackets inside strings are not values', () => {
    const escaped = `{"resource\\u0053pans":[{"scopeSpans":[{"sp\\u0061ns":[${spans(OtlpLimits.maxSpans + 1)}]}]}]}`;
    expect(JSON.parse(escaped)).toHaveProperty('resourceSpans');
    expect(refusalOf(() => decodeJson(Buffer.from(escaped)))).toBe('OTLP_TOO_MANY_SPANS');
    const name = JSON.stringify(`"{[${'{['.repeat(OtlpLimits.maxValues)}\\`);
    expect(refusalOf(() => decodeJson(Buffer.from(jsonRequestOfSpans(`{"name":${name}}`))))).toBeNull();
  });

  it('elements of a repeated string field count as values (Resource.entity_refs[].id_keys)', () => {
    // ResourceSpans.resource (1) { entity_refs (3) { id_keys (3): "" × (limit + 1) } }
    const resource = field(1, field(3, emptyMessages(3, OtlpLimits.maxValues + 1)));
    expect(refusalOf(() => decodeProtobuf(field(1, resource)))).toBe('OTLP_TOO_MANY_VALUES');
  });
});

describe.each(backendNames)('hostile OTLP requests (%s)', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => {
    await api?.dispose();
  });
  rollbackEach(() => api);

  /** Posts a gzip body, as an exporter with compression on does, through the server in-process. */
  async function send(gzipped: Uint8Array<ArrayBuffer>, encoding: Encoding): Promise<Response> {
    const key = await api.keyFor(AGENT, PERMISSIONS);
    return api.server.fetch('http://runledger.test/v1/traces', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': CONTENT_TYPE[encoding],
        'content-encoding': 'gzip',
      },
      body: gzipped,
    });
  }

  /** The stable code of a refusal (the reason of its ErrorInfo), in either encoding. */
  async function reasonOf(response: Response, encoding: Encoding): Promise<string | undefined> {
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (encoding === 'json') {
      return (JSON.parse(new TextDecoder().decode(bytes)) as { details: Array<{ reason: string }> })
        .details[0]?.reason;
    }
    const { status, errorInfo } = messages();
    const decoded = status.toObject(status.decode(bytes)) as { details: Array<{ value: Uint8Array }> };
    return (
      errorInfo.toObject(errorInfo.decode(decoded.details[0]?.value ?? new Uint8Array())) as {
        reason: string;
      }
    ).reason;
  }

  async function rowCounts() {
    const count = async (table: string) => {
      const rows = await api.db.execute<{ n: number }>(sql.raw(`SELECT count(*)::int AS n FROM ${table}`));
      return (
        (rows as unknown as { rows?: Array<{ n: number }> }).rows?.[0]?.n ??
        (rows as unknown as Array<{ n: number }>)[0]?.n
      );
    };
    return { runs: await count('runs'), steps: await count('run_steps'), spans: await count('otlp_spans') };
  }

  async function runsOf(configuration: string): Promise<Array<{ status: string; stepCount: number }>> {
    const result = await api.query<{
      runs: { edges: Array<{ node: { status: string; steps: { edges: unknown[] } } }> };
    }>(
      `query ($c: [String!]) { runs(first: 5, filter: { configurations: $c }) {
         edges { node { status steps(first: 50) { edges { node { sequence } } } } } } }`,
      { c: [configuration] },
      { actor: AGENT, permissions: PERMISSIONS },
    );
    expect(result.errors).toBeUndefined();
    return (result.data?.runs.edges ?? []).map((e) => ({
      status: e.node.status,
      stepCount: e.node.steps.edges.length,
    }));
  }

  /** A real agent trace (a run of five steps) in either encoding: what a refusal must not store. */
  async function agentBody(configuration: string, encoding: Encoding): Promise<Uint8Array> {
    const { spans } = await agentTrace(configuration);
    const serializer = encoding === 'protobuf' ? ProtobufTraceSerializer : JsonTraceSerializer;
    const body = serializer.serializeRequest(spans as ReadableSpan[]);
    if (!body) throw new Error('nothing serialised');
    return body;
  }

  /** A request refused with 413 and this code, nothing of it stored, memory bounded. */
  async function expectRefused(
    body: Uint8Array,
    encoding: Encoding,
    code: string,
    configuration: string,
  ): Promise<void> {
    const gzipped = new Uint8Array(gzipSync(body, { level: 9 }));
    const rows = await rowCounts();
    const before = memory();
    const response = await send(gzipped, encoding);
    expect(response.status).toBe(413);
    expect(response.headers.get('content-type')).toBe(CONTENT_TYPE[encoding]);
    expect(await reasonOf(response, encoding)).toBe(code);
    expectBoundedGrowth(before);
    expect(await rowCounts()).toEqual(rows);
    expect(await runsOf(configuration)).toEqual([]);
  }

  it('a 32 KB gzip body of 16.8 M empty protobuf spans (after a real trace): 413 OTLP_TOO_MANY_SPANS, nothing stored', async () => {
    const configuration = `hostile-spans-protobuf-${backend}`;
    // Two requests in a row are one request in protobuf: the agent's spans come first.
    const agent = await agentBody(configuration, 'protobuf');
    const body = Buffer.concat([agent, protobufSpanBomb(agent.length)]);
    expect(body.length).toBeLessThanOrEqual(OtlpLimits.maxInflatedBytes);
    expect(gzipSync(body, { level: 9 }).length).toBeLessThan(64 * 1024);
    await expectRefused(body, 'protobuf', 'OTLP_TOO_MANY_SPANS', configuration);
  });

  it('the same bomb in OTLP/JSON, 11 M empty spans: 413 OTLP_TOO_MANY_SPANS, nothing stored', async () => {
    const configuration = `hostile-spans-json-${backend}`;
    const agent = new TextDecoder().decode(await agentBody(configuration, 'json'));
    // The agent's resourceSpans, then the bomb's: one request.
    const body = Buffer.from(joinJson(agent, jsonSpanBomb(agent.length)));
    expect(body.length).toBeLessThanOrEqual(OtlpLimits.maxInflatedBytes);
    await expectRefused(body, 'json', 'OTLP_TOO_MANY_SPANS', configuration);
  });

  it('one span with 3 M empty attributes: 413 OTLP_TOO_MANY_VALUES, in either encoding', async () => {
    const attributes = 3_000_000;
    for (const encoding of ['protobuf', 'json'] as const) {
      const configuration = `hostile-values-${encoding}-${backend}`;
      const agent = await agentBody(configuration, encoding);
      if (encoding === 'protobuf') {
        const span = Buffer.concat([
          field(1, Buffer.alloc(16, 1)),
          field(2, Buffer.alloc(8, 1)),
          emptyMessages(9, attributes),
        ]);
        await expectRefused(
          Buffer.concat([agent, requestOfSpans(field(2, span))]),
          encoding,
          'OTLP_TOO_MANY_VALUES',
          configuration,
        );
      } else {
        const text = new TextDecoder().decode(agent);
        const span = `{"traceId":"${'01'.repeat(16)}","spanId":"${'01'.repeat(8)}","attributes":[${'{},'.repeat(attributes - 1)}{}]}`;
        const body = Buffer.from(joinJson(text, jsonRequestOfSpans(span)));
        await expectRefused(body, encoding, 'OTLP_TOO_MANY_VALUES', configuration);
      }
    }
  });

  it.each(['protobuf', 'json'] as const)(
    'a %s request holding exactly the limits of spans and values is recorded; one span or one value more is refused',
    async (encoding) => {
      const configuration = `hostile-limits-${encoding}-${backend}`;
      const agent = await agentBody(configuration, encoding);
      const { request } = messages();
      const agentSpans =
        encoding === 'protobuf'
          ? (request.toObject(request.decode(agent)) as {
              resourceSpans: Array<{ scopeSpans: Array<{ spans: unknown[] }> }>;
            })
          : (JSON.parse(new TextDecoder().decode(agent)) as {
              resourceSpans: Array<{ scopeSpans: Array<{ spans: unknown[] }> }>;
            });
      const sent = agentSpans.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)).length;
      // Empty spans (rejected one by one, never stored) fill the span limit; links on the
      // first of them, which the mapping does not read, fill the value limit.
      const padding = OtlpLimits.maxSpans - sent;
      const build = (spans: number, links: number): Uint8Array => {
        if (encoding === 'protobuf') {
          const first = emptyMessages(13, links);
          return Buffer.concat([
            agent,
            requestOfSpans(Buffer.concat([field(2, first), emptyMessages(2, spans - 1)])),
          ]);
        }
        const text = new TextDecoder().decode(agent);
        const first = `{"links":[${Array.from({ length: links }, () => '{}').join(',')}]}`;
        const tail = jsonRequestOfSpans([first, ...Array.from({ length: spans - 1 }, () => '{}')].join(','));
        return Buffer.from(joinJson(text, tail));
      };
      const count = (body: Uint8Array) =>
        encoding === 'protobuf' ? protobufValues(body) : jsonValues(JSON.parse(Buffer.from(body).toString()));
      const links = OtlpLimits.maxValues - count(build(padding, 0));
      const atLimits = build(padding, links);
      expect(count(atLimits)).toBe(OtlpLimits.maxValues);

      const rows = await rowCounts();
      await expectRefused(build(padding, links + 1), encoding, 'OTLP_TOO_MANY_VALUES', configuration);
      // One link fewer, one span more: the same count of values, one span over.
      await expectRefused(build(padding + 1, links - 1), encoding, 'OTLP_TOO_MANY_SPANS', configuration);
      expect(await rowCounts()).toEqual(rows);

      const gzipped = new Uint8Array(gzipSync(atLimits));
      const before = memory();
      const response = await send(gzipped, encoding);
      expect(response.status).toBe(200);
      expectBoundedGrowth(before);
      const answer = (
        encoding === 'protobuf' ? ProtobufTraceSerializer : JsonTraceSerializer
      ).deserializeResponse(new Uint8Array(await response.arrayBuffer()));
      expect(Number(answer.partialSuccess?.rejectedSpans)).toBe(padding);
      expect(await runsOf(configuration)).toEqual([{ status: 'COMPLETED', stepCount: 5 }]);
    },
  );
});

/** /proc/<pid>/status VmRSS, in bytes. */
function residentBytes(pid: number): number {
  const kilobytes = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kilobytes) throw new Error('no VmRSS');
  return Number(kilobytes) * 1024;
}

// PostgreSQL only: the embedded database alone takes the process past 512 MB, and 10 s to start.
describe.runIf(backendNames.includes('postgres'))('the span bomb against the real process', () => {
  let database: TestDatabase | undefined;
  let running: Running | undefined;
  beforeAll(async () => {
    database = await openTestDatabase('postgres', { migrateTo: 0 });
    running = await startService({ DATABASE_URL: database.url ?? '' });
  }, 60_000);
  afterAll(async () => {
    if (running?.child.exitCode === null) running.child.kill('SIGKILL');
    await database?.dispose();
  });

  it('refuses each bomb with 413, answers /health after them, and stays under 512 MB resident', async () => {
    if (!running?.child.pid) throw new Error('the service did not start');
    const origin = new URL(running.url).origin;
    const key = running.adminKey() ?? '';
    const bombs: Array<[Encoding, Uint8Array]> = [
      ['protobuf', protobufSpanBomb()],
      ['json', Buffer.from(jsonSpanBomb())],
      ['protobuf', requestOfSpans(field(2, emptyMessages(9, 3_000_000)))],
    ];
    for (const [encoding, body] of bombs) {
      const response = await fetch(`${origin}/v1/traces`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': CONTENT_TYPE[encoding],
          'content-encoding': 'gzip',
        },
        body: new Uint8Array(gzipSync(body, { level: 9 })),
      });
      expect(response.status).toBe(413);
      await response.arrayBuffer();
      expect((await fetch(`${origin}/health`)).status).toBe(200);
      expect(residentBytes(running.child.pid)).toBeLessThan(512 * MB);
    }
    expect(running.child.exitCode).toBeNull();
  });
});
