import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { isStorableText, utf8Bytes } from './bounding.ts';
import { DomainError, InvalidInputError } from './errors.ts';
import { HumanRequestLimits } from './human-request-limits.ts';
import type { Actor } from './permissions.ts';
import type { RunStatus } from './run-status.ts';

/**
 * A run waiting for a person (docs/architecture.md, "A human in the loop"): an approval of a proposed tool call,
 * or input asked with a prompt and a JSON Schema of the answer (by the agent,
 * or by an MCP server mid-call through elicitation). A denied, expired or
 * declined request is a fact about the person, like a cancel: never a failed
 * tool call, never in a failure rate.
 */
export const REQUEST_KINDS = ['approval', 'input'] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

/** Who asked: the run's recorder through the API, or an MCP server during a call made by callTool. */
export const REQUEST_SOURCES = ['api', 'mcp'] as const;
export type RequestSource = (typeof REQUEST_SOURCES)[number];

/**
 * How a request stands. `open` until decided; `expired` is stored when a
 * decision comes too late and read as such from its expiry on; `cancelled`
 * when the run ended (or its call was cut off) with the request open.
 */
export const REQUEST_STATES = [
  'open',
  'approved',
  'denied',
  'answered',
  'declined',
  'expired',
  'cancelled',
] as const;
export type RequestState = (typeof REQUEST_STATES)[number];

/** What a decider may say to an approval. */
export const APPROVAL_DECISIONS = { approve: 'approved', deny: 'denied' } as const satisfies Record<
  string,
  RequestState
>;
export type ApprovalDecision = keyof typeof APPROVAL_DECISIONS;

/** What a person may say to a request for input: the values, or no. */
export const INPUT_ANSWERS = { answer: 'answered', decline: 'declined' } as const satisfies Record<
  string,
  RequestState
>;

/** The states in which a run waits on a request of each kind. */
export const WAITING_STATUS: Readonly<Record<RequestKind, RunStatus>> = {
  approval: 'waiting_for_approval',
  input: 'waiting_for_input',
};

/** What an MCP server asks mid-call (elicitation/create, form mode). */
export interface ElicitationAsked {
  message: string;
  requestedSchema: unknown;
}

/** What the server is answered: the values, a decline, or a cancel (nobody answered, or the run was cancelled). */
export type ElicitationAnswer =
  | { action: 'accept'; content: Record<string, string | number | boolean | string[]> }
  | { action: 'decline' }
  | { action: 'cancel' };

/**
 * How a request reads at an instant: an open one past its expiry is expired,
 * and an open one of a run that has ended was cancelled with it.
 */
export function requestStateAt(
  request: { state: RequestState; expiresAt: Date | null },
  run: { finishedAt: Date | null },
  now: Date,
): RequestState {
  if (request.state !== 'open') return request.state;
  if (request.expiresAt && request.expiresAt.getTime() <= now.getTime()) return 'expired';
  if (run.finishedAt) return 'cancelled';
  return 'open';
}

/** No such request in a run the actor may act on: told apart from a hidden one by nobody. */
export class RequestNotFoundError extends DomainError {
  constructor(readonly requestUuid: string) {
    super('REQUEST_NOT_FOUND', `no request ${requestUuid}`);
  }
}

/** The request was already decided, has expired or was cancelled: a decision cannot change it. */
export class RequestNotOpenError extends DomainError {
  constructor(
    readonly requestUuid: string,
    readonly state: RequestState,
  ) {
    super(
      state === 'expired' ? 'REQUEST_EXPIRED' : 'REQUEST_NOT_OPEN',
      `request ${requestUuid} is ${state}: it can no longer be decided`,
    );
  }
}

/** Four eyes: whoever owns or recorded a run may not decide what it asks. */
export class OwnDecisionError extends DomainError {
  constructor(readonly requestUuid: string) {
    super(
      'FOUR_EYES_REQUIRED',
      `request ${requestUuid} was made by a run you own or recorded: another person must decide it`,
    );
  }
}

/** Refuses the run's owner and the request's recorder as its decider. */
export function checkFourEyes(
  actor: Actor,
  run: { owner: string },
  request: { uuid: string; requestedBy: string },
): void {
  if (actor.name === run.owner || actor.name === request.requestedBy)
    throw new OwnDecisionError(request.uuid);
}

