import type { Server as HttpServer, RequestListener } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import type { Server } from '../../src/server.ts';
import {
  createHttpServer,
  defaultTransportLimits,
  type KnownKey,
  type TransportLimits,
} from '../../src/transport.ts';

export interface Listening {
  http: HttpServer;
  port: number;
  base: string;
  close(): Promise<void>;
}

/**
 * The HTTP server the entry point builds, on a free port; tests may make its limits small, and say
 * which keys are known (whose JSON bodies the transport reads first; default: none).
 */
export async function listen(
  server: Server | RequestListener,
  limits: Partial<TransportLimits> = {},
  knownKey?: KnownKey,
): Promise<Listening> {
  const http = createHttpServer(server, { ...defaultTransportLimits, ...limits }, knownKey);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    http,
    port,
    base: `http://127.0.0.1:${port}`,
    close: async () => {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

/** One HTTP answer read off a raw connection. */
export interface RawAnswer {
  status: number;
  headers: string;
  body: string;
}

/** A raw TCP connection, to send what no well-behaved client sends: lying framing, dribbles. */
export class RawConnection {
  /** Bytes written so far, and when the first byte of an answer came. */
  sent = 0;
  sentWhenAnswered: number | undefined;
  answeredAt: number | undefined;
  received = '';
  isClosed = false;
  readonly openedAt = Date.now();
  closedAt: number | undefined;
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.sentWhenAnswered ??= this.sent;
      this.answeredAt ??= Date.now();
      this.received += chunk.toString('utf8');
    });
    // A server that closes while the client still sends resets the connection: that is expected here.
    socket.on('error', () => {});
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.isClosed = true;
        this.closedAt = Date.now();
        resolve();
      }),
    );
  }

  /** `allowHalfOpen`: the connection stays open for sending after the server's FIN, as a careless client's does. */
  static async open(port: number, { allowHalfOpen = false } = {}): Promise<RawConnection> {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawConnection(socket);
  }

  get answered(): boolean {
    return this.sentWhenAnswered !== undefined;
  }

  /** Writes, waiting for the socket to drain; false once the connection is closed. */
  async write(data: string | Buffer): Promise<boolean> {
    if (this.isClosed || this.socket.destroyed) return false;
    const size = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
    const flushed = this.socket.write(data);
    this.sent += size;
    if (!flushed) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.socket.off('drain', done);
          this.socket.off('close', done);
          resolve();
        };
        this.socket.once('drain', done);
        this.socket.once('close', done);
      });
    }
    return !this.isClosed;
  }

  /** Waits until the server closes the connection, at most `ms`. */
  async waitClosed(ms: number): Promise<boolean> {
    await Promise.race([this.closed, new Promise((resolve) => setTimeout(resolve, ms))]);
    return this.isClosed;
  }

  /** Waits until some answer arrived (or the connection closed), at most `ms`. */
  async waitAnswer(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.answered && !this.isClosed && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The answers received, in order. */
  answers(): RawAnswer[] {
    const answers: RawAnswer[] = [];
    let rest = this.received;
    while (rest.startsWith('HTTP/1.1 ')) {
      const headerEnd = rest.indexOf('\r\n\r\n');
      if (headerEnd < 0) break;
      const headers = rest.slice(0, headerEnd);
      const length = Number(/^content-length:\s*(\d+)/im.exec(headers)?.[1] ?? rest.length);
      const body = rest.slice(headerEnd + 4, headerEnd + 4 + length);
      answers.push({ status: Number(headers.slice(9, 12)), headers, body });
      rest = rest.slice(headerEnd + 4 + body.length);
    }
    return answers;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** The `extensions.code` of each error in a JSON answer body. */
export function codesIn(body: string): unknown[] {
  try {
    const parsed = JSON.parse(body) as { errors?: Array<{ extensions?: { code?: unknown } }> };
    return (parsed.errors ?? []).map((error) => error.extensions?.code);
  } catch {
    return [`not JSON: ${body.slice(0, 80)}`];
  }
}

/** Nothing internal in an answer: no original error, no stack, no source location. */
export const internals = /originalError|"stack"|stacktrace|\bat .*\.(ts|js):\d+/;
