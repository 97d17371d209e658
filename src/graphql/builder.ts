import SchemaBuilder from '@pothos/core';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import type { IsoInstant } from '../domain/date-time.ts';
import type { JsonValue } from '../domain/tool-result.ts';
import type { Context } from './context.ts';
import { decodeGlobalId, encodeGlobalId } from './ids.ts';

const capitalised = (name: string) => `${name.charAt(0).toUpperCase()}${name.slice(1)}`;

export const builder = new SchemaBuilder<{
  Context: Context;
  Scalars: {
    // Output: a Date, or an instant already written as the scalar writes it (timeline lines).
    DateTime: { Input: Date; Output: Date | IsoInstant };
    SafeInt: { Input: number; Output: number };
    JSON: { Input: JsonValue; Output: JsonValue };
    ID: { Input: string; Output: string | number };
  };
  DefaultFieldNullability: false;
}>({
  plugins: [ErrorsPlugin, RelayPlugin],
  errors: {
    defaultTypes: [],
    // Named after the mutation (StartRunResult, StartRunSuccess), as a client's generated types read best.
    defaultUnionOptions: { name: ({ fieldName }) => `${capitalised(fieldName)}Result` },
    defaultResultOptions: { name: ({ fieldName }) => `${capitalised(fieldName)}Success` },
  },
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
