// The schema of a request for input is MCP elicitation's flat subset, checked by an allow-list of
// keywords: a client's regex (ReDoS), a $ref (a loop, a fetch) or a combinator never reaches Ajv.
import { PrimitiveSchemaDefinitionSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/domain/errors.ts';
import {
  checkInputSchema,
  checkInputValues,
  checkStoredInputSchema,
} from '../../src/domain/human-request.ts';
import { HumanRequestLimits } from '../../src/domain/human-request-limits.ts';

/** The schema that froze the service: an approver's ordinary sentence backtracked for seconds. */
const REDOS = {
  type: 'object',
  properties: { a: { type: 'string' } },
  allOf: [{ properties: { a: { pattern: '^([a-z]+ ?)*$' } } }],
};
const SENTENCE = 'please deploy the fix to production now!';

/** The refusal a schema meets, or null when it is accepted. */
function refusal(schema: unknown, check = checkInputSchema): InvalidInputError | null {
  try {
    check(schema);
    return null;
  } catch (error) {
    if (error instanceof InvalidInputError) return error;
    throw error;
  }
}

const form = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  ...extra,
});

/** Every field MCP elicitation allows (the SDK's PrimitiveSchemaDefinition), each with all its keywords. */
const FIELDS: Record<string, Record<string, unknown>> = {
  text: {
    type: 'string',
    title: 'Branch',
    description: 'Which branch to deploy',
    minLength: 1,
    maxLength: 40,
    default: 'main',
  },
  email: { type: 'string', format: 'email' },
  uri: { type: 'string', format: 'uri' },
  date: { type: 'string', format: 'date' },
  dateTime: { type: 'string', format: 'date-time' },
  number: { type: 'number', title: 'Ratio', description: 'd', minimum: 0, maximum: 1.5, default: 0.5 },
  integer: { type: 'integer', minimum: 1, maximum: 9, default: 3 },
  boolean: { type: 'boolean', title: 'Force', description: 'd', default: false },
  untitledEnum: { type: 'string', title: 'Region', description: 'd', enum: ['eu', 'us'], default: 'eu' },
  legacyEnum: { type: 'string', enum: ['eu', 'us'], enumNames: ['Europe', 'United States'] },
  titledEnum: {
    type: 'string',
    title: 'Region',
    oneOf: [
      { const: 'eu', title: 'Europe' },
      { const: 'us', title: 'United States' },
    ],
    default: 'us',
  },
  untitledMulti: {
    type: 'array',
    title: 'Regions',
    description: 'd',
    minItems: 1,
    maxItems: 2,
    items: { type: 'string', enum: ['eu', 'us', 'ap'] },
    default: ['eu'],
  },
  titledMulti: {
    type: 'array',
    items: {
      anyOf: [
        { const: 'eu', title: 'Europe' },
        { const: 'us', title: 'United States' },
      ],
    },
  },
};

