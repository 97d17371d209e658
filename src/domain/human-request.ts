import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { DomainError, InvalidInputError } from './errors.ts';
import type { Actor } from './permissions.ts';
import type { RunStatus } from './run-status.ts';

/**
 * A run waiting for a person (SPEC 13): an approval of a proposed tool call,
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

/** Limits of what a request may carry. */
export const HumanRequestLimits = {
  /** The longest a request may stay open before it expires: 30 days. */
  maxExpiryMs: 30 * 86_400_000,
  promptLength: 4_000,
  reasonLength: 4_000,
  commentLength: 4_000,
  /** A request's schema as JSON, in UTF-8 bytes. */
  schemaBytes: 16_384,
  schemaProperties: 50,
  /** The answer's values as JSON, in UTF-8 bytes. */
  valuesBytes: 65_536,
  /**
   * The longest a call made by callTool waits for a person an MCP server asks
   * (elicitation): 10 minutes. Its deadline does not run meanwhile; past this
   * the request expires and the server is answered `cancel`.
   */
  maxElicitationWaitMs: 600_000,
} as const;

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

/** The kinds of a field a form can ask for (and MCP elicitation allows). */
const FIELD_TYPES = ['string', 'number', 'integer', 'boolean'] as const;

/**
 * The schema of a request for input, as MCP elicitation restricts it: an
 * object of flat fields (strings, numbers, integers, booleans, enums of
 * strings), each with an optional title and description, and the names of the
 * required ones. A form can be made of it; a nested schema is refused.
 */
export interface InputSchema {
  type: 'object';
  properties: Record<string, InputField>;
  required?: string[];
}

export interface InputField {
  type: (typeof FIELD_TYPES)[number];
  title?: string;
  description?: string;
  enum?: string[];
  default?: string | number | boolean;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  format?: string;
}

const FIELD_KEYS = new Set([
  'type',
  'title',
  'description',
  'enum',
  'enumNames',
  'default',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'format',
]);

function schemaError(message: string): InvalidInputError {
  return new InvalidInputError('INPUT_SCHEMA_INVALID', `schema: ${message}`, 'schema');
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

// Every error reported; keywords Ajv does not know (enumNames) are allowed, as MCP allows them.
const AJV_OPTIONS = { allErrors: true, strict: false } as const;
// Checks schemas against the JSON Schema meta-schema, compiled once for the process.
const ajv = new Ajv(AJV_OPTIONS);

/** Checks a request's schema and returns it typed; INPUT_SCHEMA_INVALID names what is wrong. */
export function checkInputSchema(schema: unknown): InputSchema {
  if (!isRecord(schema) || schema.type !== 'object' || !isRecord(schema.properties)) {
    throw schemaError('must be {"type":"object","properties":{...}}');
  }
  if (Buffer.byteLength(JSON.stringify(schema)) > HumanRequestLimits.schemaBytes) {
    throw schemaError(`is over ${HumanRequestLimits.schemaBytes} bytes`);
  }
  const names = Object.keys(schema.properties);
  if (names.length === 0 || names.length > HumanRequestLimits.schemaProperties) {
    throw schemaError(`must ask for 1 to ${HumanRequestLimits.schemaProperties} fields`);
  }
  for (const [name, field] of Object.entries(schema.properties)) {
    if (!isRecord(field) || !FIELD_TYPES.includes(field.type as InputField['type'])) {
      throw schemaError(`field ${JSON.stringify(name)} must have type ${FIELD_TYPES.join(', ')}`);
    }
    const unknownKey = Object.keys(field).find((key) => !FIELD_KEYS.has(key));
    if (unknownKey)
      throw schemaError(
        `field ${JSON.stringify(name)} has ${JSON.stringify(unknownKey)}, which a form cannot ask`,
      );
    if (field.enum !== undefined) {
      if (
        field.type !== 'string' ||
        !Array.isArray(field.enum) ||
        field.enum.length === 0 ||
        !field.enum.every((v) => typeof v === 'string')
      ) {
        throw schemaError(
          `field ${JSON.stringify(name)}: an enum is a non-empty list of strings of a string field`,
        );
      }
    }
  }
  const required = schema.required;
  if (
    required !== undefined &&
    (!Array.isArray(required) || !required.every((n) => typeof n === 'string' && names.includes(n)))
  ) {
    throw schemaError('required must list names of its properties');
  }
  if (!ajv.validateSchema(schema)) throw schemaError(ajv.errorsText(ajv.errors));
  return schema as unknown as InputSchema;
}

function describeErrors(errors: readonly ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map((error) => `${error.instancePath || '(values)'} ${error.message ?? 'is invalid'}`)
    .join('; ');
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
  // Fields not asked for are refused, not stored: the schema says what an answer holds.
  const validate = new Ajv(AJV_OPTIONS).compile({ ...schema, additionalProperties: false });
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
