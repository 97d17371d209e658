import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { NoSchemaIntrospectionCustomRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/** Limits on what one request may ask; each refusal has its own code (see error-codes.ts). */
export const RequestLimits = {
  maxDepth: 12,
  maxCost: 50_000,
  maxAliases: 15,
  maxTokens: 5_000,
  maxDirectives: 20,
  /** A request body: room for a batch of 1,000 steps or a 10 MB tool result, which is bounded, not refused. */
  maxBodyBytes: 16 * 1024 * 1024,
} as const;

function refuseLargeBodies(): Plugin {
  return {
    onRequest: ({ request, endResponse, fetchAPI }) => {
      const length = Number(request.headers.get('content-length') ?? 0);
      if (length > RequestLimits.maxBodyBytes) {
        endResponse(
          new fetchAPI.Response(
            JSON.stringify({
              errors: [
                {
                  message: `the request body is over ${RequestLimits.maxBodyBytes} bytes`,
                  extensions: { code: 'REQUEST_TOO_LARGE' },
                },
              ],
            }),
            { status: 413, headers: { 'content-type': 'application/json' } },
          ),
        );
      }
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

/** Depth, cost, alias, token and directive limits, a body limit, CSRF prevention; no introspection in production. */
export function protectionPlugins(production: boolean): Plugin[] {
  return [
    refuseLargeBodies(),
    useCSRFPrevention({ requestHeaders: ['x-graphql-yoga-csrf'] }),
    // Depth first: a deep query is also a costly one, and "too deep" is the clearer answer.
    maxDepthPlugin({ n: RequestLimits.maxDepth, exposeLimits: true, flattenFragments: true }) as Plugin,
    EnvelopArmorPlugin({
      maxDepth: { enabled: false },
      costLimit: { maxCost: RequestLimits.maxCost, exposeLimits: true },
      maxAliases: { n: RequestLimits.maxAliases, exposeLimits: true },
      maxTokens: { n: RequestLimits.maxTokens, exposeLimits: true },
      maxDirectives: { n: RequestLimits.maxDirectives, exposeLimits: true },
      blockFieldSuggestion: { enabled: production },
    }) as Plugin,
    ...(production ? [disableIntrospection()] : []),
  ];
}