describe('the schemas accepted: MCP elicitation’s flat subset', () => {
  it.each(Object.entries(FIELDS))('%s: as the SDK has it, and accepted as it is', (_name, field) => {
    // Each shape is one the installed SDK accepts, with nothing of it dropped.
    expect(PrimitiveSchemaDefinitionSchema.parse(field)).toEqual(field);
    const schema = form({ f: field }, { required: ['f'] });
    expect(checkInputSchema(schema)).toBe(schema);
  });

  it('all of them in one schema, with a title, a description and $schema at the root', () => {
    const schema = form(FIELDS, {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      title: 'Deploy',
      description: 'What to deploy',
      required: ['text', 'titledMulti'],
    });
    expect(refusal(schema)).toBeNull();
    // $schema is a label, never resolved: an answer is checked without it.
    expect(
      checkInputValues(checkInputSchema(schema), {
        text: 'main',
        titledMulti: ['eu'],
        dateTime: '2026-03-01T10:00:00Z',
      }),
    ).toBeTruthy();
  });

  const answers: Array<[string, unknown, unknown]> = [
    ['text', 'main', ''],
    ['text', 'x'.repeat(40), 'x'.repeat(41)],
    ['email', 'carol@example.com', 'carol example.com'],
    ['email', 'a@b', 'a@b@c'],
    ['uri', 'https://example.com/a?b=c', 'example.com'],
    ['date', '2026-02-28', '2026-02-30'],
    ['date', '1960-01-01', '2026-2-28'],
    ['dateTime', '2026-02-28T23:59:59.5+01:00', '2026-02-28T24:00:00Z'],
    ['dateTime', '1999-12-31t00:00:00z', '2026-02-28 10:00'],
    ['number', 1.5, 1.6],
    ['integer', 9, 2.5],
    ['boolean', true, 'true'],
    ['untitledEnum', 'us', 'mars'],
    ['legacyEnum', 'eu', 'Europe'],
    ['titledEnum', 'eu', 'Europe'],
    ['untitledMulti', ['eu', 'ap'], ['eu', 'us', 'ap']],
    ['untitledMulti', ['us'], []],
    ['titledMulti', ['us', 'eu'], ['mars']],
  ];
  it.each(answers)('%s: %j is an answer, %j is not', (name, good, bad) => {
    const schema = checkInputSchema(form({ f: FIELDS[name] }, { required: ['f'] }));
    expect(checkInputValues(schema, { f: good })).toEqual({ f: good });
    expect(() => checkInputValues(schema, { f: bad })).toThrow(
      expect.objectContaining({ code: 'INPUT_VALUES_INVALID' }),
    );
  });

  it('a format is checked in linear time, whatever a person types', () => {
    const schema = checkInputSchema(
      form({ e: FIELDS.email, u: FIELDS.uri, d: FIELDS.date, t: FIELDS.dateTime }),
    );
    const long = `${'a.'.repeat(15_000)} `;
    const started = performance.now();
    for (const key of ['e', 'u', 'd', 't']) {
      expect(() => checkInputValues(schema, { [key]: long })).toThrow(
        expect.objectContaining({ code: 'INPUT_VALUES_INVALID' }),
      );
    }
    expect(performance.now() - started).toBeLessThan(500);
  });
});