/**
 * The schema of a request for input: MCP elicitation's flat subset of JSON
 * Schema (`requestedSchema`), nothing more. An object of fields, each a
 * string, a number or integer, a boolean, a single choice (`enum`, with the
 * older `enumNames`, or `oneOf` of `{const, title}`) or a multiple choice
 * (`type: "array"` with `items.enum` or `items.anyOf` of `{const, title}`).
 * It is checked by an allow-list of keywords, per place: anything else,
 * anywhere, is refused. So no `pattern` (a client's regex could take the
 * event loop for seconds: there is no linear-time engine), no `$ref` (a loop,
 * or a fetch), no combinators: checking an answer stays cheap and bounded.
 */
export interface InputSchema {
  /** Which dialect the sender meant (MCP allows it); never resolved. */
  $schema?: string;
  type: 'object';
  title?: string;
  description?: string;
  properties: Record<string, InputField>;
  required?: string[];
}

interface Annotated {
  title?: string;
  description?: string;
}

/** One choice and its label. */
export interface Choice {
  const: string;
  title: string;
}

/** The formats a string field may name, each checked in linear time (FORMATS below). */
export const STRING_FORMATS = ['email', 'uri', 'date', 'date-time'] as const;

/** Text, or one choice: `enum` (with `enumNames`) or `oneOf`, never with the text keywords. */
export interface StringField extends Annotated {
  type: 'string';
  minLength?: number;
  maxLength?: number;
  format?: (typeof STRING_FORMATS)[number];
  enum?: string[];
  enumNames?: string[];
  oneOf?: Choice[];
  default?: string;
}

export interface NumberField extends Annotated {
  type: 'number' | 'integer';
  minimum?: number;
  maximum?: number;
  default?: number;
}

export interface BooleanField extends Annotated {
  type: 'boolean';
  default?: boolean;
}

/** Several choices. */
export interface MultiSelectField extends Annotated {
  type: 'array';
  items: { type: 'string'; enum: string[] } | { anyOf: Choice[] };
  minItems?: number;
  maxItems?: number;
  default?: string[];
}

export type InputField = StringField | NumberField | BooleanField | MultiSelectField;

/** The keywords allowed at each place; the shape of a field follows from its type and its keys. */
const ANNOTATIONS = ['type', 'title', 'description'] as const;
const ALLOWED = {
  root: ['$schema', 'type', 'title', 'description', 'properties', 'required'],
  text: [...ANNOTATIONS, 'minLength', 'maxLength', 'format', 'default'],
  enum: [...ANNOTATIONS, 'enum', 'enumNames', 'default'],
  oneOf: [...ANNOTATIONS, 'oneOf', 'default'],
  number: [...ANNOTATIONS, 'minimum', 'maximum', 'default'],
  boolean: [...ANNOTATIONS, 'default'],
  array: [...ANNOTATIONS, 'items', 'minItems', 'maxItems', 'default'],
  items: ['type', 'enum'],
  titledItems: ['anyOf'],
  choice: ['const', 'title'],
} as const satisfies Record<string, readonly string[]>;

/** Every keyword some field may have: one outside these is named before the field's type is looked at. */
const FIELD_KEYS = [
  ...new Set([...ALLOWED.text, ...ALLOWED.enum, ...ALLOWED.oneOf, ...ALLOWED.number, ...ALLOWED.array]),
];

type FieldShape = 'text' | 'enum' | 'oneOf' | 'number' | 'boolean' | 'array';
const FIELD_SHAPES: Readonly<Record<FieldShape, string>> = {
  text: 'a string field',
  enum: 'a string field with enum',
  oneOf: 'a string field with oneOf',
  number: 'a number or integer field',
  boolean: 'a boolean field',
  array: 'an array field',
};

function schemaError(message: string): InvalidInputError {
  return new InvalidInputError('INPUT_SCHEMA_INVALID', `schema: ${message}`, 'schema');
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A path into the schema as a refusal names it: `properties.a.pattern`, `properties["a b"].oneOf[0]`. */
function at(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  // A refusal quotes at most this much of a key the sender chose.
  const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key;
  if (/^[A-Za-z_$][\w$-]*$/.test(shown)) return path ? `${path}.${shown}` : shown;
  return `${path}[${JSON.stringify(shown)}]`;
}

/** Refuses every key of `value` that is not allowed at `path`, naming the first one found. */
function onlyKeys(value: Record<string, unknown>, allowed: readonly string[], path: string, what: string) {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw schemaError(`${at(path, key)} is not allowed: ${what} may have only ${allowed.join(', ')}`);
    }
  }
}

