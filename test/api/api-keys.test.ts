// Keys managed through the API while the service runs (manage_keys): made, listed, revoked, and every
// refusal with its code and nothing written.
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/db/api-keys.ts';
import { selectRows } from '../../src/db/connection.ts';
import { parsePermissions } from '../../src/domain/permissions.ts';
import { revokeKey } from '../../src/ledger/api-keys.ts';
import { type AskAs, openTestApi, type TestApi } from '../support/api.ts';
import { backendNames, openTestDatabase } from '../support/databases.ts';

const admin: AskAs = { actor: 'root-admin', permissions: ['manage_keys', 'read_all_runs'] };
const agent: AskAs = { actor: 'some-agent', permissions: ['read_own_runs', 'record'] };

const CREATE = `mutation ($input: CreateApiKeyInput!) { createApiKey(input: $input) {
  __typename ... on Error { code } ... on InvalidInputError { field }
  ... on CreateApiKeySuccess { data { key apiKey { id prefix actor permissions revokedAt } } } } }`;
const REVOKE = `mutation ($id: ID!) { revokeApiKey(id: $id) {
  __typename ... on Error { code } ... on RevokeApiKeySuccess { data { id revokedAt } } } }`;

interface Created {
  createApiKey: {
    __typename: string;
    code?: string;
    field?: string;
    data?: { key: string; apiKey: { id: string; prefix: string; actor: string; permissions: string[] } };
  };
}

