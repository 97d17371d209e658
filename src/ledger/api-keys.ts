import { type ApiKeyRow, createApiKey, listApiKeys, revokeApiKeyKeepingAManager } from '../db/api-keys.ts';
import { InvalidInputError } from '../domain/errors.ts';
import { requirePermission } from '../domain/permissions.ts';
import type { Scope } from './scope.ts';

/**
 * Keys managed through the API by an actor with manage_keys, while the
 * service runs: the same rules and storage as `npm run keys` (the key is
 * shown once, only its hash is stored, a revocation holds from the next
 * request on every instance).
 */

/** Every key, newest last, without its secret (which is never stored). */
export function listKeys(scope: Scope): Promise<ApiKeyRow[]> {
  requirePermission(scope.actor, 'manage_keys');
  return listApiKeys(scope.db);
}

/** A new key for an actor: the key itself is in the answer, once. */
export function makeKey(
  scope: Scope,
  input: { actor: string; permissions: readonly string[] },
): Promise<{ key: string; row: ApiKeyRow }> {
  requirePermission(scope.actor, 'manage_keys');
  return createApiKey(scope.db, input.actor, input.permissions);
}

/**
 * Revokes a key by its id. The last active key that may manage keys is kept
 * (LAST_KEY_MANAGER): without it, keys could be managed only on the database.
 */
export async function revokeKey(scope: Scope, id: string): Promise<ApiKeyRow> {
  requirePermission(scope.actor, 'manage_keys');
  const revoked = /^\d{1,15}$/.test(id) ? await revokeApiKeyKeepingAManager(scope.db, Number(id)) : null;
  if (revoked === 'last-manager') {
    throw new InvalidInputError(
      'LAST_KEY_MANAGER',
      'this is the last active key with manage_keys: make another first',
      'id',
    );
  }
  if (!revoked) throw new InvalidInputError('KEY_NOT_FOUND', `no active key ${id}`, 'id');
  return revoked;
}