function text(value: unknown, path: string): string {
  if (typeof value !== 'string' || !isStorableText(value)) {
    throw schemaError(`${path} must be text (without U+0000 or a lone surrogate)`);
  }
  return value;
}

function optional(
  value: Record<string, unknown>,
  key: string,
  path: string,
  check: (v: unknown, p: string) => unknown,
) {
  if (value[key] !== undefined) check(value[key], at(path, key));
}

function count(value: unknown, path: string): void {
  if (!Number.isSafeInteger(value) || (value as number) < 0) {
    throw schemaError(`${path} must be a whole number, 0 or more`);
  }
}

function finite(value: unknown, path: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw schemaError(`${path} must be a number`);
}

function list(value: unknown, path: string, max: number): unknown[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > max) {
    throw schemaError(`${path} must be a list of 1 to ${max} entries`);
  }
  return value;
}

function texts(value: unknown, path: string): void {
  for (const [index, entry] of list(value, path, HumanRequestLimits.schemaChoices).entries()) {
    text(entry, at(path, index));
  }
}

/** `oneOf` / `items.anyOf`: choices of `{const, title}`, both text. */
function choices(value: unknown, path: string): void {
  for (const [index, entry] of list(value, path, HumanRequestLimits.schemaChoices).entries()) {
    const where = at(path, index);
    if (!isRecord(entry)) throw schemaError(`${where} must be {"const": ..., "title": ...}`);
    onlyKeys(entry, ALLOWED.choice, where, 'a choice');
    text(entry.const, at(where, 'const'));
    text(entry.title, at(where, 'title'));
  }
}

/** Which of the allowed shapes a field claims to be, from its type and its keys; null: none. */
function shapeOf(field: Record<string, unknown>): FieldShape | null {
  switch (field.type) {
    case 'string':
      return Object.hasOwn(field, 'enum') ? 'enum' : Object.hasOwn(field, 'oneOf') ? 'oneOf' : 'text';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
    case 'array':
      return field.type;
    default:
      return null;
  }
}

function checkField(field: unknown, path: string): void {
  if (!isRecord(field)) throw schemaError(`${path} must be an object`);
  onlyKeys(field, FIELD_KEYS, path, 'a field');
  const shape = shapeOf(field);
  if (shape === null) {
    throw schemaError(`${at(path, 'type')} must be string, number, integer, boolean or array`);
  }
  onlyKeys(field, ALLOWED[shape], path, FIELD_SHAPES[shape]);
  optional(field, 'title', path, text);
  optional(field, 'description', path, text);
  switch (shape) {
    case 'text':
      optional(field, 'minLength', path, count);
      optional(field, 'maxLength', path, count);
      optional(field, 'format', path, (format, where) => {
        if (!(STRING_FORMATS as readonly unknown[]).includes(format)) {
          throw schemaError(`${where} must be one of ${STRING_FORMATS.join(', ')}`);
        }
      });
      optional(field, 'default', path, text);
      return;
    case 'enum':
      texts(field.enum, at(path, 'enum'));
      optional(field, 'enumNames', path, (names, where) => {
        texts(names, where);
        if ((names as unknown[]).length !== (field.enum as unknown[]).length) {
          throw schemaError(`${where} must name each entry of enum`);
        }
      });
      optional(field, 'default', path, text);
      return;
    case 'oneOf':
      choices(field.oneOf, at(path, 'oneOf'));
      optional(field, 'default', path, text);
      return;
    case 'number':
      optional(field, 'minimum', path, finite);
      optional(field, 'maximum', path, finite);
      optional(field, 'default', path, finite);
      return;
    case 'boolean':
      optional(field, 'default', path, (value, where) => {
        if (typeof value !== 'boolean') throw schemaError(`${where} must be true or false`);
      });
      return;
    default: {
      const items = field.items;
      const where = at(path, 'items');
      if (!isRecord(items))
        throw schemaError(`${where} must be {"type":"string","enum":[...]} or {"anyOf":[...]}`);
      if (Object.hasOwn(items, 'anyOf')) {
        onlyKeys(items, ALLOWED.titledItems, where, 'items with anyOf');
        choices(items.anyOf, at(where, 'anyOf'));
      } else {
        onlyKeys(items, ALLOWED.items, where, 'items');
        if (items.type !== 'string') throw schemaError(`${at(where, 'type')} must be string`);
        texts(items.enum, at(where, 'enum'));
      }
      optional(field, 'minItems', path, count);
      optional(field, 'maxItems', path, count);
      optional(field, 'default', path, (value, place) => {
        if (!Array.isArray(value)) throw schemaError(`${place} must be a list of text`);
        if (value.length > 0) texts(value, place);
      });
    }
  }
}

