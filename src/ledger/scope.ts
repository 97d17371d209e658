import type { Database } from '../db/connection.ts';
import type { Actor } from '../domain/permissions.ts';
import type { RunEvents } from './run-events.ts';

/** What every use case runs with: the database and who is asking. Never a GraphQL context. */
export interface Scope {
  db: Database;
  actor: Actor;
  /** Where writes announce what they changed, after their commit, to live streams on every instance. */
  events?: RunEvents;
  /**
   * The hash of the API key the actor was remembered by, not read from the
   * database in this request: writes check in their own statement that the
   * key is still active, so a revocation holds from the next request on.
   */
  rememberedKey?: string | null;
}
