import { createHash } from 'node:crypto';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runs } from '../../drizzle/schema.ts';
import { revokeApiKey } from '../../src/db/api-keys.ts';
import { RequestLimits } from '../../src/domain/limits.ts';
import { backendNames } from '../support/databases.ts';
import { agentTrace, exportSpans } from '../support/otel.ts';
import { type KeyedService, post, startKeyedService } from '../support/service.ts';
import { SseReader, subscriptionRequest } from '../support/sse.ts';

/**
 * The attacks of a hostile client against the service as `npm start` runs it
 * (NODE_ENV=production): refused with their codes, nothing written, and the
 * process still answering. Revocation comes from another process on the same
 * PostgreSQL, as `npm run keys -- revoke` does it while the service runs, so
 * these run where a second process can reach the database (PostgreSQL).
 */
const START = `mutation ($c: String!) { startRun(input: { configuration: $c }) {
  __typename ... on StartRunSuccess { data { uuid } } } }`;
const RECORD = `mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename } }`;
const ASK = `mutation ($input: RequestApprovalInput!) { requestApproval(input: $input) {
  __typename ... on RequestRecordedSuccess { data { request { uuid } } } } }`;
const WAIT = `query ($r: String!, $q: String!, $t: Int!) {
  awaitDecision(runUuid: $r, request: $q, timeoutMs: $t) { __typename ... on HumanRequest { state } } }`;

