import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../../src/db/api-keys.ts';
import { RequestLimits } from '../../src/domain/limits.ts';
import { backendNames } from '../support/databases.ts';
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
    let service: KeyedService<'agent' | 'other'>;
    let url = '';

    const codes = (body: { errors?: Array<{ extensions?: { code?: unknown } }> }) =>
      (body.errors ?? []).map((error) => error.extensions?.code);
    const startRun = async (key: string) =>
      ((await post(url, key, START, { c: 'hostile' })).body.data as { startRun: { data: { uuid: string } } })
        .startRun.data.uuid;

    beforeAll(async () => {
      service = await startKeyedService(
        backend,
        { agent: ['record', 'read_own_runs', 'read_payloads'], other: ['record', 'read_own_runs'] },
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
      const run = await startRun(service.keys.agent);
      const stream = new SseReader(await fetch(subscriptionRequest(url, service.keys.agent, { uuid: run })));
      await post(url, service.keys.agent, RECORD, {
        input: { runUuid: run, kind: 'LLM', round: 1, durationMs: 1 },
      });
      // The run as it stood (no step yet), then the step.
      let event = await stream.event();
      if (!event.step) event = await stream.event();
      expect(event.step?.sequence).toBe(1);
      const database = await service.openDatabase();
      try {
        expect(await revokeApiKey(database.db, service.keys.agent.slice(0, 10))).toHaveLength(1);
      } finally {
        await database.close();
      }
      const message = await stream.next();
      expect(message?.event === 'next' ? codes(message.data as never) : message).toEqual(['UNAUTHENTICATED']);
      const end = await stream.next();
      expect(end === null || end.event === 'complete').toBe(true);
      expect((await post(url, service.keys.agent, START, { c: 'after' })).status).toBe(401);
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
      const wait = () =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ query: WAIT, variables: { r: run, q: request, t: 60_000 } }),
          signal: controller.signal,
        })
          .then(async (response) => void ended.push(`${response.status} ${await response.text()}`))
          .catch((error: unknown) => {
            if (!controller.signal.aborted) ended.push(String((error as Error).cause ?? error));
          });
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
