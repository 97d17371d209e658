import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readTrustedDocuments, type TrustedDocuments } from './graphql/trusted-documents.ts';

/**
 * The web viewer (web/), built by `npm run build` into dist/web and served by
 * the service itself at `/`: every asset comes from this process, none from
 * another host, so the screen works on a machine with no network.
 */

/** The page's own routes: each answers the viewer's index.html, which routes in the browser. */
export const VIEWER_ROUTES = ['/', '/sign-in', '/runs', '/stats', '/servers', '/inbox', '/keys'] as const;

/** The manifest of the viewer's operations (GraphQL Code Generator's persisted documents), beside its files. */
export const VIEWER_DOCUMENTS_FILE = 'persisted-documents.json';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

/** Encodings the build writes beside each text file, best first. */
const ENCODINGS = [{ name: 'br' }, { name: 'gzip' }] as const;
const ENCODING_SUFFIX: Readonly<Record<(typeof ENCODINGS)[number]['name'], string>> = {
  br: '.br',
  gzip: '.gz',
};

/**
 * What the browser may do on these pages: load and connect only to this
 * origin, never be framed (the Cancel button is not for clickjacking). The
 * chart library sets inline style attributes, hence 'unsafe-inline' for styles alone.
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** dist/web, from src/viewer.ts (development) or from dist/src/viewer.js (the compiled service). */
export function viewerDirectory(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  // Beside the compiled service, dist/web holds the build's stamp; beside the sources, web/ is the source.
  const compiled = normalize(join(here, '..', 'web'));
  return existsSync(join(compiled, '.built')) ? compiled : normalize(join(here, '..', 'dist', 'web'));
}

/** The viewer's operations by hash, as its build registered them; empty when it is not built. */
export function viewerDocuments(directory = viewerDirectory()): TrustedDocuments {
  const file = join(directory, VIEWER_DOCUMENTS_FILE);
  return existsSync(file) ? readTrustedDocuments(file, "the viewer's build") : new Map();
}

function isViewerRoute(path: string): boolean {
  return VIEWER_ROUTES.some((route) => path === route || (route !== '/' && path.startsWith(`${route}/`)));
}

/**
 * Answers GET and HEAD for the viewer's pages and files, or returns null for
 * every other request (GraphQL, OTLP, health). Files are read once and kept:
 * the build's assets are content-hashed, so they are cached for a year.
 */
export function createViewerHandler(
  directory = viewerDirectory(),
): (request: Request, path: string) => Response | null {
  // Only the build's own files are kept (a fixed set): a request for a missing one is answered without
  // remembering it, so made-up names cannot grow the cache.
  const cache = new Map<string, Uint8Array>();
  const read = (relative: string): Uint8Array | null => {
    const kept = cache.get(relative);
    if (kept) return kept;
    const file = join(directory, relative);
    if (!existsSync(file) || !statSync(file).isFile()) return null;
    const body = readFileSync(file);
    cache.set(relative, body);
    return body;
  };
  return (request, path) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return null;
    const isAsset = path.startsWith('/assets/') || path === '/favicon.svg';
    if (!isAsset && !isViewerRoute(path)) return null;
    let relative = 'index.html';
    if (isAsset) {
      try {
        relative = normalize(decodeURIComponent(path)).slice(1);
      } catch {
        return notFound();
      }
      if (relative.startsWith('..') || relative.includes(`..${sep}`)) return notFound();
    }
    const body = read(relative);
    // The build compressed each text file (brotli and gzip): the smallest the browser accepts is sent.
    const accepted = request.headers.get('accept-encoding') ?? '';
    const encoding = ENCODINGS.find(
      ({ name }) => new RegExp(`\\b${name}\\b`).test(accepted) && read(`${relative}${ENCODING_SUFFIX[name]}`),
    )?.name;
    if (!body) {
      if (isAsset) return notFound();
      return new Response('The viewer is not built: run `npm run build`, then start the service again.\n', {
        status: 503,
        headers: { 'content-type': 'text/plain; charset=utf-8' },
      });
    }
    const sent = encoding ? (read(`${relative}${ENCODING_SUFFIX[encoding]}`) ?? body) : body;
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      vary: 'accept-encoding',
      ...(encoding ? { 'content-encoding': encoding } : {}),
      'content-type': CONTENT_TYPES[extname(relative)] ?? 'application/octet-stream',
      'cache-control':
        isAsset && path.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    };
    return new Response(request.method === 'HEAD' ? null : (sent as BodyInit), { status: 200, headers });
  };
}

function notFound(): Response {
  return new Response('Not found\n', {
    status: 404,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
  });
}
