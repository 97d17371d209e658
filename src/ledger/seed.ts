import type { Database } from '../db/connection.ts';
import { appendLegacyToolStep } from '../db/run-writes.ts';
import { findRunsByUuids } from '../db/runs.ts';
import type { Permission } from '../domain/permissions.ts';
import type { TerminationReason } from '../domain/run-status.ts';
import type { RunTrace, ToolCall } from '../domain/run-trace.ts';
import { ToolResult } from '../domain/tool-result.ts';
import { endRun } from './end-run.ts';
import { requestApproval, requestInput } from './human-requests.ts';
import { appendSteps } from './record-steps.ts';
import { createRun } from './start-run.ts';

/** The run the README's first query asks for: cancelled, with all three outcomes and legacy steps. */
export const DEMO_RUN_UUID = '00000000-0000-4000-8000-00000000c0de';

const SERVERS: Record<string, string[]> = {
  github: ['search_issues', 'get_file', 'create_pull_request'],
  filesystem: ['read_file', 'list_directory', 'write_file'],
  'web-search': ['search', 'fetch_page'],
  postgres: ['query', 'describe_table'],
};
const CONFIGURATIONS = ['support-triage', 'docs-writer', 'release-bot'];
const OWNERS = ['alice', 'bob', 'ci-agent'];

/** A small deterministic generator, so the demo data is the same on every machine. */
function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
  };
}

type Random = ReturnType<typeof prng>;

function llmStep(trace: RunTrace, random: Random, round: number, at: Date) {
  const promptTokens = random.int(400, 4000);
  const completionTokens = random.int(50, 800);
  trace.recordStep({
    kind: 'llm',
    round,
    durationMs: random.int(300, 4000),
    occurredAt: at,
    payload: { messages: [{ role: 'user', content: 'demo prompt' }] },
    metadata: {
      model: 'gpt-demo-1',
      promptTokens,
      completionTokens,
      estimatedCost: Number(((promptTokens * 2.5 + completionTokens * 10) / 1_000_000).toFixed(6)),
      finishReason: 'tool_calls',
    },
  });
}

function toolCall(random: Random, round: number, at: Date): ToolCall {
  const server = random.pick(Object.keys(SERVERS));
  return {
    round,
    durationMs: random.int(20, 2500),
    toolName: random.pick(SERVERS[server] ?? []),
    server,
    arguments: { query: 'demo' },
    occurredAt: at,
  };
}

/**
 * Open runs that wait for a person, each with its open request, as an agent
 * asks through the API: the runs list shows them first, the inbox holds the
 * requests, and a key that may decide can approve, deny or answer them.
 */
const WAITING = [
  {
    owner: 'bob',
    configuration: 'release-bot',
    server: 'github',
    tool: 'search_issues',
    ask: {
      kind: 'approval',
      toolName: 'create_release',
      arguments: { tag: 'v2.4.0', draft: false },
      reason: 'Publish release v2.4.0 with the 12 merged changes listed in the changelog.',
    },
  },
  {
    owner: 'alice',
    configuration: 'docs-writer',
    server: 'filesystem',
    tool: 'read_file',
    ask: {
      kind: 'input',
      prompt: 'Which audience should the new installation guide address, and how long may it be?',
      schema: {
        type: 'object',
        properties: {
          audience: { type: 'string', enum: ['operators', 'developers'], description: 'Who reads it' },
          maxWords: { type: 'integer', minimum: 200, maximum: 3000, description: 'Longest length in words' },
        },
        required: ['audience'],
      },
    },
  },
] as const;

async function seedWaitingRuns(db: Database, now: Date): Promise<number> {
  let steps = 0;
  for (const [index, waiting] of WAITING.entries()) {
    const createdAt = new Date(now.getTime() - (index + 2) * 5 * 60_000);
    const run = await createRun(db, {
      owner: waiting.owner,
      configuration: waiting.configuration,
      createdAt,
    });
    const at = (seconds: number) => new Date(createdAt.getTime() + seconds * 1000);
    const recorded = await appendSteps(db, {
      runUuid: run.uuid,
      build: (trace) => {
        trace.recordStep({
          kind: 'request',
          round: 0,
          durationMs: 0,
          occurredAt: at(1),
          payload: { prompt: 'demo' },
        });
        trace.recordStep({
          kind: 'llm',
          round: 1,
          durationMs: 1200,
          occurredAt: at(3),
          metadata: { model: 'gpt-demo-1', promptTokens: 900, completionTokens: 120, estimatedCost: 0.00345 },
        });
        trace.recordToolResult(
          {
            round: 1,
            durationMs: 180,
            toolName: waiting.tool,
            server: waiting.server,
            arguments: { query: 'demo' },
            occurredAt: at(5),
          },
          ToolResult.ok('demo result'),
        );
      },
    });
    // The run's owner asks, as its agent would: the request's step and the waiting status come with it.
    const scope = { db, actor: { name: waiting.owner, permissions: new Set<Permission>(['record']) } };
    const { ask } = waiting;
    const asked =
      ask.kind === 'approval'
        ? await requestApproval(scope, { runUuid: run.uuid, server: waiting.server, ...ask })
        : await requestInput(scope, { runUuid: run.uuid, prompt: ask.prompt, schema: ask.schema });
    steps += recorded.steps.length + (asked.step ? 1 : 0);
  }
  return steps;
}

