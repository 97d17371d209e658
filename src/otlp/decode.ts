import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/**
 * OTLP trace export requests, protobuf or JSON, decoded into one plain shape.
 * The protobuf schema is OpenTelemetry's own (src/otlp/proto, unmodified);
 * the JSON encoding is the same messages in lowerCamelCase with hex ids.
 */

/** An attribute value: scalars, arrays and key-value lists; int64 as a number when exact, else a string; bytes as base64. */
export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | AttributeValue[]
  | { [key: string]: AttributeValue };

export type Attributes = ReadonlyMap<string, AttributeValue>;

export interface SpanEvent {
  name: string;
  timeUnixNano: bigint;
  attributes: Attributes;
}

/** One span as received, before any mapping. `problem` names why it cannot be used, if it cannot. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  startUnixNano: bigint;
  endUnixNano: bigint;
  attributes: Attributes;
  resource: Attributes;
  status: 'unset' | 'ok' | 'error';
  events: SpanEvent[];
  problem: string | null;
}

/** The request could not be read as an export request at all: answered 400. */
export class MalformedExportError extends Error {
  readonly code = 'OTLP_MALFORMED';
}

const PROTO_DIR = fileURLToPath(new URL('./proto/', import.meta.url));

function loadRoot(): protobuf.Root {
  const root = new protobuf.Root();
  // Imports name files from the proto root (opentelemetry/proto/...): resolve them in our copy.
  root.resolvePath = (_origin, target) => `${PROTO_DIR}${target}`;
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  // google.rpc.Status and ErrorInfo (google/rpc/*.proto): the fields we send, by their numbers.
  root.add(
    protobuf.Root.fromJSON({
      nested: {
        google: {
          nested: {
            protobuf: {
              nested: {
                Any: { fields: { type_url: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
              },
            },
            rpc: {
              nested: {
                Status: {
                  fields: {
                    code: { type: 'int32', id: 1 },
                    message: { type: 'string', id: 2 },
                    details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
                  },
                },
                ErrorInfo: {
                  fields: { reason: { type: 'string', id: 1 }, domain: { type: 'string', id: 2 } },
                },
              },
            },
          },
        },
      },
    }).nested?.google as protobuf.Namespace,
  );
  root.resolveAll();
  return root;
}

let cached: protobuf.Root | null = null;
/** The message types, loaded once on first use. */
export function messages() {
  cached ??= loadRoot();
  return {
    request: cached.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    response: cached.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
    status: cached.lookupType('google.rpc.Status'),
    errorInfo: cached.lookupType('google.rpc.ErrorInfo'),
  };
}

type Plain = Record<string, unknown>;

const isPlain = (value: unknown): value is Plain =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);

function list(value: unknown, what: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new MalformedExportError(`${what} must be a list`);
  return value;
}

function object(value: unknown, what: string): Plain {
  if (value === undefined || value === null) return {};
  if (!isPlain(value)) throw new MalformedExportError(`${what} must be an object`);
  return value;
}

/** A fixed64 / int64 as protobufjs (string) or JSON (string or number) gives it. */
function unixNano(value: unknown, what: string): bigint {
  if (value === undefined || value === null || value === '') return 0n;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'string' && /^\d{1,20}$/.test(value)) return BigInt(value);
  throw new MalformedExportError(`${what} must be a non-negative integer of nanoseconds`);
}

/** Ids: bytes in protobuf, hex in JSON. Lower-case hex, or null when absent (empty). */
function id(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (value instanceof Uint8Array) return value.length === 0 ? null : Buffer.from(value).toString('hex');
  if (typeof value === 'string') return value === '' ? null : value.toLowerCase();
  return 'invalid';
}

function intValue(value: unknown): AttributeValue {
  const text = String(value);
  if (!/^-?\d+$/.test(text)) throw new MalformedExportError('an intValue must be an integer');
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : text;
}

function anyValue(value: unknown, depth: number): AttributeValue {
  if (depth > 16) throw new MalformedExportError('attribute values nest deeper than 16');
  const v = object(value, 'an attribute value');
  if ('stringValue' in v && v.stringValue != null) {
    if (typeof v.stringValue !== 'string') throw new MalformedExportError('a stringValue must be a string');
    return v.stringValue;
  }
  if ('boolValue' in v && v.boolValue != null) {
    if (typeof v.boolValue !== 'boolean') throw new MalformedExportError('a boolValue must be a boolean');
    return v.boolValue;
  }
  if ('intValue' in v && v.intValue != null) return intValue(v.intValue);
  if ('doubleValue' in v && v.doubleValue != null) {
    const n = Number(v.doubleValue);
    if (typeof v.doubleValue === 'boolean' || Number.isNaN(n))
      throw new MalformedExportError('a doubleValue must be a number');
    return n;
  }
  if ('arrayValue' in v && v.arrayValue != null) {
    return list(object(v.arrayValue, 'an arrayValue').values, 'arrayValue.values').map((item) =>
      anyValue(item, depth + 1),
    );
  }
  if ('kvlistValue' in v && v.kvlistValue != null) {
    const entries = keyValues(object(v.kvlistValue, 'a kvlistValue').values, depth + 1);
    return Object.fromEntries(entries);
  }
  if ('bytesValue' in v && v.bytesValue != null) {
    if (v.bytesValue instanceof Uint8Array) return Buffer.from(v.bytesValue).toString('base64');
    if (typeof v.bytesValue === 'string') return v.bytesValue;
    throw new MalformedExportError('a bytesValue must be bytes');
  }
  return null;
}

