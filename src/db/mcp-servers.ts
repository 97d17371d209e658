import { asc, eq } from 'drizzle-orm';
import { mcpServers } from '../../drizzle/schema.ts';
import type { McpServerConfig, McpTransportKind } from '../domain/mcp-server.ts';
import type { Database } from './connection.ts';

export type McpServerRow = typeof mcpServers.$inferSelect;

/** Inserts a server; null when its identifier is already registered. */
export async function insertMcpServer(db: Database, server: McpServerConfig): Promise<McpServerRow | null> {
  const [row] = await db
    .insert(mcpServers)
    .values({ ...server, args: [...server.args], headers: [...server.headers] })
    .onConflictDoNothing({ target: mcpServers.identifier })
    .returning();
  return row ?? null;
}

/** Replaces a server's endpoint; null when there is no such server. */
export async function updateMcpServer(db: Database, server: McpServerConfig): Promise<McpServerRow | null> {
  const { identifier, ...endpoint } = server;
  const [row] = await db
    .update(mcpServers)
    .set({ ...endpoint, args: [...endpoint.args], headers: [...endpoint.headers] })
    .where(eq(mcpServers.identifier, identifier))
    .returning();
  return row ?? null;
}

export async function deleteMcpServer(db: Database, identifier: string): Promise<McpServerRow | null> {
  const [row] = await db.delete(mcpServers).where(eq(mcpServers.identifier, identifier)).returning();
  return row ?? null;
}

export function listMcpServers(db: Database): Promise<McpServerRow[]> {
  return db.select().from(mcpServers).orderBy(asc(mcpServers.identifier));
}

export async function findMcpServer(db: Database, identifier: string): Promise<McpServerConfig | null> {
  const [row] = await db.select().from(mcpServers).where(eq(mcpServers.identifier, identifier));
  if (!row) return null;
  return {
    identifier: row.identifier,
    transport: row.transport as McpTransportKind,
    url: row.url,
    command: row.command,
    args: row.args,
    headers: row.headers,
  };
}

export async function recordContact(db: Database, identifier: string, latencyMs: number): Promise<void> {
  await db
    .update(mcpServers)
    .set({ lastContactAt: new Date(), lastLatencyMs: latencyMs })
    .where(eq(mcpServers.identifier, identifier));
}
