import SchemaBuilder from '@pothos/core';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin, { type AuthFailure, AuthScopeFailureType } from '@pothos/plugin-scope-auth';
import type { IsoInstant } from '../domain/date-time.ts';
import { ForbiddenError } from '../domain/errors.ts';
import { can, isPermission, PERMISSIONS, type Permission } from '../domain/permissions.ts';
import type { JsonValue } from '../domain/tool-result.ts';
import type { Context } from './context.ts';
import { decodeGlobalId, encodeGlobalId } from './ids.ts';

const capitalised = (name: string) => `${name.charAt(0).toUpperCase()}${name.slice(1)}`;

/** One auth scope per permission of the domain: `authScopes: { read_payloads: true }`. */
type PermissionScopes = Record<Permission, true>;

function everyPermission<T>(value: (permission: Permission) => T): Record<Permission, T> {
  return Object.fromEntries(PERMISSIONS.map((permission) => [permission, value(permission)])) as Record<
    Permission,
    T
  >;
}

/** The permission a denial names: the field's, or the first of its alternatives ($any). */
function deniedPermission(failure: AuthFailure): Permission | null {
  if (failure.kind === AuthScopeFailureType.AuthScope)
    return isPermission(failure.scope) ? failure.scope : null;
  if (
    failure.kind !== AuthScopeFailureType.AnyAuthScopes &&
    failure.kind !== AuthScopeFailureType.AllAuthScopes
  )
    return null;
  for (const inner of failure.failures) {
    const permission = deniedPermission(inner);
    if (permission) return permission;
  }
  return null;
}

export const builder = new SchemaBuilder<{
  Context: Context;
  AuthScopes: PermissionScopes;
  Scalars: {
    // Output: a Date, or an instant already written as the scalar writes it (timeline lines).
    DateTime: { Input: Date; Output: Date | IsoInstant };
    SafeInt: { Input: number; Output: number };
    JSON: { Input: JsonValue; Output: JsonValue };
    ID: { Input: string; Output: string | number };
  };
  DefaultFieldNullability: false;
}>({
  // Scope auth first: its check wraps the other plugins' resolvers, so a denied field runs none of them.
  plugins: [ScopeAuthPlugin, ErrorsPlugin, RelayPlugin],
  scopeAuth: {
    authScopes: (context) => everyPermission((permission) => can(context.actor, permission)),
    // The domain's FORBIDDEN, permission named: the error plugin answers it as every other refusal.
    unauthorizedError: (_parent, _context, _info, result) => {
      const permission = deniedPermission(result.failure);
      // A scope that names no permission would be a bug of ours: masked, as any other.
      return permission ? new ForbiddenError(permission) : new Error(result.message);
    },
  },
  errors: {
    defaultTypes: [],
    // Named after the mutation (StartRunResult, StartRunSuccess), as a client's generated types read best.
    defaultUnionOptions: { name: ({ fieldName }) => `${capitalised(fieldName)}Result` },
    defaultResultOptions: { name: ({ fieldName }) => `${capitalised(fieldName)}Success` },
  },
  // Fields are non-null unless declared otherwise, so generated clients are exact.
  defaultFieldNullability: false,
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    decodeGlobalID: decodeGlobalId,
    encodeGlobalID: encodeGlobalId,
  },
});

builder.queryType({});
builder.mutationType({});

/** What opens a private field: any one of these permissions. */
export type Opens = readonly [Permission, ...Permission[]];

/** How a field's description says what it needs; the schema test reads the same words. */
export function privacyNote(opens: Opens): string {
  const [named, ...others] = opens;
  const alternatives = others.length ? ` or ${others.join(' or ')}` : '';
  return `Private: needs ${named}${alternatives}; otherwise null, with a FORBIDDEN error naming ${named}.`;
}

/**
 * A private field's options, declared where the field is: its scope, nullable
 * (denied, it reads null beside its error), and its description with what it
 * needs, made from the same list so the two cannot drift.
 */
export function privateField(description: string, ...opens: Opens) {
  const scopes: Partial<PermissionScopes> = {};
  for (const permission of opens) scopes[permission] = true;
  return {
    nullable: true as const,
    description: `${description} ${privacyNote(opens)}`,
    authScopes: opens.length > 1 ? { $any: scopes } : scopes,
  };
}
