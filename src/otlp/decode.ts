import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { OtlpLimits } from '../domain/limits.ts';

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
  /** The name of the instrumentation scope that recorded it (`@traceloop/instrumentation-mcp`); null when unnamed. */
  scope: string | null;
  status: 'unset' | 'ok' | 'error';
  /** The status's description, as sent (an error's message); null when empty. */
  statusMessage: string | null;
  events: SpanEvent[];
  problem: string | null;
}

/** The request could not be read as an export request at all: answered 400. */
export class MalformedExportError extends Error {
  readonly code = 'OTLP_MALFORMED';
}

/** What a request may hold before it is decoded: counted as it is read, refused at the first one over. */
export interface ExportLimits {
  readonly maxSpans: number;
  readonly maxValues: number;
}

/** The request holds more than a limit allows: answered 413, and nothing of it is decoded further. */
export class ExportTooLargeError extends Error {
  constructor(
    readonly code: 'OTLP_TOO_MANY_SPANS' | 'OTLP_TOO_MANY_VALUES',
    message: string,
  ) {
    super(message);
  }
}

/** Spans and values seen so far; throws at the first one past a limit. */
class Budget {
  #spans = 0;
  #values = 0;
  constructor(readonly limits: ExportLimits) {}

  value(): void {
    this.#values += 1;
    if (this.#values > this.limits.maxValues) {
      throw new ExportTooLargeError(
        'OTLP_TOO_MANY_VALUES',
        `the request holds over ${this.limits.maxValues} values`,
      );
    }
  }

