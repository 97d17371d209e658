import { type GraphQLResolveInfo, Kind, type SelectionSetNode } from 'graphql';

/** Whether the query asks, anywhere below this field, for any of these fields (fragments included). */
export function selectsAnyField(info: GraphQLResolveInfo, names: readonly string[]): boolean {
  const wanted = new Set(names);
  const seenFragments = new Set<string>();
  const visit = (set: SelectionSetNode | undefined): boolean =>
    (set?.selections ?? []).some((selection) => {
      if (selection.kind === Kind.FIELD)
        return wanted.has(selection.name.value) || visit(selection.selectionSet);
      if (selection.kind === Kind.INLINE_FRAGMENT) return visit(selection.selectionSet);
      const name = selection.name.value;
      if (seenFragments.has(name)) return false;
      seenFragments.add(name);
      return visit(info.fragments[name]?.selectionSet);
    });
  return info.fieldNodes.some((node) => visit(node.selectionSet));
}
