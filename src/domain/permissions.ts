import { InvalidInputError } from './errors.ts';

/** What a key lets its actor do. */
export const PERMISSIONS = [
  'read_own_runs',
  'read_all_runs',
  'record',
  'cancel_own_runs',
  'cancel_any_run',
  'read_payloads',
  'manage_keys',
  'manage_servers',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

export function parsePermissions(values: readonly string[]): Permission[] {
  const unknown = values.filter((value) => !isPermission(value));
  if (unknown.length > 0) {
    throw new InvalidInputError(
      'UNKNOWN_PERMISSION',
      `unknown permission ${unknown.join(', ')}; known: ${PERMISSIONS.join(', ')}`,
      'permissions',
    );
  }
  return [...new Set(values as Permission[])];
}

export interface Actor {
  name: string;
  permissions: ReadonlySet<Permission>;
}

export function can(actor: Actor, permission: Permission): boolean {
  return actor.permissions.has(permission);
}

/** Whose runs an actor sees: everyone's with read_all_runs, else its own (if it may read them). */
export function canSeeRunOf(actor: Actor, owner: string): boolean {
  return can(actor, 'read_all_runs') || (can(actor, 'read_own_runs') && owner === actor.name);
}

/** Owners to restrict a listing to; null means no restriction. */
export function visibleOwners(actor: Actor): readonly string[] | null {
  if (can(actor, 'read_all_runs')) return null;
  return can(actor, 'read_own_runs') ? [actor.name] : [];
}

export function canCancelRunOf(actor: Actor, owner: string): boolean {
  return can(actor, 'cancel_any_run') || (can(actor, 'cancel_own_runs') && owner === actor.name);
}

/**
 * The owners a listing may show: what was asked for, cut to what the actor
 * may see. null: no restriction; empty: nothing at all.
 */
export function restrictOwners(
  actor: Actor,
  requested: readonly string[] | null | undefined,
): readonly string[] | null {
  const allowed = visibleOwners(actor);
  const asked = requested?.length ? requested : null;
  if (allowed === null) return asked;
  return asked ? asked.filter((owner) => allowed.includes(owner)) : allowed;
}
