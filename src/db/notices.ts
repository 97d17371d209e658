import { type SQL, sql } from 'drizzle-orm';
import { type CallProgress, checkedProgress } from '../domain/call-progress.ts';

// The notices' wire format, one for the channel (notifications.ts) and for the statements that send a
// notice themselves (run-writes.ts).

/**
 * The channel between instances: what changed, never the rows themselves. A
 * notice names a run (and the last sequence just stored, as a hint); whoever
 * hears it reads the rows from the tables, so a notice that is lost or comes
 * twice costs a read, never a step. PostgreSQL carries it between processes
 * (LISTEN/NOTIFY on a connection of its own); the embedded database is one
 * process and needs nothing but memory.
 */
export type Notice =
  /** Steps were appended to the run, or the run itself changed (status, rollups). */
  | { type: 'run'; runUuid: string; sequence: number | null }
  /** The run was cancelled: every instance cuts off its calls still on the wire. */
  | { type: 'cancel'; runUuid: string }
  /** A call of the run on the wire reported progress: carried whole, since no table holds it. */
  | { type: 'progress'; runUuid: string; call: CallOfProgress; progress: CallProgress };

/** Which call a progress report is of: its tool and server, and an id for the call while it lasts. */
export interface CallOfProgress {
  id: string;
  toolName: string;
  server: string;
}

/** The PostgreSQL channel every instance LISTENs on. */
export const CHANNEL = 'runledger_events';

/** A notice as a payload reads, or null when it is not one. */
export function parseNotice(payload: string | undefined): Notice | null {
  try {
    const value = JSON.parse(payload ?? '') as { t?: unknown; r?: unknown; s?: unknown };
    if (typeof value.r !== 'string') return null;
    if (value.t === 'cancel') return { type: 'cancel', runUuid: value.r };
    if (value.t === 'progress') return parseProgress(value.r, value as Record<string, unknown>);
    if (value.t === 'run') {
      return { type: 'run', runUuid: value.r, sequence: typeof value.s === 'number' ? value.s : null };
    }
    return null;
  } catch {
    return null;
  }
}

function parseProgress(runUuid: string, value: Record<string, unknown>): Notice | null {
  const { c: id, n: toolName, v: server } = value;
  if (typeof id !== 'string' || typeof toolName !== 'string' || typeof server !== 'string') return null;
  const progress = checkedProgress({ progress: value.p, total: value.o, message: value.m });
  return progress && { type: 'progress', runUuid, call: { id, toolName, server }, progress };
}

/** A notice as sent: short keys, far below NOTIFY's 8,000-byte limit (names and messages are bounded). */
export function encodeNotice(notice: Notice): string {
  switch (notice.type) {
    case 'run':
      return JSON.stringify({ t: 'run', r: notice.runUuid, s: notice.sequence });
    case 'cancel':
      return JSON.stringify({ t: 'cancel', r: notice.runUuid });
    case 'progress': {
      const { call, progress } = notice;
      return JSON.stringify({
        t: 'progress',
        r: notice.runUuid,
        c: call.id,
        n: call.toolName,
        v: call.server,
        p: progress.progress,
        o: progress.total,
        m: progress.message,
      });
    }
  }
}

/**
 * The notice of a change to a run (its uuid and last sequence, SQL text and
 * bigint), sent from inside a statement: PostgreSQL delivers it when the
 * statement's transaction commits, and never if it does not. The same notice
 * as `publish` sends (parseNotice reads both), without a statement of its own.
 */
export function runNoticeSql(runUuid: SQL, sequence: SQL): SQL {
  return sql`pg_notify(${CHANNEL}, json_build_object('t', 'run', 'r', ${runUuid}, 's', ${sequence})::text)`;
}
