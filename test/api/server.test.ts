import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { openTestApi } from '../support/api.ts';
import { backendNames, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { type Running, startService } from '../support/service.ts';

describe.each(backendNames)('the service over HTTP (%s)', (backend) => {
  let running: Running | undefined;
  let database: TestDatabase | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await database?.dispose();
    database = undefined;
  });

  it('starts, migrates, answers /health, /ready and GraphQL, and stops cleanly on SIGTERM', async () => {
    let env: Record<string, string> = { PGLITE_DATA_DIR: 'memory://' };
    if (backend === 'postgres') {
      database = await openTestDatabase(backend, { migrateTo: 0 });
      if (!database.url) throw new Error('the postgres test database has no URL');
      env = { DATABASE_URL: database.url };
    }
    running = await startService(env);
    const base = new URL(running.url).origin;
    expect(running.output()).toMatch(/migrations: created from the baseline of \d{4}_\w+ /);

    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect((await fetch(`${base}/ready`)).status).toBe(200);
    // A fresh install prints an administrator key once.
    const key = /administrator key \(shown once, store it now\): (rl_\S+)/.exec(running.output())?.[1];
    expect(key).toBeDefined();
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const anonymous = await fetch(running.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ runs { edges { cursor } } }' }),
    });
    expect(anonymous.status).toBe(401);
    const response = await fetch(running.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query: '{ runs(first: 1) { edges { cursor } pageInfo { hasNextPage } } }' }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      data: { runs: { edges: [], pageInfo: { hasNextPage: false } } },
    });

    // A request in flight when the signal arrives still gets its answer.
    const inFlight = fetch(running.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query: '{ runs { edges { cursor } } }' }),
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    running.child.kill('SIGTERM');
    const [code] = await once(running.child, 'exit');
    expect((await inFlight).status).toBe(200);
    expect(code).toBe(0);
    expect(running.output()).toContain('stopped');
  });
});

describe.each(backendNames)('readiness follows the database (%s)', (backend) => {
  it('answers /ready 200 while the database answers and 503 once it does not; /health stays 200', async () => {
    const api = await openTestApi(backend);
    try {
      const get = (path: string) => api.server.fetch(`http://runledger.test${path}`);
      expect((await get('/ready')).status).toBe(200);
      await api.database.handle.close();
      expect((await get('/ready')).status).toBe(503);
      expect((await get('/health')).status).toBe(200);
    } finally {
      await api.dispose();
    }
  });
});
