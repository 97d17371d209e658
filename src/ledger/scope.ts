import type { Database } from '../db/connection.ts';
import type { Actor } from '../domain/permissions.ts';
import type { RunEvents } from './run-events.ts';

/** What every use case runs with: the database and who is asking. Never a GraphQL context. */
export interface Scope {
  db: Database;
  actor: Actor;
  /** Where writes announce what they changed, after their commit, to live streams on every instance. */
  events?: RunEvents;
}