/**
 * Checks a request's schema against the allow-list and returns it typed;
 * INPUT_SCHEMA_INVALID names the first keyword refused and its path. The
 * same check guards the API, MCP servers' elicitations and answers to
 * requests stored before it.
 */
export function checkInputSchema(schema: unknown): InputSchema {
  if (!isRecord(schema)) throw schemaError('must be {"type":"object","properties":{...}}');
  let json: string | undefined;
  try {
    json = JSON.stringify(schema);
  } catch {
    // A cycle, or nesting too deep for the stack: no JSON document is either.
  }
  if (json === undefined) throw schemaError('must be JSON');
  if (utf8Bytes(json) > HumanRequestLimits.schemaBytes) {
    throw schemaError(`is over ${HumanRequestLimits.schemaBytes} bytes`);
  }
  onlyKeys(schema, ALLOWED.root, '', 'the schema');
  if (schema.type !== 'object') throw schemaError('type must be "object"');
  optional(schema, '$schema', '', text);
  optional(schema, 'title', '', text);
  optional(schema, 'description', '', text);
  const properties = schema.properties;
  if (!isRecord(properties)) throw schemaError('properties must be an object of fields');
  const names = Object.keys(properties);
  if (names.length === 0 || names.length > HumanRequestLimits.schemaProperties) {
    throw schemaError(`must ask for 1 to ${HumanRequestLimits.schemaProperties} fields`);
  }
  for (const name of names) {
    const path = at('properties', name);
    if (name.length === 0 || name.length > HumanRequestLimits.fieldNameLength || !isStorableText(name)) {
      throw schemaError(
        `${path}: a field's name is text of 1 to ${HumanRequestLimits.fieldNameLength} characters`,
      );
    }
    checkField(properties[name], path);
  }
  const required = schema.required;
  if (
    required !== undefined &&
    (!Array.isArray(required) ||
      new Set(required).size !== required.length ||
      !required.every((name) => typeof name === 'string' && Object.hasOwn(properties, name)))
  ) {
    throw schemaError('required must list names of its properties, each once');
  }
  return schema as unknown as InputSchema;
}

/**
 * The schema of a request stored before the allow-list, checked before an
 * answer is: a refused one can only be declined. Same code, no field to
 * blame in what the decider sent.
 */
export function checkStoredInputSchema(schema: unknown): InputSchema {
  try {
    return checkInputSchema(schema);
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    throw new InvalidInputError(
      'INPUT_SCHEMA_INVALID',
      `this request's ${error.message}; it cannot be answered, only declined`,
    );
  }
}

function describeErrors(errors: readonly ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map((error) => `${error.instancePath || '(values)'} ${error.message ?? 'is invalid'}`)
    .join('; ');
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

function isDate(value: string): boolean {
  const match = DATE.exec(value);
  if (!match) return false;
  const [y, m, d] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const day = new Date(Date.UTC(y, m - 1, d));
  // Date.UTC maps years 0-99 to 1900-1999: setting the year again keeps 0001-0099.
  day.setUTCFullYear(y);
  return day.getUTCFullYear() === y && day.getUTCMonth() === m - 1 && day.getUTCDate() === d;
}

/**
 * The four formats MCP allows, as the service's own checks: no regex of a
 * client's, none that backtracks (each one below matches in linear time).
 */
const FORMATS = {
  email: (value: string) => {
    const sign = value.indexOf('@');
    return sign > 0 && sign === value.lastIndexOf('@') && sign < value.length - 1 && !/\s/.test(value);
  },
  uri: (value: string) => URL.canParse(value),
  date: isDate,
  'date-time': (value: string) => {
    const [, day = '', hours, minutes, seconds, offsetHours = '0', offsetMinutes = '0'] =
      DATE_TIME.exec(value) ?? [];
    // A leap second (60) is RFC 3339's.
    return (
      isDate(day) &&
      Number(hours) < 24 &&
      Number(minutes) < 60 &&
      Number(seconds) <= 60 &&
      Number(offsetHours) < 24 &&
      Number(offsetMinutes) < 60
    );
  },
} satisfies Record<(typeof STRING_FORMATS)[number], (value: string) => boolean>;

/**
 * Every error reported; strict, so a keyword Ajv does not know is an error of
 * this code, never ignored; no remote schema (no loadSchema) and nothing kept
 * beyond the one schema each instance compiles. That schema is built here from
 * a checked one (valueSchema): no meta-schema to compile in every instance.
 */
const AJV_OPTIONS = {
  allErrors: true,
  strict: true,
  addUsedSchema: false,
  meta: false,
  validateSchema: false,
  formats: FORMATS,
} as const;

const defined = (value: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined));

