// How the service serves the built viewer: its pages, its files (compressed as the browser accepts),
// its security headers, and nothing outside its folder.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from '../../src/server.ts';
import { openTestApi, TEST_MCP_SETTINGS, type TestApi } from '../support/api.ts';

const INDEX = '<!doctype html><title>runledger</title><script type="module" src="/assets/app-1.js"></script>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(2_000))});`;

describe('the viewer, as the service serves it', () => {
  let api: TestApi;
  let built = '';
  let empty = '';
  let server: Server;

  beforeAll(async () => {
    api = await openTestApi('pglite');
    built = mkdtempSync(join(tmpdir(), 'runledger-viewer-'));
    mkdirSync(join(built, 'assets'));
    writeFileSync(join(built, 'index.html'), INDEX);
    writeFileSync(join(built, 'assets', 'app-1.js'), SCRIPT);
    writeFileSync(join(built, 'assets', 'app-1.js.br'), brotliCompressSync(SCRIPT));
    writeFileSync(join(built, 'assets', 'app-1.js.gz'), gzipSync(SCRIPT));
    empty = mkdtempSync(join(tmpdir(), 'runledger-no-viewer-'));
    server = createServer({ handle: api.database.handle, mcp: TEST_MCP_SETTINGS, viewer: built });
  });
  afterAll(async () => {
    rmSync(built, { recursive: true, force: true });
    rmSync(empty, { recursive: true, force: true });
    await api?.dispose();
  });

  const get = (path: string, headers: Record<string, string> = {}, target = server) =>
    target.fetch(`http://runledger.test${path}`, { headers });

  it('answers its index for each of its routes, with a policy that allows this origin only and no framing', async () => {
    for (const path of [
      '/',
      '/runs',
      '/runs/00000000-0000-4000-8000-00000000c0de',
      '/servers/github',
      '/stats',
    ]) {
      const response = await get(path);
      expect({ path, status: response.status, body: await response.text() }).toEqual({
        path,
        status: 200,
        body: INDEX,
      });
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(response.headers.get('x-frame-options')).toBe('DENY');
    }
  });

  it('sends a file brotli- or gzip-compressed as the browser accepts, else as it is, cached for a year', async () => {
    const br = await get('/assets/app-1.js', { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(br.headers.get('vary')).toBe('accept-encoding');
    expect(br.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(br.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const gz = await get('/assets/app-1.js', { 'accept-encoding': 'gzip' });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    const plain = await get('/assets/app-1.js', { 'accept-encoding': 'identity' });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(await plain.text()).toBe(SCRIPT);
    // Each variant is the same file.
    expect(brotliDecompressSync(Buffer.from(await br.arrayBuffer())).toString()).toBe(SCRIPT);
    expect(gunzipSync(Buffer.from(await gz.arrayBuffer())).toString()).toBe(SCRIPT);
  });

  it('answers 404 for a file it does not have, and never one outside its folder', async () => {
    for (const path of [
      '/assets/missing.js',
      '/assets/..%2f..%2fpackage.json',
      '/assets/%2e%2e/index.html',
      '/assets/%E0%A4%A',
    ]) {
      expect({ path, status: (await get(path)).status }).toEqual({ path, status: 404 });
    }
  });

  it("answers 404 for a path that is nobody's, not a page that loads anything from another host", async () => {
    for (const path of ['/nothing-here', '/admin', '/wp-login.php']) {
      const answer = await get(path, { accept: 'text/html' });
      const body = await answer.text();
      expect({ path, status: answer.status }).toEqual({ path, status: 404 });
      expect(body).not.toMatch(/https?:\/\//);
    }
  });

  it('leaves GraphQL, health and other methods to the service', async () => {
    const key = await api.keyFor('alice');
    const graphql = await server.fetch('http://runledger.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: '{ viewer { actor } }' }),
    });
    expect(await graphql.json()).toEqual({ data: { viewer: { actor: 'alice' } } });
    expect((await get('/health')).status).toBe(200);
    const posted = await server.fetch('http://runledger.test/runs', { method: 'POST', body: '{}' });
    expect(await posted.text()).not.toBe(INDEX);
  });

  it('says how to build the viewer when it is not built', async () => {
    const unbuilt = createServer({ handle: api.database.handle, mcp: TEST_MCP_SETTINGS, viewer: empty });
    const response = await get('/', {}, unbuilt);
    expect(response.status).toBe(503);
    expect(await response.text()).toContain('npm run build');
  });
});
