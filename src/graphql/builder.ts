import SchemaBuilder from '@pothos/core';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import type { JsonValue } from '../domain/tool-result.ts';
import type { Context } from './context.ts';
import { badUserInput } from './errors.ts';

/** The types `node(id)` resolves: each registers its name through `nodeTypename`. */
const nodeTypenames = new Set<string>();

export function nodeTypename<Name extends string>(name: Name): Name {
  nodeTypenames.add(name);
  return name;
}

export const builder = new SchemaBuilder<{
  Context: Context;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    SafeInt: { Input: number; Output: number };
    JSON: { Input: JsonValue; Output: JsonValue };
    ID: { Input: string; Output: string | number };
  };
  DefaultFieldNullability: false;
}>({
  plugins: [ErrorsPlugin, RelayPlugin],
  errors: { defaultTypes: [] },
  // Fields are non-null unless declared otherwise, so generated clients are exact.
  defaultFieldNullability: false,
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    decodeGlobalID: (globalID: string) => {
      const decoded = Buffer.from(globalID, 'base64url').toString('utf8');
      const separator = decoded.indexOf(':');
      const typename = decoded.slice(0, separator);
      const id = decoded.slice(separator + 1);
      // A type that is not a node (McpServer, Query, ...) names nothing node(id) can load.
      if (separator < 1 || !id || !nodeTypenames.has(typename)) {
        throw badUserInput(`${JSON.stringify(globalID)} is not a global id`, 'id');
      }
      return { typename, id };
    },
    encodeGlobalID: (typename: string, id: string | number | bigint) =>
      Buffer.from(`${typename}:${id}`).toString('base64url'),
  },
});

builder.queryType({});
builder.mutationType({});
