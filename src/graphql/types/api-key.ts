import type { ApiKeyRow } from '../../db/api-keys.ts';
import type { Permission } from '../../domain/permissions.ts';
import { listKeys, makeKey, revokeKey } from '../../ledger/api-keys.ts';
import { builder } from '../builder.ts';
import { PermissionEnum } from './enums.ts';
import { SERVER_ERRORS } from './errors.ts';

const ApiKeyRef = builder.objectRef<ApiKeyRow>('ApiKey').implement({
  description:
    'An API key as stored: who it acts as and what it may do, never the key itself (only its hash is kept).',
  fields: (t) => ({
    id: t.id({
      description: 'What revokeApiKey and `npm run keys -- revoke` take.',
      resolve: (key) => String(key.id),
    }),
    prefix: t.string({
      description: 'The first characters of the key, to recognise it.',
      resolve: (key) => key.keyPrefix,
    }),
    actor: t.exposeString('actor'),
    permissions: t.field({ type: [PermissionEnum], resolve: (key) => key.permissions as Permission[] }),
    createdAt: t.field({ type: 'DateTime', resolve: (key) => key.createdAt }),
    revokedAt: t.field({ type: 'DateTime', nullable: true, resolve: (key) => key.revokedAt }),
  }),
});

const NewApiKeyRef = builder.objectRef<{ key: string; row: ApiKeyRow }>('NewApiKey').implement({
  fields: (t) => ({
    key: t.exposeString('key', {
      description:
        'The key: shown this once, never again (only its hash is stored). Sent as Authorization: Bearer <key>.',
    }),
    apiKey: t.field({ type: ApiKeyRef, resolve: (made) => made.row }),
  }),
});

const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
  fields: (t) => ({
    actor: t.string({
      required: true,
      description: 'Who the key acts as: letters, digits and . @ - _; the owner of the runs it starts.',
    }),
    permissions: t.field({ type: [PermissionEnum], required: true, description: 'At least one.' }),
  }),
});

builder.queryFields((t) => ({
  apiKeys: t.field({
    type: [ApiKeyRef],
    description: 'Every API key, active and revoked, oldest first (manage_keys).',
    resolve: (_root, _args, context) => listKeys(context),
  }),
}));

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: NewApiKeyRef,
    description: 'Makes a key while the service runs (manage_keys): the answer holds the key, once.',
    errors: { types: SERVER_ERRORS },
    args: { input: t.arg({ type: CreateApiKeyInput, required: true }) },
    resolve: (_root, { input }, context) => makeKey(context, input),
  }),
  revokeApiKey: t.field({
    type: ApiKeyRef,
    description:
      'Revokes a key by its id (manage_keys): the next request with it is refused, on every instance; a live stream with it ends within a second. KEY_NOT_FOUND for no active key of that id; LAST_KEY_MANAGER for the last active key with manage_keys.',
    errors: { types: SERVER_ERRORS },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, context) => revokeKey(context, String(id)),
  }),
}));
