/**
 * How far a tool call on the wire has come, as the server reported it (MCP's
 * notifications/progress): `progress` grows; `total` when the server knows it;
 * a short message. Shown live while the call runs; the last one is kept in the
 * step's metadata (`metadata.progress`).
 */
export interface CallProgress {
  progress: number;
  total: number | null;
  message: string | null;
}

/** At most this many characters of a server's progress message are kept. */
export const PROGRESS_MESSAGE_LENGTH = 200;

/** A report as it may be shown and stored: finite numbers, a bounded message; null when not one. */
export function checkedProgress(report: {
  progress: unknown;
  total?: unknown;
  message?: unknown;
}): CallProgress | null {
  const finite = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : null);
  const progress = finite(report.progress);
  if (progress === null) return null;
  // The adapter has made it one line of plain text (clipRemoteText); here it is only bounded.
  const message = typeof report.message === 'string' ? report.message.slice(0, PROGRESS_MESSAGE_LENGTH) : '';
  return { progress, total: finite(report.total), message: message || null };
}