function keyValues(value: unknown, depth: number): Array<[string, AttributeValue]> {
  return list(value, 'attributes').map((entry) => {
    const kv = object(entry, 'an attribute');
    if (typeof kv.key !== 'string') throw new MalformedExportError('an attribute needs a string key');
    return [kv.key, anyValue(kv.value, depth)];
  });
}

function attributes(value: unknown): Attributes {
  return new Map(keyValues(value, 0));
}

/** Status codes as protobuf numbers, or, leniently, their names in JSON. */
function statusCode(value: unknown): ReceivedSpan['status'] {
  const status = object(value, 'a span status');
  const code = status.code;
  if (code === undefined || code === null || code === 0 || code === 'STATUS_CODE_UNSET') return 'unset';
  if (code === 1 || code === 'STATUS_CODE_OK') return 'ok';
  if (code === 2 || code === 'STATUS_CODE_ERROR') return 'error';
  throw new MalformedExportError('a span status code must be 0, 1 or 2');
}

function span(value: unknown, resource: Attributes): ReceivedSpan {
  const s = object(value, 'a span');
  const traceId = id(s.traceId);
  const spanId = id(s.spanId);
  const parentSpanId = id(s.parentSpanId);
  const name = typeof s.name === 'string' ? s.name : '';
  const startUnixNano = unixNano(s.startTimeUnixNano, 'startTimeUnixNano');
  const endUnixNano = unixNano(s.endTimeUnixNano, 'endTimeUnixNano');
  let problem: string | null = null;
  if (traceId === null || !/^[0-9a-f]{32}$/.test(traceId) || /^0+$/.test(traceId)) {
    problem = 'traceId must be 16 bytes, not all zero';
  } else if (spanId === null || !/^[0-9a-f]{16}$/.test(spanId) || /^0+$/.test(spanId)) {
    problem = 'spanId must be 8 bytes, not all zero';
  } else if (parentSpanId !== null && !/^[0-9a-f]{16}$/.test(parentSpanId)) {
    problem = 'parentSpanId must be 8 bytes';
  } else if (startUnixNano === 0n || endUnixNano < startUnixNano) {
    problem = 'a span needs a start time and an end time not before it';
  }
  return {
    traceId: traceId ?? '',
    spanId: spanId ?? '',
    parentSpanId: parentSpanId === null || /^0+$/.test(parentSpanId) ? null : parentSpanId,
    name,
    startUnixNano,
    endUnixNano,
    attributes: attributes(s.attributes),
    resource,
    status: statusCode(s.status),
    events: list(s.events, 'events').map((item) => {
      const event = object(item, 'an event');
      return {
        name: typeof event.name === 'string' ? event.name : '',
        timeUnixNano: unixNano(event.timeUnixNano, 'timeUnixNano'),
        attributes: attributes(event.attributes),
      };
    }),
    problem,
  };
}

/** Every span of an export request, each with its resource's attributes. */
function spansOf(request: unknown): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of list(object(request, 'the request').resourceSpans, 'resourceSpans')) {
    const resourceSpans = object(rs, 'a resourceSpans entry');
    const resource = attributes(object(resourceSpans.resource, 'a resource').attributes);
    for (const ss of list(resourceSpans.scopeSpans, 'scopeSpans')) {
      for (const item of list(object(ss, 'a scopeSpans entry').spans, 'spans'))
        spans.push(span(item, resource));
    }
  }
  return spans;
}

/** A protobuf ExportTraceServiceRequest. */
export function decodeProtobuf(body: Uint8Array): ReceivedSpan[] {
  const { request } = messages();
  let decoded: protobuf.Message;
  try {
    decoded = request.decode(body);
  } catch {
    throw new MalformedExportError('the body is not a protobuf ExportTraceServiceRequest');
  }
  return spansOf(request.toObject(decoded, { longs: String, enums: Number, arrays: true }));
}

/** A JSON ExportTraceServiceRequest (OTLP/JSON: lowerCamelCase, hex ids, int64 as strings or numbers). */
export function decodeJson(body: Uint8Array): ReceivedSpan[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw new MalformedExportError('the body is not JSON');
  }
  return spansOf(parsed);
}