  span(): void {
    this.#spans += 1;
    if (this.#spans > this.limits.maxSpans) {
      throw new ExportTooLargeError(
        'OTLP_TOO_MANY_SPANS',
        `the request holds over ${this.limits.maxSpans} spans`,
      );
    }
    this.value();
  }
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

/**
 * How the pre-scan reads one message type: for each field number, whether it
 * holds a message (read inside) or a repeated scalar (each element counted).
 * Anything else (a scalar, a string, an unknown field) is skipped unread, as
 * the decoder skips or overwrites it without keeping more.
 */
interface MessagePlan {
  span: boolean;
  fields: Map<number, FieldPlan>;
}

type FieldPlan =
  | { kind: 'message'; plan: MessagePlan }
  /** `wireType` of one element as sent unpacked; `packedWidth` of one element packed: 0 a varint, else bytes. */
  | { kind: 'repeated'; wireType: number; packedWidth: number | null };

const SPAN_TYPE = 'opentelemetry.proto.trace.v1.Span';
const PACKED_WIDTH: Record<number, number> = { 0: 0, 1: 8, 5: 4 };

function planOf(type: protobuf.Type, plans: Map<protobuf.Type, MessagePlan>): MessagePlan {
  const known = plans.get(type);
  if (known) return known;
  // Registered before its fields are: the schema is recursive (AnyValue holds AnyValues).
  const plan: MessagePlan = { span: type.fullName.replace(/^\./, '') === SPAN_TYPE, fields: new Map() };
  plans.set(type, plan);
  for (const field of type.fieldsArray) {
    field.resolve();
    const resolved = field.resolvedType;
    if (resolved instanceof protobuf.Type) {
      // Proto3 (OTLP) has no groups: a group field would be decoded without being counted.
      if (field.delimited) throw new Error(`${type.fullName}.${field.name}: groups are not pre-scanned`);
      plan.fields.set(
        field.id,
        field.map
          ? { kind: 'repeated', wireType: 2, packedWidth: null }
          : { kind: 'message', plan: planOf(resolved, plans) },
      );
    } else if (field.repeated || field.map) {
      // Enums travel as varints; every other scalar as protobufjs's table of wire types says.
      const scalar = resolved instanceof protobuf.Enum ? 'int32' : field.type;
      const wireType = field.map ? 2 : ((protobuf.types.basic as Record<string, number>)[scalar] ?? 2);
      const packable = !field.map && scalar in protobuf.types.packed;
      plan.fields.set(field.id, {
        kind: 'repeated',
        wireType,
        packedWidth: packable ? (PACKED_WIDTH[wireType] ?? null) : null,
      });
    }
  }
  return plan;
}

let requestPlan: MessagePlan | null = null;

/**
 * Walks the wire format as protobufjs's decoder would (the same fields, the
 * same wire-type checks, the same nesting bound), counting every message and
 * every element of a repeated field without building any of them. The reader's
 * `len` is the end of the message being read, as in the decoder: a read past it throws.
 */
function scanMessage(reader: protobuf.Reader, plan: MessagePlan, depth: number, budget: Budget): void {
  if (depth > protobuf.Reader.recursionLimit) throw new Error('max depth exceeded');
  while (reader.pos < reader.len) {
    const tag = reader.tag();
    const fieldNumber = tag >>> 3;
    const wireType = tag & 7;
    const field = plan.fields.get(fieldNumber);
    if (field?.kind === 'message' && wireType === 2) {
      if (field.plan.span) budget.span();
      else budget.value();
      const outer = enter(reader);
      scanMessage(reader, field.plan, depth + 1, budget);
      reader.len = outer;
    } else if (field?.kind === 'repeated' && wireType === 2 && field.packedWidth !== null) {
      const outer = enter(reader);
      while (reader.pos < reader.len) {
        budget.value();
        if (field.packedWidth === 0) reader.skip();
        else reader.skip(field.packedWidth);
      }
      reader.len = outer;
    } else {
      if (field?.kind === 'repeated' && wireType === field.wireType) budget.value();
      reader.skipType(wireType, depth, fieldNumber);
    }
  }
}

/** Narrows the reader to the next length-delimited field; gives back the end to restore after it. */
function enter(reader: protobuf.Reader): number {
  const end = reader.size() + reader.pos;
  if (end > reader.len) throw new RangeError('index out of range');
  const outer = reader.len;
  reader.len = end;
  return outer;
}

/** Counts a protobuf request's spans and values; throws at the first one over a limit. */
function prescanProtobuf(body: Uint8Array, limits: ExportLimits): void {
  requestPlan ??= planOf(messages().request, new Map());
  const budget = new Budget(limits);
  try {
    scanMessage(protobuf.Reader.create(body), requestPlan, 0, budget);
  } catch (error) {
    if (error instanceof ExportTooLargeError) throw error;
    throw new MalformedExportError('the body is not a protobuf ExportTraceServiceRequest');
  }
}

/**
 * What a JSON container is in the request's tree, as far as counting spans
 * needs: spans are the objects of `resourceSpans[].scopeSpans[].spans[]`.
 */
const Role = {
  other: 0,
  root: 1,
  resourceSpansList: 2,
  resourceSpans: 3,
  scopeSpansList: 4,
  scopeSpans: 5,
  spanList: 6,
  span: 7,
} as const;
type Role = (typeof Role)[keyof typeof Role];

/** The list a key opens in an object of this role. */
const LIST_KEYS: ReadonlyMap<Role, { key: string; list: Role }> = new Map([
  [Role.root, { key: 'resourceSpans', list: Role.resourceSpansList }],
  [Role.resourceSpans, { key: 'scopeSpans', list: Role.scopeSpansList }],
  [Role.scopeSpans, { key: 'spans', list: Role.spanList }],
]);
/** The role of an object inside a list of this role. */
const ITEMS: ReadonlyMap<Role, Role> = new Map([
  [Role.resourceSpansList, Role.resourceSpans],
  [Role.scopeSpansList, Role.scopeSpans],
  [Role.spanList, Role.span],
]);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Bytes that end a number or a literal (true, false, null). */
const DELIMITERS = new Set([0x20, 0x09, 0x0a, 0x0d, 0x2c, 0x3a, 0x5b, 0x5d, 0x7b, 0x7d, QUOTE]);

/** The index of the quote that closes the string opening at `start`. */
function stringEnd(bytes: Uint8Array, start: number): number {
  let at = start + 1;
  for (;;) {
    at = bytes.indexOf(QUOTE, at);
    if (at < 0) throw new MalformedExportError('the body is not JSON');
    let slashes = 0;
    while (bytes[at - 1 - slashes] === BACKSLASH) slashes += 1;
    if (slashes % 2 === 0) return at;
    at += 1;
  }
}

/** A key as JSON.parse reads it, escapes and all. */
function keyText(bytes: Uint8Array, start: number, end: number): string | null {
  const raw = bytes.subarray(start, end + 1);
  if (!raw.includes(BACKSLASH)) return Buffer.from(raw).toString('latin1').slice(1, -1);
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw)) as string;
  } catch {
    return null;
  }
}

