// A request's schema is MCP elicitation's flat subset (an allow-list): the schema that froze the
// service through a client's regex is refused and nothing is written; one stored before the check is
// refused on answering, at once and with a stable code, never compiled.
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { selectRows } from '../../src/db/connection.ts';
import { type AskAs, openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const agent: AskAs = { actor: 'agent', permissions: ['read_own_runs', 'record', 'read_payloads'] };
const approver: AskAs = { actor: 'carol', permissions: ['read_all_runs', 'approve_runs'] };

/** Took 13 s of the event loop to check an answer against, before the allow-list. */
const REDOS = {
  type: 'object',
  properties: { a: { type: 'string' } },
  allOf: [{ properties: { a: { pattern: '^([a-z]+ ?)*$' } } }],
};
const SENTENCE = 'please deploy the fix to production now!';

const REFUSED: Array<[string, unknown, string]> = [
  ['the ReDoS schema', REDOS, 'allOf'],
  [
    'a pattern in a field',
    { type: 'object', properties: { a: { type: 'string', pattern: '^([a-z]+ ?)*$' } } },
    'properties.a.pattern',
  ],
  // Before the allow-list these were stored, and answering them was an INTERNAL_SERVER_ERROR (Ajv's
  // stack overflow, its MissingRefError): nothing was ever fetched.
  [
    'a $ref loop',
    {
      $ref: '#/$defs/x',
      type: 'object',
      properties: { a: { type: 'string' } },
      $defs: { x: { $ref: '#/$defs/x' } },
    },
    '$ref',
  ],
  [
    'a $ref to the root',
    { type: 'object', properties: { a: { type: 'string' } }, allOf: [{ $ref: '#' }] },
    'allOf',
  ],
  [
    'a remote $ref',
    { type: 'object', properties: { a: { type: 'string' } }, $ref: 'https://schemas.example.com/a.json' },
    '$ref',
  ],
  [
    'a $ref in a field',
    { type: 'object', properties: { a: { type: 'string', $ref: 'https://schemas.example.com/a.json' } } },
    'properties.a.$ref',
  ],
];

const RECORDED = `__typename ... on Error { code message } ... on RequestRecordedSuccess { data {
  run { status } request { uuid state } } }`;

interface Recorded {
  __typename: string;
  code?: string;
  message?: string;
  data?: { run: { status: string }; request: { uuid: string; state: string } };
}

describe.each(backendNames)('the schema of a request for input (%s)', (backend) => {
  let api: TestApi;
  let run = '';

  const mutate = async (field: string, input: string, variables: Record<string, unknown>, as: AskAs) => {
    const result = await api.query<Record<string, Recorded>>(
      `mutation ($input: ${input}!) { ${field}(input: $input) { ${RECORDED} } }`,
      { input: variables },
      as,
    );
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data?.[field] as Recorded;
  };
  const requestInput = (schema: unknown) =>
    mutate('requestInput', 'RequestInputInput', { runUuid: run, prompt: 'Which branch?', schema }, agent);
  const provide = (request: string, values: unknown, decline = false) =>
    mutate('provideInput', 'ProvideInputInput', { runUuid: run, request, values, decline }, approver);
  const written = async () => {
    const [row] = await selectRows<{ requests: number; steps: number; status: string }>(
      api.db,
      sql`select (select count(*)::int from human_requests) as requests,
                 (select count(*)::int from run_steps where kind = 'input') as steps,
                 (select status from runs where uuid = ${run}) as status`,
    );
    return row;
  };
  /** A request as a row stored before the allow-list holds it: written by SQL, as the old code wrote it. */
  const storedBefore = async (schema: unknown) => {
    const uuid = randomUUID();
    await api.db.execute(
      sql`insert into human_requests (uuid, run_id, kind, source, requested_by, requested_at, prompt, schema)
          select ${uuid}, id, 'input', 'api', 'agent', now(), 'Which branch?', ${JSON.stringify(schema)}::jsonb
            from runs where uuid = ${run}`,
    );
    await api.db.execute(sql`update runs set status = 'waiting_for_input' where uuid = ${run}`);
    return uuid;
  };

  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());
  rollbackEach(() => api);
  beforeEach(async () => {
    const started = await api.query<{ startRun: { data: { uuid: string } } }>(
      'mutation { startRun(input: { configuration: "hitl-schemas" }) { ... on StartRunSuccess { data { uuid } } } }',
      {},
      agent,
    );
    run = started.data?.startRun.data.uuid ?? '';
  });

  it.each(REFUSED)(
    '%s is refused with INPUT_SCHEMA_INVALID, naming %s; nothing is written',
    async (_name, schema, path) => {
      const before = await written();
      const refused = await requestInput(schema);
      expect(refused).toMatchObject({ __typename: 'InvalidInputError', code: 'INPUT_SCHEMA_INVALID' });
      expect(refused.message).toContain(`schema: ${path} is not allowed`);
      expect(await written()).toEqual({ requests: 0, steps: 0, status: 'running' });
      expect(before).toEqual({ requests: 0, steps: 0, status: 'running' });
    },
  );

  it.each(REFUSED)(
    '%s stored before the check: answering it is refused at once with INPUT_SCHEMA_INVALID, never an internal error; it can be declined',
    async (_name, schema) => {
      const request = await storedBefore(schema);
      const started = performance.now();
      const refused = await provide(request, { a: SENTENCE });
      // The answer never reached a validator: no backtracking, no $ref to resolve.
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(refused).toMatchObject({ __typename: 'InvalidInputError', code: 'INPUT_SCHEMA_INVALID' });
      expect(refused.message).toMatch(
        /^this request's schema: .* is not allowed: .*; it cannot be answered, only declined$/,
      );
      const [row] = await selectRows<{ state: string; answer: unknown }>(
        api.db,
        sql`select state, answer from human_requests where uuid = ${request}`,
      );
      expect(row).toEqual({ state: 'open', answer: null });
      const declined = await provide(request, null, true);
      expect(declined.data).toMatchObject({ request: { state: 'DECLINED' }, run: { status: 'RUNNING' } });
    },
  );

  it('every shape MCP elicitation allows is accepted and answered: choices with titles, several choices', async () => {
    const schema = {
      type: 'object',
      title: 'Deploy',
      properties: {
        region: {
          type: 'string',
          oneOf: [
            { const: 'eu', title: 'Europe' },
            { const: 'us', title: 'United States' },
          ],
        },
        zones: {
          type: 'array',
          items: {
            anyOf: [
              { const: 'a', title: 'A' },
              { const: 'b', title: 'B' },
            ],
          },
          maxItems: 2,
        },
        tags: { type: 'array', items: { type: 'string', enum: ['hotfix', 'minor'] } },
        legacy: { type: 'string', enum: ['x', 'y'], enumNames: ['Ex', 'Why'] },
        when: { type: 'string', format: 'date-time' },
        note: { type: 'string', maxLength: 80 },
      },
      required: ['region', 'zones'],
    };
    const asked = await requestInput(schema);
    expect(asked.data?.run.status).toBe('WAITING_FOR_INPUT');
    const request = asked.data?.request.uuid ?? '';
    const stored = await api.query<{ humanRequest: { schema: unknown } }>(
      'query ($u: String!) { humanRequest(uuid: $u) { schema } }',
      { u: request },
      agent,
    );
    expect(stored.data?.humanRequest.schema).toEqual(schema);
    for (const values of [
      { region: 'Europe', zones: ['a'] },
      { region: 'eu', zones: ['a', 'b', 'a'] },
      { region: 'eu', zones: ['c'] },
      { region: 'eu', zones: [], when: 'tomorrow' },
      { region: 'eu', zones: [], note: SENTENCE.repeat(3) },
    ]) {
      expect((await provide(request, values)).code, JSON.stringify(values)).toBe('INPUT_VALUES_INVALID');
    }
    const answered = await provide(request, {
      region: 'eu',
      zones: ['a', 'b'],
      tags: ['hotfix'],
      legacy: 'y',
      when: '2026-03-01T09:30:00+01:00',
      note: SENTENCE,
    });
    expect(answered.data?.request.state).toBe('ANSWERED');
  });
});