export interface SeedSummary {
  runs: number;
  steps: number;
  skipped: boolean;
}

/** Realistic demo runs over the last two weeks. Seeding twice changes nothing. */
export async function seedDemoData(db: Database, now = new Date(), log: (line: string) => void = () => {}) {
  const [existing] = await findRunsByUuids(db, [DEMO_RUN_UUID]);
  if (existing) return { runs: 0, steps: 0, skipped: true } satisfies SeedSummary;
  const random = prng(191);
  let stepCount = 0;
  const runCount = 40;
  for (let index = 0; index < runCount; index += 1) {
    const isDemo = index === runCount - 1;
    const createdAt = isDemo
      ? new Date(now.getTime() - 60_000)
      : new Date(now.getTime() - random.int(1, 14 * 24 * 3600) * 1000);
    const run = await createRun(db, {
      uuid: isDemo ? DEMO_RUN_UUID : undefined,
      owner: isDemo ? 'alice' : random.pick(OWNERS),
      configuration: isDemo ? 'support-triage' : random.pick(CONFIGURATIONS),
      createdAt,
    });
    const rounds = isDemo ? 3 : random.int(1, 5);
    // Roughly: most complete, some fail, some are cancelled by an operator mid-call.
    const ending = isDemo
      ? 'cancelled'
      : random.next() < 0.65
        ? 'completed'
        : random.next() < 0.5
          ? 'failed'
          : 'cancelled';
    let clock = createdAt.getTime();
    const at = () => {
      clock += random.int(200, 5000);
      return new Date(clock);
    };
    const recorded = await appendSteps(db, {
      runUuid: run.uuid,
      build: (trace) => {
        trace.recordStep({
          kind: 'request',
          round: 0,
          durationMs: 0,
          occurredAt: at(),
          payload: { prompt: 'demo request' },
        });
        trace.recordStep({
          kind: 'context',
          round: 0,
          durationMs: random.int(5, 50),
          occurredAt: at(),
          metadata: { messageCount: random.int(2, 12) },
        });
        for (let round = 1; round <= rounds; round += 1) {
          llmStep(trace, random, round, at());
          const calls = random.int(1, 3);
          for (let c = 0; c < calls; c += 1) {
            const call = toolCall(random, round, at());
            const roll = random.next();
            if (roll < 0.12) {
              trace.recordToolResult(call, ToolResult.failed('upstream returned 502'));
            } else if (call.toolName === 'write_file' || call.toolName === 'create_pull_request') {
              trace.recordToolResult(
                call,
                ToolResult.ok('written', [], {
                  table: 'documents',
                  uid: String(random.int(1, 9999)),
                  kind: 'created',
                }),
              );
            } else {
              trace.recordToolExecution(call, 'result text', false);
            }
          }
        }
        if (isDemo) {
          trace.recordToolExecution(toolCall(random, rounds, at()), 'boom', true);
          trace.recordToolResult(
            { ...toolCall(random, rounds, at()), server: 'github', toolName: 'search_issues' },
            ToolResult.ok('3 issues'),
          );
        }
        if (ending === 'cancelled') {
          // The call that was on the wire when the operator cancelled.
          trace.recordToolResult(
            toolCall(random, rounds, at()),
            ToolResult.cancelled('cancelled by operator'),
          );
        }
      },
    });
    stepCount += recorded.steps.length;
    if (isDemo || random.next() < 0.3) {
      const legacy = isDemo ? 3 : random.int(1, 4);
      for (let i = 0; i < legacy; i += 1) {
        await appendLegacyToolStep(
          db,
          run.uuid,
          toolCall(random, rounds, at()),
          isDemo ? i === 0 : random.next() < 0.25,
        );
      }
      stepCount += legacy;
    }
    const reason: TerminationReason =
      ending === 'completed' ? 'completed' : ending === 'failed' ? 'provider_failed' : 'cancelled';
    await endRun(db, { runUuid: run.uuid, status: ending, reason: reason, finishedAt: at() });
    if ((index + 1) % 10 === 0) log(`seeded ${index + 1}/${runCount} runs`);
  }
  stepCount += await seedWaitingRuns(db, now);
  return { runs: runCount + WAITING.length, steps: stepCount, skipped: false } satisfies SeedSummary;
}
