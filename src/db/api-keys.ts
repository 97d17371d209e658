import { createHash, randomBytes } from 'node:crypto';
import { and, asc, eq, isNull, or, sql } from 'drizzle-orm';
import { apiKeys } from '../../drizzle/schema.ts';
import { InvalidInputError } from '../domain/errors.ts';
import { checkName, Limits } from '../domain/limits.ts';
import { type Actor, type Permission, parsePermissions } from '../domain/permissions.ts';
import type { Database } from './connection.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

const KEY_PREFIX = 'rl_';

function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** A new key for an actor. The key is returned once and never stored: only its hash is. */
export async function createApiKey(
  db: Database,
  actor: string,
  permissions: readonly string[],
): Promise<{ key: string; row: ApiKeyRow }> {
  checkName(actor, 'actor', Limits.shortNameLength);
  if (!/^[\w.@-]+$/.test(actor)) {
    throw new InvalidInputError('VALUE_INVALID', 'actor may hold letters, digits and . @ - _ only', 'actor');
  }
  const granted = parsePermissions(permissions);
  if (granted.length === 0)
    throw new InvalidInputError('VALUE_EMPTY', 'grant at least one permission', 'permissions');
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const [row] = await db
    .insert(apiKeys)
    .values({ actor, keyHash: hashKey(key), keyPrefix: key.slice(0, 10), permissions: granted })
    .returning();
  if (!row) throw new Error('insert returned no key');
  return { key, row };
}

/** The actor a presented key stands for; null for a missing, unknown or revoked key. */
export async function actorForKey(db: Database, key: string): Promise<Actor | null> {
  if (!key.startsWith(KEY_PREFIX) || key.length > 100) return null;
  const [row] = await db
    .select({ actor: apiKeys.actor, permissions: apiKeys.permissions })
    .from(apiKeys)
    .where(and(eq(apiKeys.keyHash, hashKey(key)), isNull(apiKeys.revokedAt)));
  if (!row) return null;
  return { name: row.actor, permissions: new Set(row.permissions as Permission[]) };
}

export function listApiKeys(db: Database): Promise<ApiKeyRow[]> {
  return db.select().from(apiKeys).orderBy(asc(apiKeys.id));
}

/** Revokes by id or by the key's printed prefix; the next request with that key is refused. */
export async function revokeApiKey(db: Database, idOrPrefix: string): Promise<ApiKeyRow[]> {
  const byId = /^\d{1,15}$/.test(idOrPrefix) ? eq(apiKeys.id, Number(idOrPrefix)) : undefined;
  return db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(isNull(apiKeys.revokedAt), or(byId, eq(apiKeys.keyPrefix, idOrPrefix))))
    .returning();
}

export async function countActiveApiKeys(db: Database): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(apiKeys)
    .where(isNull(apiKeys.revokedAt));
  return row?.n ?? 0;
}
