import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { actorForKey, forgetKey, keyHashOf, rememberedActor } from '../db/api-keys.ts';
import type { DatabaseHandle } from '../db/connection.ts';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { KeyNotActiveError } from '../domain/errors.ts';
import { OtlpLimits } from '../domain/limits.ts';
import { can } from '../domain/permissions.ts';
import { type IngestResult, ingestSpans } from '../ledger/ingest-spans.ts';
import type { RunEvents } from '../ledger/run-events.ts';
import type { Logger } from '../log.ts';
import { decodeJson, decodeProtobuf, ExportTooLargeError, MalformedExportError, messages } from './decode.ts';
import { mapSpans } from './mapping.ts';

/**
 * `POST /v1/traces` (OTLP_TRACES_PATH): OTLP over HTTP (protobuf or JSON, gzip or not), answered
 * as the OTLP specification says: 200 with an ExportTraceServiceResponse
 * (partial success names the rejected spans' count and reasons), 400 with a
 * google.rpc.Status for a request that cannot be read, 401 / 403, 413, 415,
 * and 503 with Retry-After while the database is away (exporters retry those).
 * Every answer is in the request's encoding.
 */
/** As for GraphQL's 503: exporters honour Retry-After. */
const RETRY_AFTER_SECONDS = 5;
/** At most this much of the rejected spans' reasons goes into error_message. */
const MAX_ERROR_MESSAGE = 1_000;

type Encoding = 'protobuf' | 'json';

/** google.rpc.Code values used in a Status body. */
const RpcCode = {
  InvalidArgument: 3,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  Unauthenticated: 16,
} as const;

/** A refusal: HTTP status, google.rpc code, and our stable code (in the Status's ErrorInfo.reason). */
class Refusal {
  constructor(
    readonly httpStatus: number,
    readonly rpcCode: number,
    readonly code: string,
    readonly message: string,
    readonly headers: Record<string, string> = {},
  ) {}
}

/** Bytes as a fetch body (an ArrayBuffer-backed copy). */
const bytes = (body: Uint8Array | string): BodyInit =>
  typeof body === 'string' ? body : new Uint8Array(body);

function contentTypeHeader(encoding: Encoding): string {
  return encoding === 'protobuf' ? 'application/x-protobuf' : 'application/json';
}

/** A google.rpc.Status with one google.rpc.ErrorInfo detail whose reason is the stable code. */
function statusResponse(refusal: Refusal, encoding: Encoding): Response {
  const headers = { 'content-type': contentTypeHeader(encoding), ...refusal.headers };
  const { status, errorInfo } = messages();
  const info = { reason: refusal.code, domain: 'runledger' };
  const typeUrl = 'type.googleapis.com/google.rpc.ErrorInfo';
  const body =
    encoding === 'protobuf'
      ? status
          .encode(
            status.create({
              code: refusal.rpcCode,
              message: refusal.message,
              details: [{ type_url: typeUrl, value: errorInfo.encode(errorInfo.create(info)).finish() }],
            }),
          )
          .finish()
      : JSON.stringify({
          code: refusal.rpcCode,
          message: refusal.message,
          details: [{ '@type': typeUrl, ...info }],
        });
  return new Response(bytes(body), { status: refusal.httpStatus, headers });
}

function exportResponse(result: IngestResult, encoding: Encoding): Response {
  const rejected = result.rejected.length;
  let errorMessage = '';
  if (rejected > 0) {
    // Reasons by code, with a count each and the first message as the example.
    const byCode = new Map<string, { count: number; message: string }>();
    for (const r of result.rejected) {
      const entry = byCode.get(r.code) ?? { count: 0, message: r.message };
      entry.count += 1;
      byCode.set(r.code, entry);
    }
    errorMessage = [...byCode.values()]
      .map((e) => `${e.count} × ${e.message}`)
      .join('; ')
      .slice(0, MAX_ERROR_MESSAGE);
  }
  const partialSuccess = rejected > 0 ? { rejectedSpans: rejected, errorMessage } : undefined;
  const { response } = messages();
  const body =
    encoding === 'protobuf'
      ? response.encode(response.create(partialSuccess ? { partialSuccess } : {})).finish()
      : JSON.stringify(
          partialSuccess ? { partialSuccess: { rejectedSpans: String(rejected), errorMessage } } : {},
        );
  return new Response(bytes(body), { status: 200, headers: { 'content-type': contentTypeHeader(encoding) } });
}

function encodingOf(request: Request): Encoding | null {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json') return 'json';
  return null;
}

/**
 * The key, as GraphQL takes it (`Authorization: Bearer <key>`), also as an
 * exporter may pass it on from OTEL_EXPORTER_OTLP_HEADERS without decoding
 * it (`Bearer%20<key>`).
 */
