import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/db/api-keys.ts';
import { PERMISSIONS } from '../../src/domain/permissions.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { post, type Running, startService } from '../support/service.ts';

/**
 * Logs never hold payloads, prompts, arguments, tool output or key material,
 * not even when a statement carrying them fails. A marker goes through every
 * write path, first while the database accepts it, then while it refuses it
 * with a message that quotes the row (as PostgreSQL's own messages quote
 * values), and never shows up in what the service prints.
 */
const MARKER = 'SECRET-MARKER-7f3a9c';

const WRITES = {
  startRun: `mutation ($c: String!) { startRun(input: { configuration: $c }) { __typename ... on StartRunSuccess { data { uuid } } } }`,
  recordToolExecution: `mutation ($input: RecordToolExecutionInput!) { recordToolExecution(input: $input) { __typename } }`,
  recordToolResult: `mutation ($input: RecordToolResultInput!) { recordToolResult(input: $input) { __typename } }`,
  recordStep: `mutation ($input: RecordStepInput!) { recordStep(input: $input) { __typename } }`,
  recordSteps: `mutation ($input: RecordStepsInput!) { recordSteps(input: $input) { __typename } }`,
  finishRun: `mutation ($uuid: String!) { finishRun(input: { uuid: $uuid, status: COMPLETED, terminationReason: COMPLETED }) { __typename } }`,
};

function inputs(runUuid: string): Array<[keyof typeof WRITES, Record<string, unknown>]> {
  const secret = `${MARKER} prompt and output`;
  const tool = { runUuid, round: 1, durationMs: 3, toolName: `read_${MARKER}`, server: `srv-${MARKER}` };
  return [
    [
      'recordToolExecution',
      {
        input: {
          ...tool,
          arguments: { path: secret },
          result: secret,
          isError: false,
          idempotencyKey: `exec-${MARKER}`,
        },
      },
    ],
    [
      'recordToolResult',
      {
        input: {
          ...tool,
          arguments: { [secret]: secret },
          result: {
            content: secret,
            outcome: 'OK',
            artifacts: [{ title: secret, type: 'TEXT', content: secret }],
          },
        },
      },
    ],
    [
      'recordStep',
      {
        input: {
          runUuid,
          kind: 'LLM',
          round: 1,
          durationMs: 5,
          payload: { messages: [{ role: 'user', content: secret }] },
          model: { model: `model-${MARKER}`, promptTokens: 10, completionTokens: 2, finishReason: MARKER },
          idempotencyKey: `step-${MARKER}`,
        },
      },
    ],
    [
      'recordSteps',
      {
        input: {
          runUuid,
          idempotencyKey: `batch-${MARKER}`,
          steps: [
            {
              kind: 'TOOL',
              round: 2,
              durationMs: 1,
              toolName: tool.toolName,
              isError: true,
              content: secret,
            },
            { kind: 'CONTEXT', round: 2, durationMs: 1, payload: { note: secret } },
          ],
        },
      },
    ],
    ['finishRun', { uuid: runUuid }],
  ];
}

describe.runIf(backendNames.includes('postgres'))('what the service logs (postgres)', () => {
  let database: TestDatabase;
  let running: Running;
  let key: string;

  beforeAll(async () => {
    database = await openTestDatabase('postgres');
    // A key of its own: the administrator key printed at first start is the one deliberate exception.
    key = (await createApiKey(database.handle.db, 'alice', PERMISSIONS)).key;
    // Not NODE_ENV=test: the service logs as it does in development and production.
    running = await startService({ DATABASE_URL: database.url ?? '', NODE_ENV: 'development' });
  });
  afterAll(async () => {
    if (running?.child.exitCode === null) running.child.kill('SIGKILL');
    await database?.dispose();
  });

  async function admin(statement: string): Promise<void> {
    const client = new pg.Client({ connectionString: database.url ?? '' });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  }

  async function startRun(): Promise<{ uuid: string | undefined; codes: string[] }> {
    const started = await post(running.url, key, WRITES.startRun, { c: `cfg-${MARKER}` });
    return {
      uuid: (started.body.data as { startRun?: { data?: { uuid: string } } } | null)?.startRun?.data?.uuid,
      codes: (started.body.errors ?? []).map((error) => String(error.extensions?.code)),
    };
  }

  /** Every step mutation into the run; the codes of the errors they answered. */
  async function recordEverything(uuid: string): Promise<string[]> {
    const codes: string[] = [];
    for (const [name, variables] of inputs(uuid)) {
      const answer = await post(running.url, key, WRITES[name], variables);
      for (const error of answer.body.errors ?? []) codes.push(String(error.extensions?.code));
    }
    return codes;
  }

  it('holds no payload, argument, output, name of the caller’s data or key, even for failed statements', async () => {
    const first = await startRun();
    expect(first.codes).toEqual([]);
    expect(await recordEverything(first.uuid ?? '')).toEqual([]);
    const second = await startRun();

    // The database now refuses every write with a message that quotes the row.
    await admin(`
      create function refuse_and_quote() returns trigger language plpgsql as $$
      begin raise exception 'refused row %', row_to_json(new)::text; end $$;
      create trigger refuse_runs before insert or update on runs for each row execute function refuse_and_quote();
      create trigger refuse_steps before insert on run_steps for each row execute function refuse_and_quote();`);
    expect((await startRun()).codes).toEqual(['INTERNAL_SERVER_ERROR']);
    const codes = await recordEverything(second.uuid ?? '');
    expect(codes).toEqual(inputs('').map(() => 'INTERNAL_SERVER_ERROR'));

    // Reads that fail carry the caller's filter values as parameters.
    await admin('alter table runs rename to runs_away');
    const read = await post(
      running.url,
      key,
      '{ runs(filter: { configurations: [$c] }) { edges { cursor } } }'.replace('$c', JSON.stringify(MARKER)),
    );
    expect(read.body.errors?.[0]?.extensions?.code).toBe('INTERNAL_SERVER_ERROR');
    await admin('alter table runs_away rename to runs');

    await new Promise((resolve) => setTimeout(resolve, 200));
    const output = running.output();
    // The failures were logged, by kind and code.
    expect(output).toMatch(/error .*sqlstate P0001, statement insert/);
    expect(output).toMatch(/sqlstate 42P01/);
    expect(output).not.toContain(MARKER);
    expect(output).not.toContain(key);
    expect(output).not.toContain(createHash('sha256').update(key).digest('hex'));
  });
});