/**
 * One pass over the JSON text, outside strings, counting every value
 * (objects, arrays, strings, numbers, literals: JSON.parse keeps each) and the
 * span objects; throws at the first one over a limit, before anything is parsed.
 */
function prescanJson(bytes: Uint8Array, limits: ExportLimits): void {
  const budget = new Budget(limits);
  /** The open containers, innermost last: their roles, and whether each is an object. */
  const roles: Role[] = [];
  const objects: boolean[] = [];
  let expectKey = false;
  /** In an object, the role a list would take as the value of the last key. */
  let keyedList: Role = Role.other;
  for (let at = 0; at < bytes.length; at += 1) {
    const byte = bytes[at];
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d || byte === 0x3a) continue;
    const depth = roles.length;
    const parent = depth === 0 ? null : (roles[depth - 1] as Role);
    if (byte === 0x7b || byte === 0x5b) {
      const isObject = byte === 0x7b;
      let role: Role = Role.other;
      if (parent === null) role = isObject ? Role.root : Role.other;
      else if (objects[depth - 1]) role = isObject ? Role.other : keyedList;
      else role = isObject ? (ITEMS.get(parent) ?? Role.other) : Role.other;
      if (role === Role.span) budget.span();
      else budget.value();
      roles.push(role);
      objects.push(isObject);
      expectKey = isObject;
      keyedList = Role.other;
    } else if (byte === 0x7d || byte === 0x5d) {
      if (depth === 0) throw new MalformedExportError('the body is not JSON');
      roles.pop();
      objects.pop();
      expectKey = false;
    } else if (byte === 0x2c) {
      expectKey = depth > 0 && objects[depth - 1] === true;
    } else if (byte === QUOTE) {
      const end = stringEnd(bytes, at);
      if (expectKey) {
        expectKey = false;
        const list = parent === null ? undefined : LIST_KEYS.get(parent);
        keyedList = list && keyText(bytes, at, end) === list.key ? list.list : Role.other;
      } else {
        budget.value();
      }
      at = end;
    } else {
      budget.value();
      while (at + 1 < bytes.length && !DELIMITERS.has(bytes[at + 1] as number)) at += 1;
    }
  }
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

/** Shared by every span and event without attributes: a Map each costs ~200 bytes, 250,000 events 50 MB. */
const NO_ATTRIBUTES: Attributes = new Map();

function attributes(value: unknown): Attributes {
  const entries = keyValues(value, 0);
  return entries.length === 0 ? NO_ATTRIBUTES : new Map(entries);
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

function statusMessage(value: unknown): string | null {
  const message = object(value, 'a span status').message;
  return typeof message === 'string' && message !== '' ? message : null;
}

function span(value: unknown, resource: Attributes, scope: string | null): ReceivedSpan {
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
    scope,
    status: statusCode(s.status),
    statusMessage: statusMessage(s.status),
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
      const scopeSpans = object(ss, 'a scopeSpans entry');
      const scopeName = object(scopeSpans.scope, 'a scope').name;
      const scope = typeof scopeName === 'string' && scopeName !== '' ? scopeName : null;
      for (const item of list(scopeSpans.spans, 'spans')) spans.push(span(item, resource, scope));
    }
  }
  return spans;
}

/** A protobuf ExportTraceServiceRequest; counted first, decoded only when within the limits. */
export function decodeProtobuf(body: Uint8Array, limits: ExportLimits = OtlpLimits): ReceivedSpan[] {
  prescanProtobuf(body, limits);
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
export function decodeJson(body: Uint8Array, limits: ExportLimits = OtlpLimits): ReceivedSpan[] {
  prescanJson(body, limits);
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw new MalformedExportError('the body is not JSON');
  }
  return spansOf(parsed);
}