function presentedKey(request: Request): string | null {
  const header = request.headers.get('authorization') ?? '';
  const match = /^Bearer(?:\s+|%20)(\S+?)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

const tooLarge = (what: string) =>
  new Refusal(413, RpcCode.ResourceExhausted, 'REQUEST_TOO_LARGE', `${what}; send smaller batches`);

/** The body, counted as it arrives: refused past the limit without reading the rest. */
async function readBody(request: Request): Promise<Uint8Array> {
  const limit = OtlpLimits.maxBodyBytes;
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > limit) {
    throw tooLarge(`the body is over ${limit} bytes`);
  }
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(`the body is over ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

const inflate = promisify(gunzip);

/** A gzip body, inflated no further than the limit: a gzip bomb costs at most that much. */
async function inflated(request: Request, body: Uint8Array): Promise<Uint8Array> {
  const encoding = (request.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return body;
  if (encoding !== 'gzip') {
    throw new Refusal(
      415,
      RpcCode.Unimplemented,
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Encoding ${encoding.slice(0, 40)} is not supported: send gzip or none`,
    );
  }
  try {
    return await inflate(body, { maxOutputLength: OtlpLimits.maxInflatedBytes });
  } catch (error) {
    if (error instanceof RangeError || (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw tooLarge(`the body inflates past ${OtlpLimits.maxInflatedBytes} bytes`);
    }
    throw new Refusal(400, RpcCode.InvalidArgument, 'OTLP_MALFORMED', 'the body is not valid gzip');
  }
}

async function handle(
  database: DatabaseHandle,
  request: Request,
  encoding: Encoding,
  events: RunEvents | undefined,
): Promise<Response> {
  const key = presentedKey(request);
  // A key read by an earlier request is known: ingestion checks it is still active before it writes.
  const keyHash = key === null ? null : keyHashOf(key);
  const remembered = keyHash === null ? null : rememberedActor(database.db, keyHash);
  const actor = remembered ?? (key === null ? null : await actorForKey(database.db, key));
  if (!actor) throw unauthenticated();
  if (!can(actor, 'record')) {
    throw new Refusal(403, RpcCode.PermissionDenied, 'FORBIDDEN', 'this needs the record permission');
  }
  const body = await inflated(request, await readBody(request));
  let received: ReturnType<typeof decodeJson>;
  try {
    received = encoding === 'protobuf' ? decodeProtobuf(body) : decodeJson(body);
  } catch (error) {
    if (error instanceof MalformedExportError) {
      throw new Refusal(400, RpcCode.InvalidArgument, error.code, error.message);
    }
    // Counted while the body is scanned, before decoding builds anything: a request of
    // millions of tiny spans or values is refused for the cost of reading it once.
    if (error instanceof ExportTooLargeError) {
      throw new Refusal(413, RpcCode.ResourceExhausted, error.code, `${error.message}; send smaller batches`);
    }
    throw error;
  }
  let result: IngestResult;
  try {
    result = await ingestSpans(
      { db: database.db, actor, events, rememberedKey: remembered ? keyHash : null },
      mapSpans(received),
    );
  } catch (error) {
    // Revoked since it was remembered: refused as an unknown key is, and read again next time.
    if (!(error instanceof KeyNotActiveError)) throw error;
    if (keyHash !== null) forgetKey(database.db, keyHash);
    throw unauthenticated();
  }
  return exportResponse(result, encoding);
}

function unauthenticated(): Refusal {
  return new Refusal(
    401,
    RpcCode.Unauthenticated,
    'UNAUTHENTICATED',
    'send an API key: Authorization: Bearer <key>',
    {
      'www-authenticate': 'Bearer',
    },
  );
}

/** The handler of `POST /v1/traces` on this database. */
export function createOtlpHandler(
  database: DatabaseHandle,
  log?: Logger,
  /** Where ingested steps are announced to live streams. */
  events?: RunEvents,
): (request: Request) => Promise<Response> {
  return async (request) => {
    const encoding = encodingOf(request);
    try {
      if (request.method !== 'POST') {
        throw new Refusal(405, RpcCode.Unimplemented, 'METHOD_NOT_ALLOWED', 'send traces with POST', {
          allow: 'POST',
        });
      }
      if (encoding === null) {
        throw new Refusal(
          415,
          RpcCode.Unimplemented,
          'UNSUPPORTED_MEDIA_TYPE',
          'send application/x-protobuf or application/json',
        );
      }
      return await handle(database, request, encoding, events);
    } catch (error) {
      if (error instanceof Refusal) return statusResponse(error, encoding ?? 'json');
      if (isDatabaseUnavailable(error)) {
        return statusResponse(
          new Refusal(
            503,
            RpcCode.Unavailable,
            'DATABASE_UNAVAILABLE',
            'the database is unavailable; retry later',
            {
              'retry-after': String(RETRY_AFTER_SECONDS),
            },
          ),
          encoding ?? 'json',
        );
      }
      log?.error(error);
      return statusResponse(
        new Refusal(500, RpcCode.Internal, 'INTERNAL_SERVER_ERROR', 'Unexpected error.'),
        encoding ?? 'json',
      );
    }
  };
}