describe('the schemas refused: an allow-list, each refusal naming the keyword and its path', () => {
  it('the schema that froze the service is refused at once, naming allOf', () => {
    const started = performance.now();
    const refused = refusal(REDOS);
    expect(refused).toMatchObject({ code: 'INPUT_SCHEMA_INVALID', field: 'schema' });
    expect(refused?.message).toMatch(/^schema: allOf is not allowed/);
    expect(performance.now() - started).toBeLessThan(50);
  });

  it('its pattern in the field itself: properties.a.pattern', () => {
    const refused = refusal(form({ a: { type: 'string', pattern: '^([a-z]+ ?)*$' } }));
    expect(refused?.code).toBe('INPUT_SCHEMA_INVALID');
    expect(refused?.message).toContain('properties.a.pattern is not allowed');
  });

  it('a $ref loop and a remote $ref are refused, never resolved', () => {
    const loops = [
      form({ a: { $ref: '#/properties/a' } }),
      form({ a: { type: 'string' } }, { $defs: { x: { $ref: '#/$defs/x' } }, $ref: '#/$defs/x' }),
      form({ a: { type: 'string', $ref: '#' } }),
    ];
    expect(loops.map((schema) => refusal(schema)?.message)).toEqual([
      expect.stringContaining('properties.a.$ref is not allowed'),
      expect.stringContaining('$defs is not allowed'),
      expect.stringContaining('properties.a.$ref is not allowed'),
    ]);
    const remote = refusal(form({ a: { type: 'string', $ref: 'https://schemas.example.com/answer.json' } }));
    expect(remote?.message).toContain('properties.a.$ref is not allowed');
  });

  /** Keywords no place of the subset allows. */
  const REFUSED: Record<string, unknown> = {
    pattern: '^([a-z]+ ?)*$',
    patternProperties: { '^(a+)+$': { type: 'string' } },
    $ref: '#',
    $defs: { x: { type: 'string' } },
    definitions: { x: { type: 'string' } },
    $id: 'https://example.com/s',
    $anchor: 'a',
    $dynamicRef: '#a',
    $recursiveRef: '#',
    allOf: [{}],
    not: {},
    if: {},
    // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword, refused here; never awaited
    then: {},
    else: {},
    dependentSchemas: { a: {} },
    dependentRequired: { a: ['b'] },
    dependencies: { a: ['b'] },
    additionalProperties: { type: 'string', pattern: '^(a+)+$' },
    unevaluatedProperties: false,
    propertyNames: { pattern: '^(a+)+$' },
    additionalItems: false,
    prefixItems: [],
    contains: {},
    uniqueItems: true,
    multipleOf: 1,
    exclusiveMinimum: 0,
    contentMediaType: 'text/plain',
    examples: ['x'],
    nullable: true,
    'x-custom': 1,
  };

  /** Every place of a schema, as a schema with `keyword` there, and the path the refusal names. */
  const places: Array<[string, (keyword: string, value: unknown) => unknown, string]> = [
    ['the root', (k, v) => form({ a: { type: 'string' } }, { [k]: v }), ''],
    ['a text field', (k, v) => form({ a: { type: 'string', [k]: v } }), 'properties.a.'],
    ['a number field', (k, v) => form({ n: { type: 'number', [k]: v } }), 'properties.n.'],
    ['an integer field', (k, v) => form({ n: { type: 'integer', [k]: v } }), 'properties.n.'],
    ['a boolean field', (k, v) => form({ b: { type: 'boolean', [k]: v } }), 'properties.b.'],
    ['an enum field', (k, v) => form({ e: { type: 'string', enum: ['x'], [k]: v } }), 'properties.e.'],
    [
      'a oneOf field',
      (k, v) => form({ o: { type: 'string', oneOf: [{ const: 'x', title: 'X' }], [k]: v } }),
      'properties.o.',
    ],
    [
      'a choice of oneOf',
      (k, v) => form({ o: { type: 'string', oneOf: [{ const: 'x', title: 'X', [k]: v }] } }),
      'properties.o.oneOf[0].',
    ],
    [
      'an array field',
      (k, v) => form({ m: { type: 'array', items: { type: 'string', enum: ['x'] }, [k]: v } }),
      'properties.m.',
    ],
    [
      'its items',
      (k, v) => form({ m: { type: 'array', items: { type: 'string', enum: ['x'], [k]: v } } }),
      'properties.m.items.',
    ],
    [
      'its titled items',
      (k, v) => form({ m: { type: 'array', items: { anyOf: [{ const: 'x', title: 'X' }], [k]: v } } }),
      'properties.m.items.',
    ],
    [
      'a choice of items.anyOf',
      (k, v) => form({ m: { type: 'array', items: { anyOf: [{ const: 'x', title: 'X', [k]: v }] } } }),
      'properties.m.items.anyOf[0].',
    ],
  ];
  const cases = places.flatMap(([place, make, path]) =>
    Object.entries(REFUSED).map(
      ([keyword, value]) => [keyword, place, make(keyword, value), `${path}${keyword}`] as const,
    ),
  );

  it.each(cases)('%s in %s is refused', (_keyword, _place, schema, path) => {
    const refused = refusal(schema);
    expect(refused?.code).toBe('INPUT_SCHEMA_INVALID');
    expect(refused?.message).toContain(`schema: ${path} is not allowed`);
  });

  it('anyOf, oneOf, const, enum and items where they are not allowed', () => {
    const wrong: Array<[unknown, string]> = [
      [form({ a: { type: 'string' } }, { anyOf: [{ required: ['a'] }] }), 'anyOf'],
      [form({ a: { type: 'string' } }, { oneOf: [{ required: ['a'] }] }), 'oneOf'],
      [form({ a: { type: 'string', anyOf: [{ const: 'x', title: 'X' }] } }), 'properties.a.anyOf'],
      [form({ n: { type: 'number', oneOf: [{ const: 1, title: 'one' }] } }), 'properties.n.oneOf'],
      [form({ n: { type: 'integer', enum: [1, 2] } }), 'properties.n.enum'],
      [form({ b: { type: 'boolean', const: true } }), 'properties.b.const'],
      [form({ a: { type: 'string', items: { type: 'string' } } }), 'properties.a.items'],
      // A field is one shape: text keywords never join a choice, nor a choice another.
      [form({ e: { type: 'string', enum: ['x'], minLength: 1 } }), 'properties.e.minLength'],
      [form({ e: { type: 'string', enum: ['x'], oneOf: [] } }), 'properties.e.oneOf'],
      [
        form({ o: { type: 'string', oneOf: [{ const: 'x', title: 'X' }], format: 'email' } }),
        'properties.o.format',
      ],
      [
        // items with anyOf are the titled form, which has no type and no enum.
        form({ m: { type: 'array', items: { type: 'string', enum: ['x'], anyOf: [] } } }),
        'properties.m.items.type',
      ],
      [
        form({ m: { type: 'array', items: { anyOf: [{ const: 'x', title: 'X' }], type: 'string' } } }),
        'properties.m.items.type',
      ],
    ];
    for (const [schema, path] of wrong) {
      expect(refusal(schema)?.message, path).toContain(`schema: ${path} is not allowed`);
    }
  });

  it('nesting, a format outside the list and values of the wrong kind', () => {
    const wrong: Array<[unknown, string]> = [
      ['a string', 'must be {"type":"object","properties":{...}}'],
      [[REDOS], 'must be {"type":"object","properties":{...}}'],
      [{ type: 'array', properties: { a: { type: 'string' } } }, 'type must be "object"'],
      [{ type: 'object' }, 'properties must be an object of fields'],
      [form({}), 'must ask for 1 to 50 fields'],
      [form({ a: { type: 'object', properties: {} } }), 'properties.a.properties is not allowed'],
      [
        form({ a: { type: 'object' } }),
        'properties.a.type must be string, number, integer, boolean or array',
      ],
      [form({ a: { type: ['string', 'null'] } }), 'properties.a.type must be string'],
      [form({ a: 'string' }), 'properties.a must be an object'],
      [
        form({ a: { type: 'string', format: 'regex' } }),
        'properties.a.format must be one of email, uri, date, date-time',
      ],
      [form({ a: { type: 'string', format: 'hostname' } }), 'properties.a.format must be one of'],
      [form({ a: { type: 'string', minLength: -1 } }), 'properties.a.minLength must be a whole number'],
      [form({ a: { type: 'string', maxLength: 1.5 } }), 'properties.a.maxLength must be a whole number'],
      [form({ a: { type: 'string', default: 1 } }), 'properties.a.default must be text'],
      [form({ a: { type: 'string', title: { $ref: '#' } } }), 'properties.a.title must be text'],
      [form({ n: { type: 'number', minimum: '1' } }), 'properties.n.minimum must be a number'],
      [form({ b: { type: 'boolean', default: 'yes' } }), 'properties.b.default must be true or false'],
      [form({ e: { type: 'string', enum: [] } }), 'properties.e.enum must be a list of 1 to 100 entries'],
      [form({ e: { type: 'string', enum: ['x', 1] } }), 'properties.e.enum[1] must be text'],
      [
        form({ e: { type: 'string', enum: ['x', 'y'], enumNames: ['X'] } }),
        'properties.e.enumNames must name each entry',
      ],
      [form({ o: { type: 'string', oneOf: [{ const: 'x' }] } }), 'properties.o.oneOf[0].title must be text'],
      [
        form({ o: { type: 'string', oneOf: [{ const: 1, title: 'one' }] } }),
        'properties.o.oneOf[0].const must be text',
      ],
      [
        form({ m: { type: 'array', items: { type: 'number', enum: ['x'] } } }),
        'properties.m.items.type must be string',
      ],
      [form({ m: { type: 'array' } }), 'properties.m.items must be'],
      [
        form({ m: { type: 'array', items: { type: 'string', enum: ['x'] }, default: 'x' } }),
        'properties.m.default must be a list',
      ],
      [form({ a: { type: 'string' } }, { required: ['b'] }), 'required must list names of its properties'],
      [
        form({ a: { type: 'string' } }, { required: ['a', 'a'] }),
        'required must list names of its properties',
      ],
      [form({ a: { type: 'string' } }, { required: 'a' }), 'required must list names of its properties'],
      [form({ a: { type: 'string' } }, { $schema: 1 }), '$schema must be text'],
      [form({ 'a\u0000': { type: 'string' } }), "a field's name is text"],
      [form({ a: { type: 'string', title: '\uD800' } }), 'properties.a.title must be text'],
    ];
    for (const [schema, message] of wrong) {
      const refused = refusal(schema);
      expect(refused?.code, message).toBe('INPUT_SCHEMA_INVALID');
      expect(refused?.message, message).toContain(message);
    }
  });

  it('a path names odd field names exactly, and quotes little of a long one', () => {
    expect(refusal(form({ 'a b': { type: 'string', pattern: 'x' } }))?.message).toContain(
      'properties["a b"].pattern is not allowed',
    );
    const long = 'k'.repeat(1_000);
    const message = refusal(form({ a: { type: 'string' } }, { [long]: 1 }))?.message ?? '';
    expect(message).toContain(`["${'k'.repeat(64)}…"] is not allowed`);
    expect(message.length).toBeLessThan(300);
  });

  it('a cycle or nesting too deep for JSON is refused, not thrown', () => {
    const cyclic: Record<string, unknown> = form({ a: { type: 'string' } });
    cyclic.self = cyclic;
    expect(refusal(cyclic)?.message).toBe('schema: must be JSON');
    let deep: Record<string, unknown> = { type: 'string' };
    for (let depth = 0; depth < 20_000; depth += 1) deep = { not: deep };
    expect(refusal(form({ a: { type: 'string' } }, { not: deep }))?.code).toBe('INPUT_SCHEMA_INVALID');
  });
});

