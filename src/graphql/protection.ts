import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { NoSchemaIntrospectionCustomRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { RequestLimits } from '../domain/limits.ts';
import { requestTooLarge } from './errors.ts';

/**
 * After a body is refused for its size the rest of it is never read: close the
 * connection rather than keep it alive, which would make Node read and discard it all.
 */
function closeAfterOversizedBody(): Plugin {
  return {
    onResponse: ({ response }) => {
      if (response.status === requestTooLarge.status) response.headers.set('connection', 'close');
    },
  };
}

function disableIntrospection(): Plugin {
  return {
    onValidate: ({ addValidationRule }) => {
      addValidationRule(NoSchemaIntrospectionCustomRule);
    },
  };
}

/**
 * The headers that make a GET or form-encoded request one a browser sends to
 * another origin only after a CORS preflight: then it cannot be forged by a
 * page of another site. The key's own header is one: keys travel in
 * `Authorization`, never in cookies, so a request a page could forge carries
 * no key and is refused (401) anyway, and the clients frontends use (urql
 * sends queries as GET) need no header of their own. Yoga's and Apollo's
 * conventional headers are kept for requests without a key (GraphiQL's
 * introspection in development).
 */
export const CSRF_SAFE_HEADERS = ['authorization', 'x-graphql-yoga-csrf', 'apollo-require-preflight'];

/**
 * Depth, cost, alias, token and directive limits, CSRF prevention; no introspection
 * in production. The body limit is yoga's own (`maxRequestBodySize`), which counts
 * bytes as they arrive, whatever the framing.
 */
export function protectionPlugins(production: boolean): Plugin[] {
  return [
    closeAfterOversizedBody(),
    useCSRFPrevention({ requestHeaders: CSRF_SAFE_HEADERS }),
    // Depth first: a deep query is also a costly one, and "too deep" is the clearer answer.
    maxDepthPlugin({ n: RequestLimits.maxDepth, exposeLimits: true, flattenFragments: true }) as Plugin,
    EnvelopArmorPlugin({
      maxDepth: { enabled: false },
      // A fragment costs what its fields cost: spreading one is not a level of nesting (as for depth above).
      costLimit: { maxCost: RequestLimits.maxCost, exposeLimits: true, flattenFragments: true },
      maxAliases: { n: RequestLimits.maxAliases, exposeLimits: true },
      maxTokens: { n: RequestLimits.maxTokens, exposeLimits: true },
      maxDirectives: { n: RequestLimits.maxDirectives, exposeLimits: true },
      // Suggestions are stripped from every error in production (errors.ts), not only validation's.
      blockFieldSuggestion: { enabled: false },
    }) as Plugin,
    ...(production ? [disableIntrospection()] : []),
  ];
}
