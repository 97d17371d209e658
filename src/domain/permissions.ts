import { ForbiddenError, InvalidInputError } from './errors.ts';
import { isOneOf } from './one-of.ts';

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
  'approve_runs',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return isOneOf(value, PERMISSIONS);
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

/** Refuses with FORBIDDEN unless the actor may cancel at least its own runs. */
export function requireSomeCancelPermission(actor: Actor): void {
  if (!can(actor, 'cancel_any_run')) requirePermission(actor, 'cancel_own_runs');
}

/**
 * The owners whose runs an actor may act on in some way: null for every owner,
 * else a list (empty: none). Storage applies it in the statement that finds the
 * run, so a run the actor may not act on is never read, locked or told apart
 * from a run that does not exist.
 */
export type Owners = readonly string[] | null;

/** Registered MCP servers are listed to anyone who may read runs or manage servers. */
export function canListServers(actor: Actor): boolean {
  return (['read_own_runs', 'read_all_runs', 'manage_servers'] as const).some((p) => can(actor, p));
}

/** Whose runs an actor sees: everyone's with read_all_runs, else its own (if it may read them); null: every owner. */
export function visibleOwners(actor: Actor): Owners {
  if (can(actor, 'read_all_runs')) return null;
  return can(actor, 'read_own_runs') ? [actor.name] : [];
}

/**
 * Whose runs' requests an actor may decide (approve, deny, answer): every
 * owner's with approve_runs, none without. Four eyes is checked apart, per
 * request (checkFourEyes).
 */
export function decidableOwners(actor: Actor): Owners {
  return can(actor, 'approve_runs') ? null : [];
}

/** Whose runs' requests an actor may read: those of the runs it sees, and those it may decide. */
export function requestReadableOwners(actor: Actor): Owners {
  const decidable = decidableOwners(actor);
  const visible = visibleOwners(actor);
  if (decidable === null || visible === null) return null;
  return [...new Set([...visible, ...decidable])];
}

/** Refuses with FORBIDDEN unless the actor holds the permission. */
export function requirePermission(actor: Actor, permission: Permission): void {
  if (!can(actor, permission)) throw new ForbiddenError(permission);
}

/** Steps go into one's own runs only, and only with record. */
export function recordableOwners(actor: Actor): Owners {
  return can(actor, 'record') ? [actor.name] : [];
}

/** An operator may cancel any run with cancel_any_run, its own with cancel_own_runs. */
export function cancellableOwners(actor: Actor): Owners {
  if (can(actor, 'cancel_any_run')) return null;
  return can(actor, 'cancel_own_runs') ? [actor.name] : [];
}

/**
 * The owners a listing may show: what was asked for, cut to what the actor
 * may see. null: no restriction; empty: nothing at all.
 */
export function restrictOwners(actor: Actor, requested: readonly string[] | null | undefined): Owners {
  const allowed = visibleOwners(actor);
  const asked = requested?.length ? requested : null;
  if (allowed === null) return asked;
  return asked ? asked.filter((owner) => allowed.includes(owner)) : allowed;
}
