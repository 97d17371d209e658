import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSteps, runs } from '../../drizzle/schema.ts';
import { Limits } from '../../src/domain/limits.ts';
import { RunStep } from '../../src/domain/run-step.ts';
import { buildTimeline } from '../../src/domain/timeline.ts';
import { ToolResult } from '../../src/domain/tool-result.ts';
import { appendSteps } from '../../src/ledger/record-steps.ts';
import { createRun } from '../../src/ledger/start-run.ts';
import { errorCodes, openTestApi, rollbackEach, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

interface Entry {
  sequence: number;
  kind: string;
  occurredAt: string;
  round: number;
  durationMs: number;
  outcome: string | null;
  outcomeLabel: string | null;
  detail: string;
}

const ENTRY = 'sequence kind occurredAt round durationMs outcome outcomeLabel detail';
const TIMELINE = `query ($uuid: String!, $locale: Locale!) { run(uuid: $uuid) { timeline(locale: $locale) { ${ENTRY} } } }`;
const PAGE = `query ($uuid: String!, $locale: Locale!, $first: Int, $after: String) {
  run(uuid: $uuid) { timelinePage(locale: $locale, first: $first, after: $after) {
    edges { cursor node { ${ENTRY} } } pageInfo { hasNextPage hasPreviousPage endCursor } } } }`;
const STEPS = `query ($uuid: String!, $payload: Boolean!) { run(uuid: $uuid) {
  steps(first: 100) { edges { node { id sequence kind toolName server outcome metadata payload @include(if: $payload) } } } } }`;
const NODE = `query ($id: ID!, $payload: Boolean!) { node(id: $id) { ... on RunStep { sequence metadata payload @include(if: $payload) } } }`;

/** Whether a statement reads the payload column. */
const readsPayload = (statement: string) => /"payload"|\bpayload\b/.test(statement);

describe.each(backendNames)('timelines and steps read no payload they do not return (%s)', (backend) => {
  let api: TestApi;
  const statements: string[] = [];
  let uuid = '';
  const output = 'x'.repeat(20_000);

  beforeAll(async () => {
    api = await openTestApi(backend, { onQuery: (sql) => statements.push(sql) });
    const db = api.database.handle.db;
    const run = await createRun(db, { owner: 'alice', configuration: 'timeline' });
    uuid = run.uuid;
    await appendSteps(db, {
      runUuid: uuid,
      build: (trace) => {
        for (let i = 0; i < 12; i += 1) {
          trace.recordStep({
            kind: 'llm',
            round: i + 1,
            durationMs: 40 + i,
            payload: { prompt: `secret prompt ${i}` },
            metadata: { model: 'gpt-x', promptTokens: 100 + i, completionTokens: 7, note: 'not on the line' },
          });
          const call = { round: i + 1, durationMs: 5 * i, toolName: 'read', server: 'fs', arguments: { i } };
          const result =
            i % 4 === 0
              ? ToolResult.cancelled(output)
              : i % 4 === 1
                ? ToolResult.failed(output)
                : ToolResult.ok(
                    output,
                    [],
                    i % 4 === 2 ? { table: 'notes', uid: `n${i}`, kind: 'created' } : null,
                  );
          trace.recordToolResult(call, result);
        }
      },
    });
  });
  afterAll(async () => api?.dispose());
  rollbackEach(() => api);

  async function ask<T>(query: string, variables: Record<string, unknown>) {
    statements.length = 0;
    const result = await api.query<T>(query, variables);
    expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
    return result.data as T;
  }

  it('builds the same lines as from whole rows, in either locale, without reading a payload', async () => {
    const rows = await api.db.select().from(runSteps).where(eq(runSteps.kind, 'tool')).limit(1);
    expect(rows[0]?.payload).toMatchObject({ content: output });
    for (const locale of ['en', 'de'] as const) {
      const variables = { uuid, locale: locale.toUpperCase() };
      const data = await ask<{ run: { timeline: Entry[] } }>(TIMELINE, variables);
      expect(statements.some(readsPayload)).toBe(false);
      const whole = await api.db.select().from(runSteps).orderBy(asc(runSteps.sequence));
      const expected = buildTimeline(
        whole.map((row) => RunStep.fromRecord(row)),
        locale,
      ).map((entry) => ({
        ...entry,
        kind: entry.kind.toUpperCase(),
        outcome: entry.outcome?.toUpperCase() ?? null,
      }));
      expect(data.run.timeline).toEqual(expected);
      expect(data.run.timeline).toHaveLength(27);
    }
    const data = await ask<{ run: { timeline: Entry[] } }>(TIMELINE, { uuid, locale: 'DE' });
    const lines = data.run.timeline.map((entry) => entry.detail);
    expect(lines).toContain('fs/read · Argumente 7 B · Ergebnis 20000 B');
    expect(lines).toContain('fs/read · angelegt notes#n2');
    expect(lines).toContain('gpt-x · 100 ein / 7 aus Tokens');
    expect(lines.join('\n')).not.toContain('not on the line');
    expect(lines.join('\n')).not.toContain('secret');
    expect(data.run.timeline.map((entry) => entry.outcomeLabel)).toContain('abgebrochen');
  });

  it('pages the timeline by sequence: the pages together are the whole timeline', async () => {
    const whole = (await ask<{ run: { timeline: Entry[] } }>(TIMELINE, { uuid, locale: 'EN' })).run.timeline;
    const paged: Entry[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const data: {
        run: {
          timelinePage: {
            edges: Array<{ cursor: string; node: Entry }>;
            pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; endCursor: string | null };
          };
        };
      } = await ask(PAGE, { uuid, locale: 'EN', first: 10, after });
      expect(statements.some(readsPayload)).toBe(false);
      const page = data.run.timelinePage;
      expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
      paged.push(...page.edges.map((edge) => edge.node));
      pages += 1;
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(pages).toBe(3);
    expect(paged).toEqual(whole);
  });

  it("reads the steps' ids only for entries asked for their step", async () => {
    const readsIds = (statement: string) => /"id" as id/.test(statement);
    await ask(TIMELINE, { uuid, locale: 'EN' });
    expect(statements.some(readsIds)).toBe(false);
    const withSteps = await ask<{
      run: { timeline: Array<{ sequence: number; step: { sequence: number } }> };
    }>(
      `query ($uuid: String!) { run(uuid: $uuid) { timeline { sequence ...Step } } }
       fragment Step on TimelineEntry { step { sequence } }`,
      { uuid },
    );
    expect(statements.some(readsIds)).toBe(true);
    expect(withSteps.run.timeline).toHaveLength(27);
    for (const entry of withSteps.run.timeline) expect(entry.step.sequence).toBe(entry.sequence);
  });

  it('reads payloads only when they are selected, for steps and nodes alike', async () => {
    const withoutPayload = await ask<{
      run: { steps: { edges: Array<{ node: { id: string; metadata: Record<string, unknown> } }> } };
    }>(STEPS, { uuid, payload: false });
    expect(withoutPayload.run.steps.edges).toHaveLength(27);
    expect(statements.some(readsPayload)).toBe(false);
    const id = withoutPayload.run.steps.edges[1]?.node.id;
    await ask(NODE, { id, payload: false });
    expect(statements.some(readsPayload)).toBe(false);

    const withPayload = await ask<{
      run: { steps: { edges: Array<{ node: { kind: string; payload: Record<string, unknown> } }> } };
    }>(STEPS, { uuid, payload: true });
    // One statement for every payload on the page.
    expect(statements.filter(readsPayload)).toHaveLength(1);
    const tool = withPayload.run.steps.edges.find((edge) => edge.node.kind === 'TOOL');
    expect(tool?.node.payload).toMatchObject({ content: output, arguments: { i: 0 } });
    const node = await ask<{ node: { payload: Record<string, unknown> } }>(NODE, { id, payload: true });
    expect(node.node.payload).toMatchObject({ content: output });
  });

  it('still refuses payloads to an actor without read_payloads, reading none', async () => {
    statements.length = 0;
    const result = await api.query(STEPS, { uuid, payload: true }, { permissions: ['read_own_runs'] });
    expect(errorCodes(result)).toContain('FORBIDDEN');
    expect(statements.some(readsPayload)).toBe(false);
  });

  it('refuses a page over the maximum, and a whole timeline over its limit, each with its code', async () => {
    const tooMany = await api.query(PAGE, { uuid, locale: 'EN', first: Limits.maxTimelinePageSize + 1 });
    expect(errorCodes(tooMany)).toEqual(['VALUE_OUT_OF_RANGE']);
    expect(tooMany.errors?.[0]?.extensions?.field).toBe('first');
    // A run one step over the limit: refused whole, never cut short; its pages still answer.
    const long = await createRun(api.db, { owner: 'alice', configuration: 'long' });
    const [stored] = await api.db.select({ id: runs.id }).from(runs).where(eq(runs.uuid, long.uuid));
    await api.db.insert(runSteps).values(
      Array.from({ length: Limits.maxTimelineSteps + 1 }, (_, i) => ({
        runId: stored?.id ?? 0,
        sequence: i + 1,
        kind: 'context',
        occurredAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
      })),
    );
    const refused = await api.query(TIMELINE, { uuid: long.uuid, locale: 'EN' });
    expect(errorCodes(refused)).toEqual(['TIMELINE_TOO_LONG']);
    expect(refused.data?.run ?? null).toBeNull();
    const lastPage = await api.query<{ run: { timelinePage: { edges: unknown[] } } }>(PAGE, {
      uuid: long.uuid,
      locale: 'EN',
      first: Limits.maxTimelinePageSize,
      after: null,
    });
    expect(lastPage.errors).toBeUndefined();
    expect(lastPage.data?.run.timelinePage.edges).toHaveLength(Limits.maxTimelinePageSize);
  });
});
