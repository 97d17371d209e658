import { createHash, randomBytes } from 'node:crypto';
import { and, asc, eq, inArray, isNull, or, sql } from 'drizzle-orm';
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

/** The hash a presented key is stored by; null for what cannot be a key. */
export function keyHashOf(key: string): string | null {
  if (!key.startsWith(KEY_PREFIX) || key.length > 100) return null;
  return hashKey(key);
}

/**
 * Actors of keys read recently, per database, by key hash. A key's actor and
 * permissions never change, only whether it is active: a remembered actor is
 * used only by writes that check the key in their own statement
 * (`append_run_steps`), every other request reads the key. Bounded: when full
 * it starts again empty.
 */
const remembered = new WeakMap<Database, Map<string, Actor>>();

function memoryOf(db: Database): Map<string, Actor> {
  let memory = remembered.get(db);
  if (!memory) {
    memory = new Map();
    remembered.set(db, memory);
  }
  return memory;
}

/** The actor of a key read earlier in this process; null when none is remembered. */
export function rememberedActor(db: Database, keyHash: string): Actor | null {
  return remembered.get(db)?.get(keyHash) ?? null;
}

/** The key of an `Authorization: Bearer <key>` header; null without one. */
export function bearerKeyOf(authorization: string | null | undefined): string | null {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? null;
}

/** Whether an `Authorization` header names a key read earlier in this process (rememberedActor). */
export function isBearerRemembered(db: Database, authorization: string | undefined): boolean {
  const key = bearerKeyOf(authorization);
  const keyHash = key === null ? null : keyHashOf(key);
  return keyHash !== null && rememberedActor(db, keyHash) !== null;
}

/** Forgets a key: the next request with it reads it. */
export function forgetKey(db: Database, keyHash: string): void {
  remembered.get(db)?.delete(keyHash);
}

/** The actor a presented key stands for, read from the database; null for a missing, unknown or revoked key. */
export async function actorForKey(db: Database, key: string): Promise<Actor | null> {
  const keyHash = keyHashOf(key);
  if (keyHash === null) return null;
  const [row] = await db
    .select({ actor: apiKeys.actor, permissions: apiKeys.permissions })
    .from(apiKeys)
    .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)));
  if (!row) {
    forgetKey(db, keyHash);
    return null;
  }
  const actor: Actor = { name: row.actor, permissions: new Set(row.permissions as Permission[]) };
  const memory = memoryOf(db);
  if (memory.size >= Limits.rememberedApiKeys) memory.clear();
  memory.set(keyHash, actor);
  return actor;
}

/** Whether the key with this hash is active now. */
export async function isKeyActive(db: Database, keyHash: string): Promise<boolean> {
  return (await activeKeyHashes(db, [keyHash])).has(keyHash);
}

/** Which of these key hashes belong to active keys now (revoked and deleted ones are left out). */
export async function activeKeyHashes(db: Database, keyHashes: readonly string[]): Promise<Set<string>> {
  if (keyHashes.length === 0) return new Set();
  const rows = await db
    .select({ keyHash: apiKeys.keyHash })
    .from(apiKeys)
    .where(and(inArray(apiKeys.keyHash, [...keyHashes]), isNull(apiKeys.revokedAt)));
  const active = new Set(rows.map((row) => row.keyHash));
  for (const keyHash of keyHashes) if (!active.has(keyHash)) forgetKey(db, keyHash);
  return active;
}

export function listApiKeys(db: Database): Promise<ApiKeyRow[]> {
  return db.select().from(apiKeys).orderBy(asc(apiKeys.id));
}

/** Revokes by id or by the key's printed prefix; the next request with that key is refused. */
export async function revokeApiKey(db: Database, idOrPrefix: string): Promise<ApiKeyRow[]> {
  const byId = /^\d{1,15}$/.test(idOrPrefix) ? eq(apiKeys.id, Number(idOrPrefix)) : undefined;
  const revoked = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(isNull(apiKeys.revokedAt), or(byId, eq(apiKeys.keyPrefix, idOrPrefix))))
    .returning();
  // Another process's revocation is seen by the next write's statement; this one's at once.
  for (const row of revoked) forgetKey(db, row.keyHash);
  return revoked;
}

/**
 * Revokes an active key by its id, unless it is the last active key that may
 * manage keys: null for no such key, 'last-manager' for that one. The active
 * managers are locked first, in one transaction, so two revocations at once
 * cannot each leave the other as the last and end with none.
 */
export async function revokeApiKeyKeepingAManager(
  db: Database,
  id: number,
): Promise<ApiKeyRow | 'last-manager' | null> {
  return db.transaction(async (tx) => {
    const managers = await tx
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(and(isNull(apiKeys.revokedAt), sql`'manage_keys' = ANY(${apiKeys.permissions})`))
      .orderBy(asc(apiKeys.id))
      .for('update');
    if (managers.length === 1 && managers[0]?.id === id) return 'last-manager';
    const [revoked] = await tx
      .update(apiKeys)
      .set({ revokedAt: new Date() })
      .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
      .returning();
    if (revoked) forgetKey(db, revoked.keyHash);
    return revoked ?? null;
  });
}

export async function countActiveApiKeys(db: Database): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(apiKeys)
    .where(isNull(apiKeys.revokedAt));
  return row?.n ?? 0;
}
