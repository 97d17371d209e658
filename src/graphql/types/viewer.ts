import { type Actor, PERMISSIONS } from '../../domain/permissions.ts';
import { builder } from '../builder.ts';
import { PermissionEnum } from './enums.ts';

const ViewerRef = builder.objectRef<Actor>('Viewer').implement({
  description: 'Who is asking: the actor of the API key, and what the key lets it do.',
  fields: (t) => ({
    actor: t.exposeString('name', {
      description: 'The actor the key stands for; runs it starts are owned by it.',
    }),
    permissions: t.field({
      type: [PermissionEnum],
      description: "The key's permissions, in a fixed order: a screen shows only the actions they allow.",
      resolve: (actor) => PERMISSIONS.filter((permission) => actor.permissions.has(permission)),
    }),
  }),
});

builder.queryFields((t) => ({
  viewer: t.field({
    type: ViewerRef,
    description: 'Who is asking. Any valid key may ask.',
    resolve: (_root, _args, context) => context.actor,
  }),
}));
