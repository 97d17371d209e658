import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { RequestLimits } from './domain/limits.ts';
import { ENVIRONMENT, type EnvironmentName, environmentValue } from './environment.ts';
import { ErrorCode } from './graphql/errors.ts';

/** Limits on the HTTP connection itself, before GraphQL sees a request. */
export interface TransportLimits {
  /** Time to receive the request line and headers. */
  headersTimeoutMs: number;
  /** Time to receive the whole request, headers and body (not the time to answer it). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /**
   * Connections open at once. One more takes the place of the oldest connection not being answered (one
   * still sending its first headers, else one idle between requests); when every one is being answered, it
   * is closed as soon as it is accepted.
   */
  maxConnections: number;
  /** Bytes of request line and headers; more is refused with 431. */
  maxHeaderBytes: number;
  /** Header lines read from one request; those beyond are ignored. */
  maxHeaders: number;
  /**
   * After an answer that closes the connection before the request was read whole, what the client still sends
   * is read and dropped for at most this long, so that the answer reaches it (see lingeringClose).
   */
  lingerMs: number;
}

/** Each limit: the environment variable that sets it and its default. */
export const TRANSPORT_SETTINGS: {
  readonly [K in keyof TransportLimits]: { env: EnvironmentName; value: number };
} = {
  headersTimeoutMs: { env: 'HTTP_HEADERS_TIMEOUT_MS', value: ENVIRONMENT.HTTP_HEADERS_TIMEOUT_MS.default },
  requestTimeoutMs: { env: 'HTTP_REQUEST_TIMEOUT_MS', value: ENVIRONMENT.HTTP_REQUEST_TIMEOUT_MS.default },
  keepAliveTimeoutMs: {
    env: 'HTTP_KEEP_ALIVE_TIMEOUT_MS',
    value: ENVIRONMENT.HTTP_KEEP_ALIVE_TIMEOUT_MS.default,
  },
  maxConnections: { env: 'HTTP_MAX_CONNECTIONS', value: ENVIRONMENT.HTTP_MAX_CONNECTIONS.default },
  maxHeaderBytes: { env: 'HTTP_MAX_HEADER_BYTES', value: ENVIRONMENT.HTTP_MAX_HEADER_BYTES.default },
  maxHeaders: { env: 'HTTP_MAX_HEADERS', value: ENVIRONMENT.HTTP_MAX_HEADERS.default },
  lingerMs: { env: 'HTTP_LINGER_MS', value: ENVIRONMENT.HTTP_LINGER_MS.default },
};

const names = Object.keys(TRANSPORT_SETTINGS) as Array<keyof TransportLimits>;

export const defaultTransportLimits: TransportLimits = Object.fromEntries(
  names.map((name) => [name, TRANSPORT_SETTINGS[name].value]),
) as Record<keyof TransportLimits, number>;

/** The limits from the environment; an unset variable keeps its default, a bad one stops the start. */
export function transportLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): TransportLimits {
  const limits = { ...defaultTransportLimits };
  for (const name of names) {
    const { env: variable } = TRANSPORT_SETTINGS[name];
    const text = environmentValue(variable, env);
    if (!text) continue;
    const value = Number(text);
    // Zero would mean "no limit" to Node: every limit here stays a limit.
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new Error(`${variable} must be a whole number of at least 1, not "${text}"`);
    }
    limits[name] = value;
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new Error(
      `${TRANSPORT_SETTINGS.headersTimeoutMs.env} (${limits.headersTimeoutMs}) must not exceed ${TRANSPORT_SETTINGS.requestTimeoutMs.env} (${limits.requestTimeoutMs})`,
    );
  }
  return limits;
}

