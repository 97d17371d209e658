import type { Database } from '../db/connection.ts';
import type { Actor } from '../domain/permissions.ts';

/** What every use case runs with: the database and who is asking. Never a GraphQL context. */
export interface Scope {
  db: Database;
  actor: Actor;
}
