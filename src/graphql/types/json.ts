import { Kind, type ValueNode } from 'graphql';
import type { JsonValue } from '../../domain/tool-result.ts';
import { builder } from '../builder.ts';
import { badUserInput } from '../errors.ts';

function fromLiteral(node: ValueNode, variables: Record<string, unknown> | null | undefined): JsonValue {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
    case Kind.FLOAT:
      return fromValue(Number(node.value));
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map((v) => fromLiteral(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, fromLiteral(f.value, variables)]));
    case Kind.VARIABLE:
      return fromValue(variables?.[node.name.value] ?? null);
    default:
      throw badUserInput('JSON cannot hold an enum value');
  }
}

function fromValue(value: unknown): JsonValue {
  if (typeof value === 'number' && !Number.isFinite(value)) throw badUserInput('JSON numbers must be finite');
  return value as JsonValue;
}

builder.scalarType('JSON', {
  description: 'Any JSON value.',
  serialize: (value) => value,
  parseValue: fromValue,
  parseLiteral: fromLiteral,
});
