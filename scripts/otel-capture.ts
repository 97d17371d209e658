import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { SCENARIOS, type Scenario } from '../test/support/agents/fake-model.ts';
import type { Target } from '../test/support/agents/harness.ts';
import {
  installedVersion,
  LIBRARIES,
  NODE22_BIN,
  NODE22_DIR,
  ROOT,
  runLibrary,
} from '../test/support/agents/libraries.ts';

/**
 * `npm run otel:capture [-- <library>…]`: runs each library's agent through
 * every scenario with the library's real tracing and its spans sent by the
 * real OTLP/HTTP JSON exporter to a collector here, and writes what arrived,
 * one ExportTraceServiceRequest per scenario, to
 * test/fixtures/otel/<library>/<scenario>.json (the requests of a scenario
 * merged into one). Libraries that need Node 22 are installed into
 * test/support/agents/node22 (npm ci there) and run with its Node 22 binary.
 */

interface ExportRequest {
  resourceSpans?: unknown[];
}

const FIXTURES = `${ROOT}test/fixtures/otel`;
const wanted = process.argv.slice(2);
const libraries = LIBRARIES.filter((library) => wanted.length === 0 || wanted.includes(library.id));

const received = new Map<string, ExportRequest[]>();
const collector = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const key = (request.url ?? '').replace(/\/v1\/traces$/, '');
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest;
    received.set(key, [...(received.get(key) ?? []), body]);
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{}');
  });
});
await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;

/** Machine-specific strings, made the same on every machine: the checkout's path and the host's name. */
function stable(text: string): string {
  return text.replaceAll(ROOT.replace(/\/$/, ''), '<repo>').replaceAll(`"${hostname()}"`, '"<host>"');
}

const manifest: Record<string, unknown> = {};
for (const library of libraries) {
  if (library.node === 22 && !existsSync(NODE22_BIN)) {
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: NODE22_DIR, stdio: 'inherit' });
  }
  const targets = Object.fromEntries(
    SCENARIOS.map((scenario) => [
      scenario,
      { url: `${base}/${library.id}/${scenario}/v1/traces`, headers: {} },
    ]),
  ) as Record<Scenario, Target>;
  const reports = await runLibrary(library, targets);
  mkdirSync(`${FIXTURES}/${library.id}`, { recursive: true });
  for (const scenario of SCENARIOS) {
    const requests = received.get(`/${library.id}/${scenario}`) ?? [];
    const merged = { resourceSpans: requests.flatMap((request) => request.resourceSpans ?? []) };
    writeFileSync(
      `${FIXTURES}/${library.id}/${scenario}.json`,
      `${stable(JSON.stringify(merged, null, 2))}\n`,
    );
  }
  const node =
    library.node === 22
      ? execFileSync(NODE22_BIN, ['--version'], { encoding: 'utf8' }).trim()
      : process.version;
  manifest[library.id] = {
    title: library.title,
    node,
    packages: Object.fromEntries(library.packages.map((name) => [name, installedVersion(library, name)])),
    invocations: reports,
  };
  console.log(`captured ${library.id}: ${reports.map((report) => report.scenario).join(', ')}`);
}
collector.closeAllConnections();
collector.close();
const manifestFile = `${FIXTURES}/manifest.json`;
const previous: Record<string, unknown> = existsSync(manifestFile)
  ? (JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>)
  : {};
writeFileSync(manifestFile, `${JSON.stringify({ ...previous, ...manifest }, null, 2)}\n`);
// In the layout `npm run lint` expects of JSON.
execFileSync(`${ROOT}node_modules/.bin/biome`, ['format', '--write', FIXTURES], { stdio: 'inherit' });