describe('the limits of a schema', () => {
  const fields = (count: number) =>
    Object.fromEntries(Array.from({ length: count }, (_, index) => [`f${index}`, { type: 'boolean' }]));
  const options = (count: number) => Array.from({ length: count }, (_, index) => `o${index}`);
  const choices = (count: number) => options(count).map((value) => ({ const: value, title: value }));

  it(`at most ${HumanRequestLimits.schemaProperties} fields`, () => {
    expect(refusal(form(fields(HumanRequestLimits.schemaProperties)))).toBeNull();
    expect(refusal(form(fields(HumanRequestLimits.schemaProperties + 1)))?.message).toContain(
      'must ask for 1 to 50 fields',
    );
  });

  it(`at most ${HumanRequestLimits.schemaChoices} choices a field, in each form of a choice`, () => {
    const at = HumanRequestLimits.schemaChoices;
    const shapes = [
      (n: number) => ({ type: 'string', enum: options(n) }),
      (n: number) => ({ type: 'string', enum: options(n), enumNames: options(n) }),
      (n: number) => ({ type: 'string', oneOf: choices(n) }),
      (n: number) => ({ type: 'array', items: { type: 'string', enum: options(n) } }),
      (n: number) => ({ type: 'array', items: { anyOf: choices(n) } }),
    ];
    for (const shape of shapes) {
      expect(refusal(form({ c: shape(at) }))).toBeNull();
      expect(refusal(form({ c: shape(at + 1) }))?.message).toMatch(/must be a list of 1 to 100 entries/);
    }
  });

  it(`at most ${HumanRequestLimits.schemaBytes} bytes, and names of at most ${HumanRequestLimits.fieldNameLength} characters`, () => {
    const big = form({ a: { type: 'string', description: 'é'.repeat(HumanRequestLimits.schemaBytes / 2) } });
    expect(refusal(big)?.message).toBe('schema: is over 16384 bytes');
    expect(
      refusal(form({ ['n'.repeat(HumanRequestLimits.fieldNameLength)]: { type: 'boolean' } })),
    ).toBeNull();
    expect(
      refusal(form({ ['n'.repeat(HumanRequestLimits.fieldNameLength + 1)]: { type: 'boolean' } }))?.message,
    ).toContain("a field's name is text of 1 to 100 characters");
    expect(refusal(form({ '': { type: 'boolean' } }))?.message).toContain("a field's name is text");
  });
});

describe('a schema stored before the allow-list', () => {
  it('is checked before an answer: refused with INPUT_SCHEMA_INVALID, at once, never compiled', () => {
    const started = performance.now();
    const refused = refusal(REDOS, checkStoredInputSchema);
    expect(refused).toMatchObject({ code: 'INPUT_SCHEMA_INVALID', field: null });
    expect(refused?.message).toBe(
      "this request's schema: allOf is not allowed: the schema may have only $schema, type, title, description, properties, required; it cannot be answered, only declined",
    );
    expect(refused?.message).not.toContain(SENTENCE);
    expect(performance.now() - started).toBeLessThan(50);
    expect(refusal(form({ a: { $ref: '#/properties/a' } }), checkStoredInputSchema)?.code).toBe(
      'INPUT_SCHEMA_INVALID',
    );
  });

  it('one still within the subset is answered as before', () => {
    const schema = checkStoredInputSchema(form({ a: FIELDS.text }, { required: ['a'] }));
    expect(checkInputValues(schema, { a: SENTENCE.slice(0, 40) })).toEqual({ a: SENTENCE.slice(0, 40) });
  });
});
