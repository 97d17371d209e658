import type { ExecutionResult } from 'graphql';

/** The selection the live tests ask for in each event. */
export const RUN_EVENTS = `subscription ($uuid: String!, $after: Int) {
  runEvents(uuid: $uuid, afterSequence: $after) {
    run { uuid status terminationReason rounds toolOutcomeCounts { cancelled total } }
    step { sequence kind toolName outcome }
  } }`;

export interface LiveEvent {
  run: {
    uuid: string;
    status: string;
    terminationReason: string | null;
    rounds: number;
    toolOutcomeCounts: { cancelled: number; total: number };
  };
  step: { sequence: number; kind: string; toolName: string | null; outcome: string | null } | null;
}

/** One message of a GraphQL-over-SSE stream: a result, or the end. */
export type SseMessage = { event: 'next'; data: ExecutionResult } | { event: 'complete' };

/**
 * Reads a text/event-stream response message by message; comment lines (the
 * heartbeats) are counted, not returned.
 */
export class SseReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #buffer = '';
  heartbeats = 0;

  constructor(readonly response: Response) {
    if (!response.body) throw new Error('the response has no body');
    this.#reader = response.body.getReader();
  }

  /** The next message, or null when the stream ended without one. */
  async next(): Promise<SseMessage | null> {
    for (;;) {
      const end = this.#buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        const lines = block.split('\n');
        if (lines.every((line) => line.startsWith(':'))) {
          this.heartbeats += 1;
          continue;
        }
        const event = lines
          .find((line) => line.startsWith('event:'))
          ?.slice(6)
          .trim();
        const data = lines
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n');
        if (event === 'complete') return { event: 'complete' };
        return { event: 'next', data: JSON.parse(data) as ExecutionResult };
      }
      const { done, value } = await this.#reader.read();
      if (done) return null;
      this.#buffer += this.#decoder.decode(value, { stream: true });
    }
  }

  /** The next event's data, failing on an error or the end. */
  async event(): Promise<LiveEvent> {
    const message = await this.next();
    if (message?.event !== 'next') throw new Error(`expected an event, got ${JSON.stringify(message)}`);
    if (message.data.errors) throw new Error(`errors: ${JSON.stringify(message.data.errors)}`);
    return (message.data.data as { runEvents: LiveEvent }).runEvents;
  }

  /** Events until the stream completes (or `limit` events, to stop a runaway). */
  async rest(limit = 10_000): Promise<{ events: LiveEvent[]; completed: boolean }> {
    const events: LiveEvent[] = [];
    while (events.length < limit) {
      const message = await this.next();
      if (message === null) return { events, completed: false };
      if (message.event === 'complete') return { events, completed: true };
      if (message.data.errors) throw new Error(`errors: ${JSON.stringify(message.data.errors)}`);
      events.push((message.data.data as { runEvents: LiveEvent }).runEvents);
    }
    return { events, completed: false };
  }

  /** Goes away, as a client that closes the connection. */
  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }
}

/** The request a GraphQL-over-SSE client sends (distinct connections mode). */
export function subscriptionRequest(
  url: string,
  key: string,
  variables: { uuid: string; after?: number | null },
  signal?: AbortSignal,
  query: string = RUN_EVENTS,
): Request {
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      authorization: `Bearer ${key}`,
    },
    body: JSON.stringify({ query, variables }),
    ...(signal ? { signal } : {}),
  });
}

/** Sequences of the step events, in the order received. */
export const sequencesOf = (events: readonly LiveEvent[]): number[] =>
  events.flatMap((event) => (event.step ? [event.step.sequence] : []));
