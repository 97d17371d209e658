import { createClient } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcessChannel } from '../../src/db/notifications.ts';
import { RunEvents } from '../../src/ledger/run-events.ts';
import { createServer, type Server } from '../../src/server.ts';
import { openTestApi, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';
import { type Listening, listen } from '../support/http.ts';
import { type HttpToolServer, startHttpToolServer } from '../support/mcp-tool-server.ts';
import { type LiveEvent, RUN_EVENTS, SseReader, sequencesOf, subscriptionRequest } from '../support/sse.ts';

const START = `mutation ($c: String!) { startRun(input: { configuration: $c }) {
  __typename ... on StartRunSuccess { data { uuid } } } }`;
const RECORD = `mutation ($input: RecordStepInput!) { recordStep(input: $input) {
  __typename ... on Error { code } ... on RecordedStepsSuccess { data { steps { sequence } } } } }`;
const BATCH = `mutation ($input: RecordStepsInput!) { recordSteps(input: $input) { __typename ... on Error { code } } }`;
const FINISH = `mutation ($u: String!) { finishRun(input: { uuid: $u, status: COMPLETED, terminationReason: COMPLETED }) { __typename } }`;
const CANCEL = `mutation ($u: String!) { cancelRun(input: { uuid: $u }) { __typename } }`;
const CALL = `mutation ($input: CallToolInput!) { callTool(input: $input) {
  __typename ... on RecordedStepsSuccess { data { steps { sequence outcome } } } } }`;

describe.each(backendNames)('live runs in one process (%s)', (backend) => {
  let api: TestApi;
  let events: RunEvents;
  let server: Server;
  let tools: HttpToolServer;

  const ask = <T>(query: string, variables: Record<string, unknown>, actor = 'alice') =>
    api.query<T>(query, variables, { server, actor });
  const startRun = async (actor = 'alice') => {
    const result = await ask<{ startRun: { data: { uuid: string } } }>(START, { c: 'live' }, actor);
    return result.data?.startRun.data.uuid ?? '';
  };
  const record = (runUuid: string, round = 1, actor = 'alice') =>
    ask(RECORD, { input: { runUuid, kind: 'LLM', round, durationMs: 5 } }, actor);
  /** Opens a stream in-process, through the server's fetch handler. */
  const subscribe = async (
    uuid: string,
    after?: number | null,
    as: { actor?: string; permissions?: Parameters<TestApi['keyFor']>[1] } = {},
  ) => {
    const key = await api.keyFor(as.actor, as.permissions);
    const response = await server.fetch(
      subscriptionRequest('http://runledger.test/graphql', key, { uuid, after }),
    );
    return new SseReader(response);
  };

  beforeAll(async () => {
    api = await openTestApi(backend);
    events = new RunEvents(inProcessChannel(), { maxPerActor: 3, maxPerProcess: 5 });
    server = createServer({ handle: api.database.handle, graphiql: false, mcp: TEST_MCP_SETTINGS, events });
    tools = await startHttpToolServer();
    await ask('mutation ($input: McpServerInput!) { registerMcpServer(input: $input) { __typename } }', {
      input: { identifier: 'live-tools', transport: 'STREAMABLE_HTTP', url: tools.url },
    });
  }, 60_000);
  afterAll(async () => {
    await tools?.close();
    await events?.close();
    await api?.dispose();
  });

  it('sends the stored steps first, then the live ones, then the end: in order, each once', async () => {
    const run = await startRun();
    for (let i = 0; i < 3; i += 1) await record(run);
    const stream = await subscribe(run);
    const first = [await stream.event(), await stream.event(), await stream.event()];
    expect(sequencesOf(first)).toEqual([1, 2, 3]);
    expect(first[2]?.run).toMatchObject({ uuid: run, status: 'RUNNING' });
    await record(run, 2);
    const fourth = await stream.event();
    expect(fourth.step).toMatchObject({ sequence: 4, kind: 'LLM' });
    // The run after the event: its rollups already count the step.
    expect(fourth.run.rounds).toBe(2);
    await ask(FINISH, { u: run });
    const { events: rest, completed } = await stream.rest();
    expect(rest).toEqual([
      expect.objectContaining({ step: null, run: expect.objectContaining({ status: 'COMPLETED' }) }),
    ]);
    expect(completed).toBe(true);
    expect(events.openStreams()).toBe(0);
  });

  it('resumes after the last sequence seen, without a gap or a repeat', async () => {
    const run = await startRun();
    for (let i = 0; i < 5; i += 1) await record(run);
    const first = await subscribe(run);
    const seen = [await first.event(), await first.event()];
    await first.close();
    const resumed = await subscribe(run, seen.at(-1)?.step?.sequence);
    await record(run);
    await ask(FINISH, { u: run });
    const { events: rest, completed } = await resumed.rest();
    expect(completed).toBe(true);
    expect([...sequencesOf(seen), ...sequencesOf(rest)]).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('keeps order and sends each step once while writers race', async () => {
    const run = await startRun();
    const stream = await subscribe(run);
    // The first event of a run without steps is the run itself: the stream is open.
    expect((await stream.event()).step).toBeNull();
    const writers = Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 10; i += 1) await record(run);
    });
    const batch = ask(BATCH, {
      input: {
        runUuid: run,
        steps: Array.from({ length: 150 }, () => ({ kind: 'LLM', round: 1, durationMs: 1 })),
      },
    });
    await Promise.all([...writers, batch]);
    await ask(FINISH, { u: run });
    const { events: rest } = await stream.rest();
    expect(sequencesOf(rest)).toEqual(Array.from({ length: 190 }, (_, i) => i + 1));
  });

  it('answers a run the actor may not see as a missing one, and opens nothing', async () => {
    const hidden = await startRun('bob');
    const missing = crypto.randomUUID();
    const answers = [];
    for (const uuid of [hidden, missing]) {
      const stream = await subscribe(uuid, null, { actor: 'carol', permissions: ['read_own_runs'] });
      const message = await stream.next();
      answers.push(message?.event === 'next' ? message.data.errors?.map((e) => e.extensions?.code) : message);
      expect(await stream.next()).toEqual({ event: 'complete' });
    }
    expect(answers).toEqual([['RUN_NOT_FOUND'], ['RUN_NOT_FOUND']]);
    expect(events.openStreams()).toBe(0);
  });

  it('refuses a bad uuid, a bad sequence and streams past the limits, with their codes', async () => {
    const run = await startRun();
    const codeOf = async (stream: SseReader) => {
      const message = await stream.next();
      return message?.event === 'next' ? message.data.errors?.[0]?.extensions?.code : message;
    };
    expect(await codeOf(await subscribe('not-a-uuid'))).toBe('VALUE_INVALID');
    expect(await codeOf(await subscribe(run, -1))).toBe('VALUE_OUT_OF_RANGE');
    const open = [await subscribe(run), await subscribe(run), await subscribe(run)];
    for (const stream of open) expect((await stream.event()).run.uuid).toBe(run);
    expect(await codeOf(await subscribe(run))).toBe('TOO_MANY_SUBSCRIPTIONS');
    expect(events.openStreams()).toBe(3);
    const others = [
      await subscribe(run, null, { actor: 'dave' }),
      await subscribe(run, null, { actor: 'dave' }),
    ];
    for (const stream of others) await stream.event();
    expect(await codeOf(await subscribe(run, null, { actor: 'erin' }))).toBe('SUBSCRIPTIONS_FULL');
    expect(events.openStreams()).toBe(5);
    for (const stream of [...open, ...others]) await stream.close();
    await expect.poll(() => events.openStreams()).toBe(0);
  });

  it('ends only after a call in flight at the cancel has recorded its CANCELLED step', async () => {
    const run = await startRun();
    const stream = await subscribe(run);
    expect((await stream.event()).step).toBeNull();
    const pending = ask<{ callTool: { data: { steps: Array<{ outcome: string }> } } }>(CALL, {
      input: {
        runUuid: run,
        server: 'live-tools',
        toolName: 'slow',
        arguments: { ms: 30_000 },
        timeoutMs: 60_000,
      },
    });
    // Time for the call to reach the wire (as in the MCP tests).
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(
      (await ask<{ cancelRun: { __typename: string } }>(CANCEL, { u: run })).data?.cancelRun.__typename,
    ).toBe('CancelRunSuccess');
    expect((await pending).data?.callTool.data.steps[0]?.outcome).toBe('CANCELLED');
    const { events: rest, completed } = await stream.rest();
    expect(completed).toBe(true);
    const last = rest.at(-1) as LiveEvent;
    expect(last.step).toMatchObject({ toolName: 'slow', outcome: 'CANCELLED' });
    expect(last.run).toMatchObject({ status: 'CANCELLED', toolOutcomeCounts: { cancelled: 1, total: 1 } });
    // That the MCP server hears the cancel is the MCP tests' (and, across instances, live-instances').
  });

  it('leaks nothing after 1,000 subscribe/disconnect cycles over HTTP', async () => {
    const run = await startRun();
    const http: Listening = await listen(server);
    const key = await api.keyFor();
    const before = events.listenerCount();
    try {
      for (let i = 0; i < 1_000; i += 1) {
        const controller = new AbortController();
        const response = await fetch(
          subscriptionRequest(`${http.base}/graphql`, key, { uuid: run }, controller.signal),
        );
        const stream = new SseReader(response);
        expect((await stream.event()).run.uuid).toBe(run);
        controller.abort();
        await stream.close();
      }
      await expect.poll(() => events.openStreams(), { timeout: 10_000 }).toBe(0);
      expect(events.listenerCount()).toBe(before);
    } finally {
      await http.close();
    }
  }, 120_000);

  it('serves a client library: graphql-sse in distinct connections mode', async () => {
    const http: Listening = await listen(server);
    const key = await api.keyFor();
    const client = createClient({
      url: `${http.base}/graphql`,
      headers: { authorization: `Bearer ${key}` },
    });
    try {
      const run = await startRun();
      await record(run);
      await record(run);
      await ask(FINISH, { u: run });
      const received: LiveEvent[] = [];
      for await (const result of client.iterate<{ runEvents: LiveEvent }>({
        query: RUN_EVENTS,
        variables: { uuid: run, after: 1 },
      })) {
        if (result.data) received.push(result.data.runEvents);
      }
      expect(sequencesOf(received)).toEqual([2]);
      expect(received.at(-1)?.run.status).toBe('COMPLETED');
    } finally {
      client.dispose();
      await http.close();
    }
  });
});
