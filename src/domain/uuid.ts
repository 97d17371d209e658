import { InvalidInputError } from './errors.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** A uuid as sent by a client, lower-cased; refused (VALUE_INVALID) when it is not a UUID. */
export function checkUuid(value: string, field = 'runUuid'): string {
  if (!isUuid(value)) throw new InvalidInputError('VALUE_INVALID', `${field} must be a UUID`, field);
  return value.toLowerCase();
}