/**
 * What Ajv checks of a field: only what constrains a value, built anew.
 * Labels, defaults and `$schema` are for the form; a choice is an `enum`.
 */
function valueSchema(field: InputField): Record<string, unknown> {
  switch (field.type) {
    case 'string': {
      const options = field.enum ?? field.oneOf?.map((choice) => choice.const);
      const { minLength, maxLength, format } = field;
      return defined({
        type: 'string',
        enum: options && [...new Set(options)],
        minLength,
        maxLength,
        format,
      });
    }
    case 'array': {
      const options =
        'anyOf' in field.items ? field.items.anyOf.map((choice) => choice.const) : field.items.enum;
      const { minItems, maxItems } = field;
      return defined({
        type: 'array',
        items: { type: 'string', enum: [...new Set(options)] },
        minItems,
        maxItems,
      });
    }
    case 'boolean':
      return { type: 'boolean' };
    default:
      return defined({ type: field.type, minimum: field.minimum, maximum: field.maximum });
  }
}

/**
 * Validators of answers, by schema, the most recent few hundred. An Ajv
 * instance keeps everything it ever compiled (removeSchema does not free it),
 * so each is compiled by an instance of its own, freed with it when evicted.
 */
const answerValidators = new Map<string, ValidateFunction>();
const MAX_ANSWER_VALIDATORS = 256;

function answerValidator(schema: InputSchema): ValidateFunction {
  const key = JSON.stringify(schema);
  const cached = answerValidators.get(key);
  if (cached) return cached;
  const properties = Object.fromEntries(
    Object.entries(schema.properties).map(([name, field]) => [name, valueSchema(field)]),
  );
  // Fields not asked for are refused, not stored: the schema says what an answer holds.
  const validate = new Ajv(AJV_OPTIONS).compile(
    defined({ type: 'object', properties, required: schema.required, additionalProperties: false }),
  );
  const oldest = answerValidators.keys().next();
  if (answerValidators.size >= MAX_ANSWER_VALIDATORS && !oldest.done) answerValidators.delete(oldest.value);
  answerValidators.set(key, validate);
  return validate;
}

/** Checks an answer against its request's schema; INPUT_VALUES_INVALID says every mismatch. */
export function checkInputValues(schema: InputSchema, values: unknown): Record<string, unknown> {
  if (!isRecord(values)) {
    throw new InvalidInputError(
      'INPUT_VALUES_INVALID',
      'values must be an object of the fields asked for',
      'values',
    );
  }
  if (Buffer.byteLength(JSON.stringify(values)) > HumanRequestLimits.valuesBytes) {
    throw new InvalidInputError(
      'INPUT_VALUES_INVALID',
      `values are over ${HumanRequestLimits.valuesBytes} bytes`,
      'values',
    );
  }
  const validate = answerValidator(schema);
  if (!validate(values)) {
    throw new InvalidInputError(
      'INPUT_VALUES_INVALID',
      `values: ${describeErrors(validate.errors)}`,
      'values',
    );
  }
  return values;
}

/** Checks an expiry: in the future, and at most HumanRequestLimits.maxExpiryMs away. */
export function checkExpiry(expiresAt: Date | null | undefined, now: Date): Date | null {
  if (!expiresAt) return null;
  const ahead = expiresAt.getTime() - now.getTime();
  if (!(ahead > 0) || ahead > HumanRequestLimits.maxExpiryMs) {
    throw new InvalidInputError(
      'VALUE_OUT_OF_RANGE',
      `expiresAt must be in the future and at most ${HumanRequestLimits.maxExpiryMs / 86_400_000} days away`,
      'expiresAt',
    );
  }
  return expiresAt;
}
