import type { ToolOutcome } from './tool-outcome.ts';

export interface OutcomeCounts {
  ok: number;
  failed: number;
  cancelled: number;
  total: number;
  /** failed / (ok + failed): a cancel never raises it. Null when nothing ran to an answer. */
  failureRate: number | null;
}

export type OutcomeTally = Readonly<Record<ToolOutcome, number>>;

/** Every call of a tally, whatever its outcome. */
export function totalCalls(tally: OutcomeTally): number {
  return tally.ok + tally.failed + tally.cancelled;
}

export function outcomeCounts(tally: OutcomeTally): OutcomeCounts {
  const answered = tally.ok + tally.failed;
  return {
    ok: tally.ok,
    failed: tally.failed,
    cancelled: tally.cancelled,
    total: totalCalls(tally),
    failureRate: answered === 0 ? null : tally.failed / answered,
  };
}

export const NO_OUTCOMES: OutcomeTally = Object.freeze({ ok: 0, failed: 0, cancelled: 0 });
