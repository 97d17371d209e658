// A measurement, not a unit test: it runs alone after the suite (npm test runs
// vitest.timing.config.ts last), against the real service over HTTP. An actor
// asks about a run it may not see and about one that does not exist,
// alternating, the same uuid every time on each side (equal caching), and the
// medians of the two must not differ by more than 1 ms nor by more than 15%:
// a run's existence must not be readable off the clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERMISSIONS } from '../../src/domain/permissions.ts';
import { backendNames } from '../support/databases.ts';
import {
  missingTarget,
  PROBE_SERVER,
  PROBES,
  type Probe,
  type ProbeTarget,
  probeRequest,
} from '../support/hidden-probes.ts';
import { type KeyedService, post, type Running, startKeyedService } from '../support/service.ts';

/** Pairs measured per probe, after the warm-up; enough for medians stable to a tenth of a millisecond here. */
const PAIRS = 150;
const WARM_UP_PAIRS = 25;
/** Measurements of a probe at most: it passes at the first inside the bounds. */
const MEASUREMENTS = 3;
/** The bounds the two medians must stay within. */
const MAX_DIFFERENCE_MS = 1;
const MAX_DIFFERENCE_RATIO = 0.15;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

describe.each(backendNames)(
  'a hidden run takes as long to refuse as a missing one, over HTTP (%s)',
  (backend) => {
    let service: KeyedService<'admin' | 'alice' | 'mallory'>;
    let hidden: ProbeTarget;
    const missing = missingTarget();
    const figures: string[] = [];

    beforeAll(async () => {
      service = await startKeyedService(
        backend,
        {
          admin: PERMISSIONS,
          alice: ['read_own_runs', 'record'],
          mallory: ['read_own_runs', 'record', 'cancel_own_runs'],
        },
        { RUNLEDGER_MCP_ALLOWED_HOSTS: '127.0.0.1:*' },
      );
      const { url } = service.running;
      const { admin, alice } = service.keys;
      await post(
        url,
        admin,
        'mutation ($i: McpServerInput!) { registerMcpServer(input: $i) { __typename } }',
        {
          i: { identifier: PROBE_SERVER, transport: 'STREAMABLE_HTTP', url: 'http://127.0.0.1:9/mcp' },
        },
      );
      const started = await post(
        url,
        alice,
        'mutation { startRun(input: { configuration: "timing" }) { ... on StartRunSuccess { data { uuid id } } } }',
      );
      const run = (started.body.data as { startRun: { data: { uuid: string; id: string } } }).startRun.data;
      const recorded = await post(
        url,
        alice,
        `mutation ($u: String!) { recordStep(input: { runUuid: $u, kind: LLM, round: 1, durationMs: 2 }) {
        ... on RecordedStepsSuccess { data { steps { id } } } } }`,
        { u: run.uuid },
      );
      const steps = (recorded.body.data as { recordStep: { data: { steps: Array<{ id: string }> } } })
        .recordStep.data.steps;
      hidden = { uuid: run.uuid, runId: run.id, stepId: steps[0]?.id ?? '' };
    }, 60_000);
    afterAll(async () => {
      if (service?.running.child.exitCode === null) service.running.child.kill('SIGKILL');
      await service?.dispose();
      console.log(`hidden vs missing, median ms over ${PAIRS} pairs (${backend}):\n${figures.join('\n')}`);
    });

    async function timed(running: Running, probe: Probe, target: ProbeTarget): Promise<number> {
      const request = probeRequest(running.url, service.keys.mallory, probe, target);
      const began = performance.now();
      const response = await fetch(request);
      const body = await response.text();
      const took = performance.now() - began;
      // Every answer is a refusal or nothing: a probe that succeeded would measure something else.
      expect(body).toMatch(/RUN_NOT_FOUND|"(run|node)":null|"nodes":\[null,null\]/);
      return took;
    }

    it.each(PROBES)(
      '$name',
      async (probe) => {
        /** One measurement: the two medians over PAIRS alternating pairs, after the warm-up. */
        const measure = async () => {
          const times = { hidden: [] as number[], missing: [] as number[] };
          for (let pair = 0; pair < WARM_UP_PAIRS + PAIRS; pair += 1) {
            // Each side goes first in every other pair, so that neither gains from the other's warm caches.
            const order =
              pair % 2 === 0 ? (['hidden', 'missing'] as const) : (['missing', 'hidden'] as const);
            for (const side of order) {
              const took = await timed(service.running, probe, side === 'hidden' ? hidden : missing);
              if (pair >= WARM_UP_PAIRS) times[side].push(took);
            }
          }
          const ofHidden = median(times.hidden);
          const ofMissing = median(times.missing);
          const difference = Math.abs(ofHidden - ofMissing);
          const ratio = difference / Math.min(ofHidden, ofMissing);
          return { ofHidden, ofMissing, difference, ratio };
        };
        // A burst of load on two cores can move one median of one measurement: a probe fails only when
        // every one of MEASUREMENTS measurements is outside the bounds. A real difference is in all of them.
        let last = await measure();
        for (let round = 1; round < MEASUREMENTS; round += 1) {
          if (last.difference <= MAX_DIFFERENCE_MS && last.ratio <= MAX_DIFFERENCE_RATIO) break;
          last = await measure();
        }
        const { ofHidden, ofMissing, difference, ratio } = last;
        figures.push(
          `  ${probe.name.padEnd(20)} ${ofHidden.toFixed(2)} vs ${ofMissing.toFixed(2)} (${ratio.toFixed(3)})`,
        );
        const summary = `hidden ${ofHidden.toFixed(2)} ms, missing ${ofMissing.toFixed(2)} ms`;
        expect(difference, summary).toBeLessThanOrEqual(MAX_DIFFERENCE_MS);
        expect(ratio, summary).toBeLessThanOrEqual(MAX_DIFFERENCE_RATIO);
      },
      240_000,
    );
  },
);
