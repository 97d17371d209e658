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

/**
 * Everything the schema holds, as PostgreSQL prints it: every table (as
 * describeTables), every function with its definition, every trigger, and
 * every composite type's attributes, so that two databases compare equal
 * exactly when they hold the same schema, however it was built.
 */
export async function describeSchema(handle: DatabaseHandle) {
  const tables = (
    await handle.withSession((session) =>
      session.query<{ tablename: string }>(
        `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'runledger_migrations' ORDER BY 1`,
      ),
    )
  ).map((row) => row.tablename);
  const rest = await handle.withSession(async (session) => ({
    functions: await session.query(
      `SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS arguments, pg_get_functiondef(p.oid) AS definition
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' ORDER BY 1, 2`,
    ),
    triggers: await session.query(
      `SELECT c.relname, t.tgname, t.tgenabled, pg_get_triggerdef(t.oid) AS definition
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND NOT t.tgisinternal ORDER BY 1, 2`,
    ),
    types: await session.query(
      `SELECT t.typname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
         JOIN pg_class c ON c.oid = t.typrelid AND c.relkind = 'c'
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
        WHERE n.nspname = 'public' ORDER BY 1, 2`,
    ),
  }));
  return { tables, ...(await describeTables(handle, tables)), ...rest };
}