describe.each(backendNames)('API keys through the API (%s)', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await openTestApi(backend);
  });
  afterAll(async () => api?.dispose());

  const keyCount = async () =>
    (await selectRows<{ n: number }>(api.db, sql`select count(*)::int as n from api_keys`))[0]?.n;
  /** Asks with a key as a client sends it. */
  const asKey = async (key: string, query: string) => {
    const response = await api.server.fetch('http://runledger.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query }),
    });
    return {
      status: response.status,
      body: (await response.json()) as { data?: unknown; errors?: unknown[] },
    };
  };

  it('makes a key that works at once, lists it without its secret, and revokes it for the next request', async () => {
    const made = await api.query<Created>(
      CREATE,
      { input: { actor: 'deploy-bot', permissions: ['RECORD', 'READ_OWN_RUNS'] } },
      admin,
    );
    const data = made.data?.createApiKey.data;
    expect(made.data?.createApiKey.__typename).toBe('CreateApiKeySuccess');
    expect(data?.key).toMatch(/^rl_/);
    expect(data?.apiKey).toMatchObject({
      actor: 'deploy-bot',
      prefix: data?.key.slice(0, 10),
      revokedAt: null,
    });
    expect(data?.apiKey.permissions.sort()).toEqual(['READ_OWN_RUNS', 'RECORD']);
    const key = data?.key ?? '';
    expect((await asKey(key, '{ viewer { actor } }')).body).toEqual({
      data: { viewer: { actor: 'deploy-bot' } },
    });

    const listed = await api.query<{ apiKeys: Array<{ id: string; actor: string; prefix: string }> }>(
      '{ apiKeys { id actor prefix } }',
      {},
      admin,
    );
    const row = listed.data?.apiKeys.find((k) => k.id === data?.apiKey.id);
    expect(row).toEqual({ id: data?.apiKey.id, actor: 'deploy-bot', prefix: key.slice(0, 10) });
    expect(JSON.stringify(listed.data)).not.toContain(key);

    const revoked = await api.query<{ revokeApiKey: { __typename: string; data?: { revokedAt: string } } }>(
      REVOKE,
      { id: data?.apiKey.id },
      admin,
    );
    expect(revoked.data?.revokeApiKey.__typename).toBe('RevokeApiKeySuccess');
    expect(revoked.data?.revokeApiKey.data?.revokedAt).toBeTruthy();
    const refused = await asKey(key, '{ viewer { actor } }');
    expect(refused.status).toBe(401);
  });

  it('refuses with a stable code and writes nothing: no manage_keys, a bad actor, no permission, an unknown id', async () => {
    // The keys the requests below are asked with exist first: only what the refusals might write is counted.
    await api.keyFor(agent.actor, agent.permissions);
    await api.keyFor(admin.actor, admin.permissions);
    const before = await keyCount();
    const forbidden = await api.query<Created>(
      CREATE,
      { input: { actor: 'x', permissions: ['RECORD'] } },
      agent,
    );
    expect(forbidden.data?.createApiKey).toMatchObject({ __typename: 'ForbiddenError', code: 'FORBIDDEN' });
    const listing = await api.query('{ apiKeys { id } }', {}, agent);
    expect(listing.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    for (const [input, code, field] of [
      [{ actor: 'has space', permissions: ['RECORD'] }, 'VALUE_INVALID', 'actor'],
      [{ actor: 'bot', permissions: [] }, 'VALUE_EMPTY', 'permissions'],
    ] as const) {
      const refused = await api.query<Created>(CREATE, { input }, admin);
      expect(refused.data?.createApiKey).toMatchObject({ code, field });
    }
    const unknown = await api.query<{ revokeApiKey: { code?: string } }>(REVOKE, { id: '999999' }, admin);
    expect(unknown.data?.revokeApiKey.code).toBe('KEY_NOT_FOUND');
    const agentRevokes = await api.query<{ revokeApiKey: { code?: string } }>(REVOKE, { id: '1' }, agent);
    expect(agentRevokes.data?.revokeApiKey.code).toBe('FORBIDDEN');
    expect(await keyCount()).toBe(before);
  });

  it('keeps the last active key that may manage keys (LAST_KEY_MANAGER), and revokes nothing then', async () => {
    const database = await openTestDatabase(backend);
    try {
      const { row } = await createApiKey(database.handle.db, 'only-admin', ['manage_keys']);
      const scope = {
        db: database.handle.db,
        actor: { name: 'only-admin', permissions: new Set(parsePermissions(['manage_keys'])) },
      };
      await expect(revokeKey(scope, String(row.id))).rejects.toMatchObject({ code: 'LAST_KEY_MANAGER' });
      const [still] = await selectRows<{ revoked: boolean }>(
        database.handle.db,
        sql`select revoked_at is not null as revoked from api_keys where id = ${row.id}`,
      );
      expect(still?.revoked).toBe(false);
      // With a second manager, the first may go.
      const second = await createApiKey(database.handle.db, 'second-admin', ['manage_keys']);
      expect((await revokeKey(scope, String(row.id))).revokedAt).not.toBeNull();
      // A revocation waits for one in flight: another connection holds the managers locked while it revokes
      // the second of two; the one asked meanwhile must wait, then see itself as the last (without the lock
      // it would see the other still active and revoke itself too, leaving none).
      if (database.url) {
        const third = await createApiKey(database.handle.db, 'third-admin', ['manage_keys']);
        const other = new pg.Client({ connectionString: database.url });
        await other.connect();
        try {
          await other.query('BEGIN');
          await other.query(
            `SELECT id FROM api_keys WHERE revoked_at IS NULL AND 'manage_keys' = ANY(permissions) FOR UPDATE`,
          );
          let settled = false;
          const asked = revokeKey(scope, String(second.row.id)).finally(() => {
            settled = true;
          });
          asked.catch(() => {});
          await new Promise((resolve) => setTimeout(resolve, 300));
          expect(settled).toBe(false);
          await other.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [third.row.id]);
          await other.query('COMMIT');
          await expect(asked).rejects.toMatchObject({ code: 'LAST_KEY_MANAGER' });
        } finally {
          await other.end();
        }
        const [left] = await selectRows<{ n: number }>(
          database.handle.db,
          sql`select count(*)::int as n from api_keys where revoked_at is null and 'manage_keys' = any(permissions)`,
        );
        expect(left?.n).toBe(1);
      }
    } finally {
      await database.dispose();
    }
  });
});
