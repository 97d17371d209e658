import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { serviceSecrets } from '../../drizzle/schema.ts';
import type { Database } from './connection.ts';

/** The secrets the service keeps, by name. */
export type SecretName = 'otlp_run_ids';

const known = new WeakMap<Database, Map<SecretName, Promise<string>>>();

/**
 * A secret of the service, made on first use (32 random bytes) by whichever
 * instance asks first and read by every other; kept in memory per database
 * once read, since it never changes.
 */
export function serviceSecret(db: Database, name: SecretName): Promise<string> {
  let secrets = known.get(db);
  if (!secrets) {
    secrets = new Map();
    known.set(db, secrets);
  }
  let secret = secrets.get(name);
  if (!secret) {
    secret = (async () => {
      await db
        .insert(serviceSecrets)
        .values({ name, value: randomBytes(32).toString('base64url') })
        .onConflictDoNothing();
      const [row] = await db
        .select({ value: serviceSecrets.value })
        .from(serviceSecrets)
        .where(eq(serviceSecrets.name, name));
      if (!row) throw new Error(`the secret ${name} was not stored`);
      return row.value;
    })();
    // A failure (the database away) is not kept: the next call asks again.
    secret.catch(() => secrets.delete(name));
    secrets.set(name, secret);
  }
  return secret;
}