/** Node's refusals of a malformed or slow client, as JSON with a stable code. */
function refusalFor(errorCode: string | undefined): {
  status: number;
  reason: string;
  code: string;
  message: string;
} {
  switch (errorCode) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        reason: 'Request Timeout',
        code: ErrorCode.RequestTimeout,
        message: 'the request did not arrive in time',
      };
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        reason: 'Request Header Fields Too Large',
        code: ErrorCode.HeadersTooLarge,
        message: 'the request headers are too large',
      };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return {
        status: 413,
        reason: 'Payload Too Large',
        code: ErrorCode.RequestTooLarge,
        message: 'the chunk extensions are too large',
      };
    default:
      return {
        status: 400,
        reason: 'Bad Request',
        code: ErrorCode.BadRequest,
        message: 'malformed HTTP request',
      };
  }
}

/**
 * Ends the connection once the answer is written, then reads and drops what the client still sends until it
 * closes its side or `lingerMs` passes. Closing a socket with unread bytes sends a reset, and a reset can
 * discard the answer at the client before it is read: a client still sending a refused 40 MB body would see
 * the connection cut, not its 413.
 */
function lingeringClose(socket: Socket, lingerMs: number, request: IncomingMessage | undefined): void {
  if (socket.destroyed) return;
  if (socket.writable) socket.end();
  // As Node's own destroySoon: never before the answer is written.
  const close = () =>
    socket.writableFinished ? socket.destroy() : socket.once('finish', () => socket.destroy());
  if (socket.readableEnded) return void close();
  const timer = setTimeout(close, lingerMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // The client's FIN ends the wait.
  socket.once('end', close);
  if (request && !request.complete) dropUnreadBody(request);
  socket.resume();
}

/**
 * Node drops a body nobody read with IncomingMessage's `_dump` once the answer is written. A body whose reader
 * stopped part way (the 413 of a body too large) is not dropped: the parser pauses the socket on it and the
 * connection reads nothing more. Dropping it the same way keeps the lingering connection reading.
 */
function dropUnreadBody(request: IncomingMessage): void {
  const dump = (request as IncomingMessage & { _dump?: () => void })._dump;
  if (typeof dump === 'function') dump.call(request);
}

/** Where GraphQL requests are posted (graphql-yoga's endpoint): the bodies read here first. */
export const GRAPHQL_PATH = '/graphql';

const DECLARED_LENGTH = /^\d+$/;

/**
 * Whether a request's `Authorization` header names a key an earlier request read (and the service
 * remembers): only such a request's body is read before its key is checked.
 */
export type KnownKey = (authorization: string | undefined) => boolean;

/**
 * A GraphQL request posted as JSON with a declared length within the body limit, with a key an
 * earlier request read, is read and parsed here, before the GraphQL server sees it, and handed on
 * as `request.body` (which the fetch adapter under graphql-yoga takes as the parsed body): otherwise
 * each request's body went through a web stream, a TransformStream that counts its bytes, a stream
 * pipeline and a second Request, about a tenth of a recording request's CPU. Nothing else changes: a
 * request without a known key (the GraphQL server reads its key before its body: without a valid
 * one, its body is never read), a body of no declared length, over the limit or compressed, and
 * every other request go on untouched (the GraphQL server counts and refuses them as before), and a
 * body that is not a JSON object is handed on as its bytes, for the GraphQL server's own answer to it.
 */
function readingJsonBodies(listener: RequestListener, knownKey: KnownKey): RequestListener {
  return (request, response) => {
    const length = request.headers['content-length'];
    if (
      request.method !== 'POST' ||
      length === undefined ||
      !DECLARED_LENGTH.test(length) ||
      Number(length) > RequestLimits.maxBodyBytes ||
      !request.headers['content-type']?.includes('application/json') ||
      // A compressed body is the GraphQL server's to decompress.
      (request.headers['content-encoding'] ?? 'identity') !== 'identity' ||
      (request.url !== GRAPHQL_PATH && !request.url?.startsWith(`${GRAPHQL_PATH}?`)) ||
      !knownKey(request.headers.authorization)
    ) {
      listener(request, response);
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A client that goes away part way gets no answer: its connection is gone (and its error is no crash).
    request.once('error', () => {});
    request.once('end', () => {
      const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      (request as IncomingMessage & { body?: unknown }).body = parsedObject(bytes) ?? unparsedBody(bytes);
      listener(request, response);
    });
  };
}

/** The body as a JSON object with at least one field (what a GraphQL request is), else undefined. */
function parsedObject(bytes: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    return Object.keys(value).length > 0 ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The bytes as a body the fetch adapter reads as a stream (an async iterable with a field of its own):
 * whatever they hold, the GraphQL server answers them as it answers any body.
 */
function unparsedBody(bytes: Buffer): { bytes: number; [Symbol.asyncIterator](): AsyncGenerator<Buffer> } {
  return {
    bytes: bytes.length,
    async *[Symbol.asyncIterator]() {
      yield bytes;
    },
  };
}

/**
 * The HTTP server for the GraphQL handler, with every transport limit applied.
 * Slow and malformed clients are answered as Node answers them (408, 431, 400),
 * with a JSON body and a code, and their connection is closed.
 */
export function createHttpServer(
  listener: RequestListener,
  limits: TransportLimits = defaultTransportLimits,
  /** Requests whose JSON body the transport reads first (readingJsonBodies); default: none. */
  knownKey: KnownKey = () => false,
): Server {
  // Node checks the two timeouts every 30 s by default: check often enough to keep them.
  const connectionsCheckingInterval = Math.max(
    50,
    Math.min(1_000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
  );
  const jsonListener = readingJsonBodies(listener, knownKey);
  // The answer under way on each connection: a refusal is written only when none has started.
  const answering = new WeakMap<Duplex, ServerResponse>();
  // The last request on each connection, whose unread body a lingering close drops.
  const lastRequest = new WeakMap<Duplex, IncomingMessage>();
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      connectionsCheckingInterval,
    },
    (request, response) => {
      const socket = request.socket;
      answering.set(socket, response);
      lastRequest.set(socket, request);
      response.once('finish', () => {
        if (answering.get(socket) === response) answering.delete(socket);
      });
      jsonListener(request, response);
    },
  );
  // Open connections, oldest first.
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    // Node closes a connection after its last answer with destroySoon: make that close a lingering one.
    socket.destroySoon = () => lingeringClose(socket, limits.lingerMs, lastRequest.get(socket));
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    if (open.size <= limits.maxConnections) return;
    // Full: a connection that is not being answered gives way, so that half-open connections cannot lock
    // everyone out: first the oldest that never finished a request's headers, then the oldest idle one
    // between requests. When every connection is being answered, the new one is closed unanswered.
    const idle = (candidate: Socket) => candidate !== socket && !answering.has(candidate);
    let victim: Socket | undefined;
    for (const candidate of open) {
      if (!idle(candidate)) continue;
      if (!lastRequest.has(candidate)) {
        victim = candidate;
        break;
      }
      victim ??= candidate;
    }
    const closing = victim ?? socket;
    open.delete(closing);
    closing.destroy();
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxHeadersCount = limits.maxHeaders;
  // Connections refused by the parser that linger: the parser fails again on each read, which is dropped.
  const refused = new WeakSet<Duplex>();
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (refused.has(socket)) return;
    const started = answering.get(socket)?.headersSent ?? false;
    if (error.code !== 'ECONNRESET' && socket.writable && !started) {
      const refusal = refusalFor(error.code);
      const body = JSON.stringify({
        errors: [{ message: refusal.message, extensions: { code: refusal.code } }],
      });
      socket.write(
        `HTTP/1.1 ${refusal.status} ${refusal.reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      if (socket instanceof Socket) {
        refused.add(socket);
        lingeringClose(socket, limits.lingerMs, undefined);
        return;
      }
    }
    socket.destroy();
  });
  return server;
}
