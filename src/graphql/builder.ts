import SchemaBuilder from '@pothos/core';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import type { JsonValue } from '../domain/tool-result.ts';
import type { Context } from './context.ts';
import { decodeGlobalId, encodeGlobalId } from './ids.ts';

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
    decodeGlobalID: decodeGlobalId,
    encodeGlobalID: encodeGlobalId,
  },
});

builder.queryType({});
builder.mutationType({});
