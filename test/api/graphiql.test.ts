import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRAPHIQL_DEFAULT_QUERY, GRAPHIQL_HEADERS_TEMPLATE } from '../../src/graphql/graphiql.ts';
import { createServer, type Server } from '../../src/server.ts';
import { openTestApi, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';
import { backendNames } from '../support/databases.ts';

const ORIGIN = 'http://runledger.test';

/** What a browser sends when it opens /graphql. */
const asBrowser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

/** Every src and href of the page's elements. */
function references(html: string): string[] {
  return [...html.matchAll(/\s(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi)].map((match) => match[1] ?? '');
}

/** The options the page hands GraphiQL, read back from its JSON element. */
function pageOptions(html: string): { headers?: string; defaultQuery?: string } {
  const json = /<script type="application\/json" id="graphiql-options">([\s\S]*?)<\/script>/.exec(html)?.[1];
  if (!json) throw new Error('no options in the page');
  return JSON.parse(json) as { headers?: string; defaultQuery?: string };
}

describe.each(backendNames)('GraphiQL served by the service itself (%s)', (backend) => {
  let api: TestApi;
  let server: Server;
  let production: Server;

  beforeAll(async () => {
    api = await openTestApi(backend);
    server = createServer({ handle: api.database.handle, graphiql: true, mcp: TEST_MCP_SETTINGS });
    production = createServer({ handle: api.database.handle, production: true, mcp: TEST_MCP_SETTINGS });
  }, 120_000);
  afterAll(async () => api?.dispose());

  const page = async (on = server) => {
    const response = await on.fetch(`${ORIGIN}/graphql`, { headers: asBrowser });
    return { response, html: await response.text() };
  };

  it('answers /graphql to a browser with a page that names no other host', async () => {
    const { response, html } = await page();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html).toContain('id="root"');
    // No URL with a scheme anywhere in the page, and no CDN by name.
    expect(html).not.toMatch(/[a-z]+:\/\//i);
    expect(html).not.toMatch(/unpkg|jsdelivr|cdnjs|esm\.sh/i);
    const refs = references(html);
    expect(refs.length).toBeGreaterThanOrEqual(5);
    for (const ref of refs) {
      expect(ref, ref).toMatch(/^\/[^/]/);
      expect(new URL(ref, ORIGIN).origin).toBe(ORIGIN);
    }
    // A page of its own size: the 9 MB of GraphiQL are in the assets, fetched once and cached.
    expect(html.length).toBeLessThan(20_000);
  });

  it('serves every asset the page and its editor workers name: 200, with its content type', async () => {
    const { html } = await page();
    const scripts = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1] ?? '');
    const styles = [...html.matchAll(/<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"/g)].map(
      (m) => m[1] ?? '',
    );
    const icons = [...html.matchAll(/<link[^>]*rel="icon"[^>]*href="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(scripts).toHaveLength(3);
    expect(styles).toHaveLength(1);
    expect(icons).toHaveLength(1);
    const bodies = new Map<string, string>();
    for (const path of scripts) {
      const response = await server.fetch(`${ORIGIN}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toMatch(/^text\/javascript/);
      const body = await response.text();
      expect(body.length, path).toBeGreaterThan(0);
      expect(body, path).not.toMatch(/unpkg\.com|jsdelivr/);
      bodies.set(path, body);
    }
    // The editor's workers: the setup script names them; each is a script of the service too.
    const setup = [...bodies.values()].find((body) => body.includes('MonacoEnvironment')) ?? '';
    const workers = [...setup.matchAll(/"(\/[^"]+\.worker\.js)"/g)].map((m) => m[1] ?? '');
    expect(workers).toHaveLength(3);
    for (const path of workers) {
      const response = await server.fetch(`${ORIGIN}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toMatch(/^text\/javascript/);
      expect((await response.text()).length, path).toBeGreaterThan(1_000);
    }
    const graphiql = [...bodies.values()].find((body) => body.includes('renderYogaGraphiQL=')) ?? '';
    expect(graphiql.length).toBeGreaterThan(1_000_000);
    for (const path of styles) {
      const response = await server.fetch(`${ORIGIN}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toMatch(/^text\/css/);
      expect(await response.text(), path).not.toMatch(/@import\s+url\(["']?https?:/);
    }
    for (const path of icons) {
      const response = await server.fetch(`${ORIGIN}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toBe('image/x-icon');
    }
    // Any other name under the assets' path, or another method, is refused.
    const assets = scripts[0]?.replace(/[^/]+$/, '') ?? '';
    expect((await server.fetch(`${ORIGIN}${assets}nothing.js`)).status).toBe(404);
    expect((await server.fetch(`${ORIGIN}${assets}../graphql`)).status).not.toBe(200);
    expect((await server.fetch(`${ORIGIN}${scripts[0]}`, { method: 'POST' })).status).toBe(405);
  });

  it('fills the Headers tab with the key template and shows a first query that runs', async () => {
    const { html } = await page();
    const options = pageOptions(html);
    expect(JSON.parse(options.headers ?? '{}')).toEqual({ Authorization: 'Bearer <your API key>' });
    expect(options.defaultQuery).toBe(GRAPHIQL_DEFAULT_QUERY);
    expect(html).toContain('Bearer \\u003cyour API key\\u003e');
    expect(html).toContain('viewer');
    // The template is how the service reads a key: with a real key in its place, the first query answers.
    const key = await api.keyFor('alice', ['read_own_runs']);
    const headers = Object.fromEntries(
      Object.entries(GRAPHIQL_HEADERS_TEMPLATE).map(([name, value]) => [
        name,
        value.replace('<your API key>', key),
      ]),
    );
    const response = await server.fetch(`${ORIGIN}/graphql`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ query: options.defaultQuery }),
    });
    const answer = (await response.json()) as { data?: { viewer: { actor: string } }; errors?: unknown };
    expect(answer.errors).toBeUndefined();
    expect(response.status).toBe(200);
    expect(answer.data?.viewer.actor).toBe('alice');
    // The template as it stands is no key: refused like any unknown key.
    const unfilled = await server.fetch(`${ORIGIN}/graphql`, {
      method: 'POST',
      headers: { ...GRAPHIQL_HEADERS_TEMPLATE, 'content-type': 'application/json' },
      body: JSON.stringify({ query: options.defaultQuery }),
    });
    expect(unfilled.status).toBe(401);
  });

  it('serves neither GraphiQL nor its assets in production', async () => {
    const { html } = await page(production);
    expect(html).not.toContain('graphiql-options');
    const asset = references((await page()).html).find((ref) => ref.endsWith('.js')) ?? '';
    expect(asset).not.toBe('');
    expect((await production.fetch(`${ORIGIN}${asset}`)).status).not.toBe(200);
  });
});
