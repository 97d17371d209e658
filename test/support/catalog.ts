import type { DatabaseHandle } from '../../src/db/connection.ts';

/**
 * What the database says a set of tables is: columns, constraints and indexes
 * as PostgreSQL itself prints them, so two databases built by different DDL
 * compare equal exactly when they mean the same.
 */
export async function describeTables(handle: DatabaseHandle, tables: string[]) {
  return handle.withSession(async (session) => {
    const columns = await session.query(
      `SELECT table_name, column_name, data_type, numeric_precision, numeric_scale, is_nullable,
              column_default, is_identity, identity_generation
         FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name = ANY($1)
        ORDER BY table_name, column_name`,
      [tables],
    );
    // Not-null constraints (contype 'n', PostgreSQL 18) are covered by is_nullable above.
    const constraints = await session.query(
      `SELECT c.relname AS table_name, k.conname, k.contype, k.convalidated, pg_get_constraintdef(k.oid) AS definition
         FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relname = ANY($1) AND k.contype <> 'n'
        ORDER BY c.relname, k.conname`,
      [tables],
    );
    const indexes = await session.query(
      `SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename = ANY($1)
        ORDER BY tablename, indexname`,
      [tables],
    );
    return { columns, constraints, indexes };
  });
}