describe.each(backendNames.filter((backend) => backend === 'postgres'))(
  'a hostile client against the real process (%s)',
  (backend) => {
    let service: KeyedService<'agent' | 'revoked' | 'exporter' | 'other' | 'operator'>;
    let url = '';

    const codes = (body: { errors?: Array<{ extensions?: { code?: unknown } }> }) =>
      (body.errors ?? []).map((error) => error.extensions?.code);
    const startRun = async (key: string) =>
      ((await post(url, key, START, { c: 'hostile' })).body.data as { startRun: { data: { uuid: string } } })
        .startRun.data.uuid;

    beforeAll(async () => {
      service = await startKeyedService(
        backend,
        {
          agent: ['record', 'read_own_runs', 'read_payloads'],
          // Revoked by its own test: no other test uses it.
          revoked: ['record', 'read_own_runs', 'read_payloads'],
          // Revoked by its own test too, after an export made the service remember it.
          exporter: ['record', 'read_own_runs'],
          other: ['record', 'read_own_runs'],
          operator: ['manage_servers', 'read_all_runs'],
        },
        { NODE_ENV: 'production' },
      );
      url = service.running.url;
    }, 60_000);
    afterAll(async () => {
      await service?.dispose();
    });

    it('refuses large query texts without a key before reading them, and keeps answering', async () => {
      const large = `# ${'x'.repeat(15 * 1024 * 1024)}\n{ __typename }`;
      for (let i = 0; i < 5; i++) {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: `# ${i}\n${large}` }),
        });
        expect(response.status).toBe(401);
        expect(codes((await response.json()) as never)).toEqual(['UNAUTHENTICATED']);
      }
      // With a key, the text is refused by its size before it is parsed.
      const keyed = await post(url, service.keys.agent, large);
      expect([keyed.status, codes(keyed.body)]).toEqual([413, ['QUERY_TOO_LARGE']]);
      const small = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: `# ${'y'.repeat(RequestLimits.maxQueryBytes - 100)}\n{ runs( }` }),
      });
      expect(small.status).toBe(401);
      expect((await fetch(new URL('/health', url))).status).toBe(200);
    });

    it('ends the stream of a key revoked by another process with UNAUTHENTICATED, private payloads and all', async () => {
      const run = await startRun(service.keys.revoked);
      const stream = new SseReader(
        await fetch(subscriptionRequest(url, service.keys.revoked, { uuid: run })),
      );
      await post(url, service.keys.revoked, RECORD, {
        input: { runUuid: run, kind: 'LLM', round: 1, durationMs: 1 },
      });
      // The run as it stood (no step yet), then the step.
      let event = await stream.event();
      if (!event.step) event = await stream.event();
      expect(event.step?.sequence).toBe(1);
      const database = await service.openDatabase();
      try {
        expect(await revokeApiKey(database.db, service.keys.revoked.slice(0, 10))).toHaveLength(1);
      } finally {
        await database.close();
      }
      const message = await stream.next();
      expect(message?.event === 'next' ? codes(message.data as never) : message).toEqual(['UNAUTHENTICATED']);
      const end = await stream.next();
      expect(end === null || end.event === 'complete').toBe(true);
      expect((await post(url, service.keys.revoked, START, { c: 'after' })).status).toBe(401);
    });

    it('refuses the OTLP exports of a key revoked by another process after the service remembered it, and writes nothing', async () => {
      const endpoint = new URL('/v1/traces', url).toString();
      const exportAs = async (configuration: string, traces = 1) => {
        const spans = (
          await Promise.all(Array.from({ length: traces }, () => agentTrace(configuration)))
        ).flatMap((trace) => trace.spans);
        const response = await fetch(endpoint, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-protobuf',
            authorization: `Bearer ${service.keys.exporter}`,
          },
          body: new Uint8Array(ProtobufTraceSerializer.serializeRequest(spans) ?? new Uint8Array()),
        });
        return response.status;
      };
      const runsOf = async (configuration: string) => {
        const database = await service.openDatabase();
        try {
          return await database.db.$count(runs, eq(runs.configuration, configuration));
        } finally {
          await database.close();
        }
      };
      // Read once: the service remembers the key.
      expect(await exportAs('export-before')).toBe(200);
      expect(await runsOf('export-before')).toBe(1);
      const database = await service.openDatabase();
      try {
        expect(await revokeApiKey(database.db, service.keys.exporter.slice(0, 10))).toHaveLength(1);
      } finally {
        await database.close();
      }
      // One trace (checked in its own transaction), two traces (checked before either), and again.
      expect(await exportAs('export-after')).toBe(401);
      expect(await exportAs('export-after-two', 2)).toBe(401);
      expect(await exportAs('export-after')).toBe(401);
      expect([await runsOf('export-after'), await runsOf('export-after-two')]).toEqual([0, 0]);
    });

    it('caps the waits of one key, so that it cannot hold every connection', async () => {
      const key = service.keys.other;
      const run = await startRun(key);
      const asked = await post(url, key, ASK, {
        input: { runUuid: run, toolName: 'deploy', server: 'ops', arguments: {}, reason: 'ship' },
      });
      const request = (asked.body.data as { requestApproval: { data: { request: { uuid: string } } } })
        .requestApproval.data.request.uuid;
      const controller = new AbortController();
      // A held wait that ends before the abort (an error under load, say) is kept, to say why.
      const ended: string[] = [];
      // A held wait refused while the poll's own wait below held the last slot (for its 10 ms) is asked
      // again: the probe may reach the service before the last held waits do.
      const wait = async (): Promise<void> => {
        try {
          const response = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
            body: JSON.stringify({ query: WAIT, variables: { r: run, q: request, t: 60_000 } }),
            signal: controller.signal,
          });
          const text = await response.text();
          if (text.includes('"TOO_MANY_WAITS"') && !controller.signal.aborted) return wait();
          ended.push(`${response.status} ${text}`);
        } catch (error) {
          if (!controller.signal.aborted) ended.push(String((error as Error).cause ?? error));
        }
      };
      const held = Array.from({ length: 100 }, wait);
      try {
        await expect
          .poll(async () => codes((await post(url, key, WAIT, { r: run, q: request, t: 10 })).body), {
            // A hundred requests to open on a busy machine: they are in when the next one is refused.
            timeout: 45_000,
            message: `held waits that ended: ${ended.join('; ')}`,
          })
          .toEqual(['TOO_MANY_WAITS']);
        expect((await fetch(new URL('/health', url))).status).toBe(200);
      } finally {
        controller.abort();
        await Promise.all(held);
      }
      expect(ended).toEqual([]);
    }, 60_000);

    it("refuses a server header that names one of the service's own variables, and writes nothing", async () => {
      const register = `mutation ($input: McpServerInput!) { registerMcpServer(input: $input) {
        __typename ... on Error { code } } }`;
      const input = {
        identifier: 'exfiltrate',
        transport: 'STREAMABLE_HTTP',
        url: 'https://collector.example.com/mcp',
        headers: [{ name: 'X-Db', value: 'env:DATABASE_URL' }],
      };
      const refused = await post(url, service.keys.operator, register, { input });
      expect(refused.body.data).toEqual({
        registerMcpServer: { __typename: 'InvalidInputError', code: 'MCP_HEADER_ENV_NOT_ALLOWED' },
      });
      const listed = await post(url, service.keys.operator, '{ mcpServers { identifier } }');
      expect(listed.body.data).toEqual({ mcpServers: [] });
    });

    it('refuses an input schema with a pattern (ReDoS) at once, and writes nothing', async () => {
      const run = await startRun(service.keys.other);
      const schema = {
        type: 'object',
        properties: { a: { type: 'string' } },
        allOf: [{ properties: { a: { pattern: '^([a-z]+ ?)*$' } } }],
      };
      const asked = await post(
        url,
        service.keys.other,
        `mutation ($input: RequestInputInput!) { requestInput(input: $input) { __typename ... on Error { code } } }`,
        { input: { runUuid: run, prompt: 'deploy?', schema } },
      );
      expect(asked.body.data).toEqual({
        requestInput: { __typename: 'InvalidInputError', code: 'INPUT_SCHEMA_INVALID' },
      });
      const open = await post(
        url,
        service.keys.other,
        `query ($u: String!) { run(uuid: $u) { steps(first: 5) { edges { cursor } } } }`,
        {
          u: run,
        },
      );
      expect(open.body.data).toEqual({ run: { steps: { edges: [] } } });
      expect((await fetch(new URL('/health', url))).status).toBe(200);
    });

    it("keeps an OTLP trace's run out of another owner's reach: claimed first by the old guessable id, the export still lands", async () => {
      const { spans, traceId } = await agentTrace('squat-real');
      // What anyone could compute before: a hash of the owner's name, the kind and the trace id.
      const hex = createHash('sha256')
        .update(`runledger-otlp\u0000agent\u0000trace\u0000${traceId}`)
        .digest('hex');
      const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
      const guessed = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
      const squat = await post(
        url,
        service.keys.other,
        `mutation ($u: String!) { startRun(input: { uuid: $u, configuration: "squat" }) { __typename } }`,
        {
          u: guessed,
        },
      );
      expect(squat.body.data).toEqual({ startRun: { __typename: 'StartRunSuccess' } });
      const sent = await exportSpans('protobuf', spans, {
        url: new URL('/v1/traces', url).toString(),
        headers: { authorization: `Bearer ${service.keys.agent}` },
      });
      expect(sent.code).toBe(0);
      const runs = await post(
        url,
        service.keys.agent,
        `{ runs(first: 5, filter: { configurations: ["squat-real"] }) { edges { node { uuid steps(first: 1) { edges { cursor } } } } } }`,
      );
      const nodes = (
        runs.body.data as { runs: { edges: Array<{ node: { uuid: string; steps: { edges: unknown[] } } }> } }
      ).runs.edges;
      expect(nodes).toHaveLength(1);
      expect(nodes[0]?.node.uuid).not.toBe(guessed);
      expect(nodes[0]?.node.steps.edges).toHaveLength(1);
    });

    it('lets no other origin use credentials (CORS)', async () => {
      const response = await fetch(url, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://evil.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type',
        },
      });
      expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    });

    it('remembers nothing of assets that do not exist', async () => {
      for (let i = 0; i < 200; i++) {
        const response = await fetch(new URL(`/assets/missing-${i}-${'z'.repeat(2_000)}.js`, url));
        expect(response.status).toBe(404);
        await response.arrayBuffer();
      }
      expect((await fetch(new URL('/health', url))).status).toBe(200);
    });
  },
);
