import type { DatabaseHandle } from '../db/connection.ts';
import { createLoaders, type Loaders } from './loaders.ts';

export interface Context {
  db: DatabaseHandle['db'];
  loaders: Loaders;
}

export function createContext(handle: DatabaseHandle): Context {
  return { db: handle.db, loaders: createLoaders(handle.db) };
}
