import type { GraphiQLOptions, Plugin } from 'graphql-yoga';

/**
 * GraphiQL from the service itself. Yoga's own page loads GraphiQL from a CDN
 * (a blank page where the CDN cannot be reached); @graphql-yoga/render-graphiql
 * holds the same GraphiQL as strings. Its own page inlines all of it (9 MB of
 * HTML on every visit), so the page here is small and names the pieces as
 * assets this service answers under ASSETS_PATH, cacheable, each from the
 * package: the script, the stylesheet, the three editor workers, the icon.
 */

/** Where the assets are answered: under the GraphQL endpoint, beside nothing else. */
export const GRAPHIQL_ASSETS_PATH = '/graphql/graphiql/';

/** The Headers tab as GraphiQL first shows it: how every request carries its key (README, "Keys"). */
export const GRAPHIQL_HEADERS_TEMPLATE = { Authorization: 'Bearer <your API key>' } as const;

/** The first query GraphiQL shows: who the key stands for, then the newest runs with their tool outcomes. */
export const GRAPHIQL_DEFAULT_QUERY = `# Put your API key in the Headers tab below, then run this query.
# Tool outcomes: OK, FAILED and CANCELLED; a cancel never raises failureRate.
{
  viewer {
    actor
    permissions
  }
  runs(first: 5) {
    totalCount
    edges {
      node {
        uuid
        status
        terminationReason
        configuration
        createdAt
        toolOutcomeCounts { ok failed cancelled total failureRate }
      }
    }
  }
}
`;

export const GRAPHIQL_OPTIONS: GraphiQLOptions = {
  title: 'runledger GraphiQL',
  headers: JSON.stringify(GRAPHIQL_HEADERS_TEMPLATE, null, 2),
  defaultQuery: GRAPHIQL_DEFAULT_QUERY,
  // The key typed into the Headers tab is not kept in the browser's storage.
  shouldPersistHeaders: false,
  defaultEditorToolsVisibility: 'headers',
};

const asset = (name: string) => `${GRAPHIQL_ASSETS_PATH}${name}`;

const WORKERS = {
  editorWorkerService: 'editor.worker.js',
  json: 'json.worker.js',
  graphql: 'graphql.worker.js',
} as const;

/** Before GraphiQL's script: where the editor finds its workers (module workers, same origin). */
const SETUP_SCRIPT = `self.MonacoEnvironment = {
  globalAPI: false,
  getWorkerUrl: function (moduleId, label) {
    return ${JSON.stringify(Object.fromEntries(Object.entries(WORKERS).map(([label, name]) => [label, asset(name)])))}[label];
  },
};
`;

/** After it: GraphiQL with the options the page carries as JSON. */
const START_SCRIPT = `YogaGraphiQL.renderYogaGraphiQL(
  document.querySelector('#root'),
  JSON.parse(document.getElementById('graphiql-options').textContent),
);
`;

/** JSON inside a <script> element: no "</script>" or "<!--" can end it early. */
const scriptJson = (value: unknown) =>
  JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');

const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The page at /graphql for a browser (yoga's `renderGraphiQL`): every script and style from ASSETS_PATH. */
export function renderGraphiQLPage(options: GraphiQLOptions): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${escapeHtml(options.title ?? 'GraphiQL')}</title>
    <link rel="icon" href="${asset('favicon.ico')}" />
    <link rel="stylesheet" href="${asset('graphiql.css')}" />
  </head>
  <body id="body" class="no-focus-outline">
    <noscript>You need to enable JavaScript to run GraphiQL.</noscript>
    <div id="root"></div>
    <script type="application/json" id="graphiql-options">${scriptJson(options)}</script>
    <script src="${asset('setup.js')}"></script>
    <script src="${asset('graphiql.js')}"></script>
    <script src="${asset('start.js')}"></script>
  </body>
</html>
`;
}

interface Asset {
  body: string | Uint8Array<ArrayBuffer>;
  type: string;
}

const JAVASCRIPT = 'text/javascript; charset=utf-8';

/** The assets by name, read from the package on the first request for one (9 MB that a service without browsers never loads). */
async function loadAssets(): Promise<ReadonlyMap<string, Asset>> {
  const graphiql = await import('@graphql-yoga/render-graphiql/graphiql');
  const icon = graphiql.favicon.replace(/^data:[^,]*;base64,/, '');
  return new Map<string, Asset>([
    ['setup.js', { body: SETUP_SCRIPT, type: JAVASCRIPT }],
    ['graphiql.js', { body: graphiql.js, type: JAVASCRIPT }],
    ['start.js', { body: START_SCRIPT, type: JAVASCRIPT }],
    [WORKERS.editorWorkerService, { body: graphiql.editorWorkerService, type: JAVASCRIPT }],
    [WORKERS.json, { body: graphiql.jsonWorker, type: JAVASCRIPT }],
    [WORKERS.graphql, { body: graphiql.graphqlWorker, type: JAVASCRIPT }],
    ['graphiql.css', { body: graphiql.css, type: 'text/css; charset=utf-8' }],
    ['favicon.ico', { body: new Uint8Array(Buffer.from(icon, 'base64')), type: 'image/x-icon' }],
  ]);
}

/** Answers GET and HEAD under GRAPHIQL_ASSETS_PATH: an asset, or 404 for any other name. */
export function useGraphiQLAssets(): Plugin {
  let assets: Promise<ReadonlyMap<string, Asset>> | undefined;
  return {
    async onRequest({ url, request, endResponse }) {
      if (!url.pathname.startsWith(GRAPHIQL_ASSETS_PATH)) return;
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        endResponse(new Response(null, { status: 405, headers: { allow: 'GET, HEAD' } }));
        return;
      }
      assets ??= loadAssets();
      const found = (await assets).get(url.pathname.slice(GRAPHIQL_ASSETS_PATH.length));
      if (!found) {
        endResponse(new Response('not found', { status: 404, headers: { 'content-type': 'text/plain' } }));
        return;
      }
      endResponse(
        new Response(request.method === 'HEAD' ? null : found.body, {
          status: 200,
          headers: {
            'content-type': found.type,
            'cache-control': 'public, max-age=3600',
            'x-content-type-options': 'nosniff',
          },
        }),
      );
    },
  };
}
