import type { DatabaseHandle } from '../db/connection.ts';
import { createLoaders, type Loaders } from './loaders.ts';

export interface Context {
  db: DatabaseHandle['db'];
  loaders: Loaders;
  /** Who is asking: runs started in this request belong to them, and only their runs take steps. */
  actor: string;
}

/** The header that names the actor until API keys exist. */
export const ACTOR_HEADER = 'x-runledger-actor';
export const ANONYMOUS_ACTOR = 'anonymous';

export function actorFromRequest(request: Request): string {
  const name = request.headers.get(ACTOR_HEADER)?.trim();
  return name && /^[\w.@-]{1,100}$/.test(name) ? name : ANONYMOUS_ACTOR;
}

export function createContext(handle: DatabaseHandle, request: Request): Context {
  return { db: handle.db, loaders: createLoaders(handle.db), actor: actorFromRequest(request) };
}
