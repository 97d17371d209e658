import { describe, expect, it } from 'vitest';
import {
  ARTIFACTS_OMITTED_TITLE,
  boundArtifacts,
  boundContent,
  boundToolResult,
  MAX_ARTIFACT_BYTES,
  MAX_ARTIFACT_DEPTH,
  MAX_CONTENT_BYTES,
  RepairCount,
  repairFacts,
  repairJson,
  repairText,
  TRUNCATION_MARKER,
  toValidUtf8,
} from '../../src/domain/bounding.ts';
import { TOOL_OUTCOMES } from '../../src/domain/tool-outcome.ts';
import {
  type JsonValue,
  type ToolArtifact,
  ToolResult,
  type WriteTarget,
} from '../../src/domain/tool-result.ts';

const encoder = new TextEncoder();
const byteLength = (text: string): number => encoder.encode(text).length;
const LIMIT = 50_000;
const REPLACEMENT = '\uFFFD';

/** The part of a truncated output before the marker; fails when there is no marker. */
function keptPart(output: string): string {
  expect(output.endsWith(TRUNCATION_MARKER)).toBe(true);
  return output.slice(0, output.length - TRUNCATION_MARKER.length);
}

/** `levels` arrays nested around `leaf`: nest(0, x) is x, nest(2, x) is [[x]]. */
function nest(levels: number, leaf: JsonValue): JsonValue {
  let value = leaf;
  for (let i = 0; i < levels; i += 1) value = [value];
  return value;
}

function omittedArtifact(artifacts: readonly ToolArtifact[]): void {
  expect(artifacts).toHaveLength(1);
  const [only] = artifacts;
  expect(only?.title).toBe('Artifacts omitted');
  expect(only?.type).toBe('text');
  expect(typeof only?.content).toBe('string');
}

describe('bounding constants', () => {
  it('are the limits of the spec', () => {
    expect(MAX_CONTENT_BYTES).toBe(50_000);
    expect(MAX_ARTIFACT_BYTES).toBe(50_000);
    expect(MAX_ARTIFACT_DEPTH).toBe(64);
    expect(ARTIFACTS_OMITTED_TITLE).toBe('Artifacts omitted');
  });

  it('the truncation marker is exactly the one of the spec', () => {
    expect(TRUNCATION_MARKER).toBe('\n…[tool result truncated at 50000 bytes]');
  });
});

describe('boundContent', () => {
  it('leaves short text unchanged', () => {
    expect(boundContent('hello, world')).toBe('hello, world');
    expect(boundContent('')).toBe('');
    expect(boundContent('Grüße € 😀')).toBe('Grüße € 😀');
  });

  it('cuts ASCII text over 50,000 bytes to exactly 50,000 bytes followed by the marker', () => {
    const input = 'a'.repeat(60_000);
    expect(boundContent(input)).toBe(`${'a'.repeat(LIMIT)}${TRUNCATION_MARKER}`);
  });

  it('keeps a prefix of the input no longer than 50,000 bytes', () => {
    const input = 'xyz'.repeat(40_000);
    const kept = keptPart(boundContent(input));
    expect(byteLength(kept)).toBeLessThanOrEqual(LIMIT);
    expect(input.startsWith(kept)).toBe(true);
    expect(kept).toHaveLength(LIMIT);
  });

  it('does not truncate text of exactly 50,000 bytes', () => {
    const ascii = 'a'.repeat(LIMIT);
    expect(boundContent(ascii)).toBe(ascii);
    const endsMultiByte = `${'a'.repeat(LIMIT - 3)}€`;
    expect(byteLength(endsMultiByte)).toBe(LIMIT);
    expect(boundContent(endsMultiByte)).toBe(endsMultiByte);
    const endsEmoji = `${'a'.repeat(LIMIT - 4)}😀`;
    expect(byteLength(endsEmoji)).toBe(LIMIT);
    expect(boundContent(endsEmoji)).toBe(endsEmoji);
  });

  it('truncates text of 50,001 bytes', () => {
    const input = 'a'.repeat(LIMIT + 1);
    expect(boundContent(input)).toBe(`${'a'.repeat(LIMIT)}${TRUNCATION_MARKER}`);
  });

  it('drops, not splits, a multi-byte character that would end past 50,000 bytes (50,001 bytes in all)', () => {
    const input = `${'a'.repeat(LIMIT - 2)}€`;
    expect(byteLength(input)).toBe(LIMIT + 1);
    expect(boundContent(input)).toBe(`${'a'.repeat(LIMIT - 2)}${TRUNCATION_MARKER}`);
  });

  const straddlers = [
    { name: "'é' (2 bytes)", char: 'é', bytes: 2 },
    { name: "'€' (3 bytes)", char: '€', bytes: 3 },
    { name: 'an emoji (4 bytes)', char: '😀', bytes: 4 },
  ];

  for (const { name, char, bytes } of straddlers) {
    it(`never splits ${name} straddling the 50,000 byte boundary, at any offset`, () => {
      expect(byteLength(char)).toBe(bytes);
      for (let overhang = 1; overhang < bytes; overhang += 1) {
        // The character starts `bytes - overhang` bytes before the limit and ends `overhang` bytes after it.
        const before = 'a'.repeat(LIMIT - (bytes - overhang));
        const input = `${before}${char}${'b'.repeat(100)}`;
        const kept = keptPart(boundContent(input));
        expect(kept.includes(REPLACEMENT)).toBe(false);
        expect(byteLength(kept)).toBeLessThanOrEqual(LIMIT);
        expect(kept).toBe(before);
        const next = input.slice(kept.length).codePointAt(0);
        expect(next).toBeDefined();
        expect(byteLength(kept) + byteLength(String.fromCodePoint(next ?? 0))).toBeGreaterThan(LIMIT);
      }
    });

    it(`keeps ${name} that ends exactly at 50,000 bytes`, () => {
      const before = 'a'.repeat(LIMIT - bytes);
      const input = `${before}${char}${'b'.repeat(100)}`;
      expect(keptPart(boundContent(input))).toBe(`${before}${char}`);
    });
  }

  it('cuts text made only of multi-byte characters on a character boundary, as close to the limit as it can', () => {
    for (const char of ['é', '€', '😀']) {
      const input = char.repeat(30_000);
      const kept = keptPart(boundContent(input));
      expect(kept.includes(REPLACEMENT)).toBe(false);
      expect(input.startsWith(kept)).toBe(true);
      const size = byteLength(kept);
      expect(size).toBeLessThanOrEqual(LIMIT);
      expect(size + byteLength(char)).toBeGreaterThan(LIMIT);
    }
  });

  it('turns lone surrogates into U+FFFD', () => {
    expect(boundContent('a\uD800b')).toBe(`a${REPLACEMENT}b`);
    expect(boundContent('a\uDC00b')).toBe(`a${REPLACEMENT}b`);
    expect(boundContent('\uD83D')).toBe(REPLACEMENT);
    expect(boundContent('end\uD83D')).toBe(`end${REPLACEMENT}`);
    // A surrogate pair stays one character.
    expect(boundContent('\uD83D\uDE00')).toBe('😀');
  });

  it('counts a repaired lone surrogate as the 3 bytes of U+FFFD when cutting', () => {
    const input = `${'a'.repeat(LIMIT - 2)}\uD800tail`;
    expect(boundContent(input)).toBe(`${'a'.repeat(LIMIT - 2)}${TRUNCATION_MARKER}`);
    const fits = `${'a'.repeat(LIMIT - 3)}\uD800`;
    expect(boundContent(fits)).toBe(`${'a'.repeat(LIMIT - 3)}${REPLACEMENT}`);
  });

  it('decodes valid UTF-8 bytes', () => {
    expect(boundContent(encoder.encode('Grüße € 😀'))).toBe('Grüße € 😀');
  });

  it('repairs invalid UTF-8 bytes to U+FFFD', () => {
    expect(boundContent(new Uint8Array([0x61, 0xff, 0x62]))).toBe(`a${REPLACEMENT}b`);
    expect(boundContent(new Uint8Array([0x61, 0xe2, 0x82]))).toBe(`a${REPLACEMENT}`);
    expect(boundContent(new Uint8Array([0x80, 0x61]))).toBe(`${REPLACEMENT}a`);
    // An overlong encoding of '/' is not '/'.
    expect(boundContent(new Uint8Array([0xc0, 0xaf]))).not.toContain('/');
  });

  it('truncates bytes over 50,000 like text', () => {
    const bytes = new Uint8Array(LIMIT + 10).fill(0x61);
    expect(boundContent(bytes)).toBe(`${'a'.repeat(LIMIT)}${TRUNCATION_MARKER}`);
  });

  it('always yields well-formed text', () => {
    const outputs = [
      boundContent('x\uDFFFy'),
      boundContent(new Uint8Array([0xf0, 0x9f, 0x98])),
      boundContent(`${'a'.repeat(LIMIT - 1)}😀`),
    ];
    for (const output of outputs) expect(output.isWellFormed()).toBe(true);
  });

  it('keeps a leading U+FEFF when it truncates: the kept part is a prefix of the input', () => {
    const input = `\uFEFF${'a'.repeat(60_000)}`;
    const kept = keptPart(boundContent(input));
    expect(input.startsWith(kept)).toBe(true);
    expect(byteLength(kept)).toBe(LIMIT);
  });
});

describe('toValidUtf8', () => {
  it('repairs strings and bytes without cutting', () => {
    expect(toValidUtf8('a\uD800')).toBe(`a${REPLACEMENT}`);
    expect(toValidUtf8(new Uint8Array([0xff]))).toBe(REPLACEMENT);
    const long = 'a'.repeat(LIMIT * 2);
    expect(toValidUtf8(long)).toBe(long);
  });
});

describe('boundArtifacts', () => {
  it('keeps no artifacts as none', () => {
    expect(boundArtifacts([])).toEqual([]);
  });

  it('keeps small artifacts as they are', () => {
    const artifacts: ToolArtifact[] = [
      {
        title: 'Page',
        type: 'json',
        content: { id: 42, tags: ['a', 'b'], nested: { ok: true, none: null } },
      },
      { title: 'Note', type: 'text', content: 'Grüße € 😀' },
      { title: 'Number', type: 'json', content: -1.5 },
    ];
    expect(boundArtifacts(artifacts)).toEqual(artifacts);
  });

  it('replaces artifacts over 50,000 bytes of JSON with one text artifact titled "Artifacts omitted"', () => {
    const artifacts: ToolArtifact[] = [{ title: 'Big', type: 'text', content: 'x'.repeat(60_000) }];
    omittedArtifact(boundArtifacts(artifacts));
  });

  it('counts the JSON in bytes, not characters', () => {
    const content = '€'.repeat(20_000); // 20,000 characters, 60,000 bytes
    const artifacts: ToolArtifact[] = [{ title: 'Euros', type: 'text', content }];
    expect(JSON.stringify(artifacts).length).toBeLessThan(LIMIT);
    omittedArtifact(boundArtifacts(artifacts));
  });

  it('keeps artifacts of exactly 50,000 bytes of JSON and omits those of 50,001', () => {
    const sized = (bytes: number): ToolArtifact[] => {
      const overhead = byteLength(JSON.stringify([{ title: 't', type: 'text', content: '' }]));
      return [{ title: 't', type: 'text', content: 'x'.repeat(bytes - overhead) }];
    };
    const atLimit = sized(LIMIT);
    expect(byteLength(JSON.stringify(atLimit))).toBe(LIMIT);
    expect(boundArtifacts(atLimit)).toEqual(atLimit);
    const overLimit = sized(LIMIT + 1);
    expect(byteLength(JSON.stringify(overLimit))).toBe(LIMIT + 1);
    omittedArtifact(boundArtifacts(overLimit));
  });

  it('counts the size of all artifacts together', () => {
    const artifacts: ToolArtifact[] = [
      { title: 'A', type: 'text', content: 'x'.repeat(30_000) },
      { title: 'B', type: 'text', content: 'y'.repeat(30_000) },
    ];
    omittedArtifact(boundArtifacts(artifacts));
  });

  // The artifacts array is depth 0, an artifact depth 1, its content depth 2.
  it('keeps artifacts whose deepest value is exactly at depth 64', () => {
    const leafAt64: ToolArtifact[] = [{ title: 'Deep', type: 'json', content: nest(62, 0) }];
    expect(boundArtifacts(leafAt64)).toEqual(leafAt64);
    const emptyArrayAt64: ToolArtifact[] = [{ title: 'Deep', type: 'json', content: nest(62, []) }];
    expect(boundArtifacts(emptyArrayAt64)).toEqual(emptyArrayAt64);
  });

  it('omits artifacts with a value deeper than 64', () => {
    omittedArtifact(boundArtifacts([{ title: 'Deep', type: 'json', content: nest(63, 0) }]));
    omittedArtifact(boundArtifacts([{ title: 'Deep', type: 'json', content: nest(63, []) }]));
    omittedArtifact(boundArtifacts([{ title: 'Deep', type: 'json', content: nest(500, 'x') }]));
  });

  it('counts nested objects towards the depth like arrays', () => {
    const objects = (levels: number): JsonValue => {
      let value: JsonValue = 'leaf';
      for (let i = 0; i < levels; i += 1) value = { child: value };
      return value;
    };
    const kept: ToolArtifact[] = [{ title: 'Deep', type: 'json', content: objects(62) }];
    expect(boundArtifacts(kept)).toEqual(kept);
    omittedArtifact(boundArtifacts([{ title: 'Deep', type: 'json', content: objects(63) }]));
  });

  it('omits cyclic artifacts', () => {
    const cyclic: { [key: string]: JsonValue } = { name: 'loop' };
    cyclic.self = cyclic;
    omittedArtifact(boundArtifacts([{ title: 'Cycle', type: 'json', content: cyclic }]));
    const list: JsonValue[] = [];
    list.push(list);
    omittedArtifact(boundArtifacts([{ title: 'Cycle', type: 'json', content: list }]));
  });

  it('keeps a value shared by two branches, which is not a cycle', () => {
    const shared: JsonValue = { id: 1 };
    const artifacts: ToolArtifact[] = [
      { title: 'Shared', type: 'json', content: { a: shared, b: [shared] } },
    ];
    expect(boundArtifacts(artifacts)).toEqual([
      { title: 'Shared', type: 'json', content: { a: { id: 1 }, b: [{ id: 1 }] } },
    ]);
  });

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['-Infinity', Number.NEGATIVE_INFINITY],
  ])('omits artifacts holding the number %s', (_name, value) => {
    omittedArtifact(boundArtifacts([{ title: 'Number', type: 'json', content: value }]));
    omittedArtifact(boundArtifacts([{ title: 'Number', type: 'json', content: { deep: [value] } }]));
  });

  it('omits artifacts holding a BigInt', () => {
    const content = { big: 10n } as unknown as JsonValue;
    omittedArtifact(boundArtifacts([{ title: 'Big', type: 'json', content }]));
  });

  it('omits artifacts holding a function', () => {
    const content = { fn: () => 1 } as unknown as JsonValue;
    omittedArtifact(boundArtifacts([{ title: 'Fn', type: 'json', content }]));
  });

  it('omits all artifacts when one of them cannot be encoded', () => {
    omittedArtifact(
      boundArtifacts([
        { title: 'Fine', type: 'text', content: 'fine' },
        { title: 'Bad', type: 'json', content: Number.NaN },
      ]),
    );
  });
});

describe('boundToolResult', () => {
  const target: WriteTarget = { table: 'pages', uid: '42', kind: 'created' };
  const small: ToolArtifact[] = [{ title: 'Small', type: 'text', content: 'small' }];
  const oversizedArtifacts: ToolArtifact[] = [{ title: 'Big', type: 'text', content: 'x'.repeat(60_000) }];
  const oversizedContent = 'c'.repeat(60_000);
  const cases = [
    { branch: 'small', content: 'small content', artifacts: small },
    { branch: 'oversized content', content: oversizedContent, artifacts: small },
    { branch: 'oversized artifacts', content: 'small content', artifacts: oversizedArtifacts },
  ];
  const table = TOOL_OUTCOMES.flatMap((outcome) => cases.map((c) => ({ outcome, ...c })));

  it.each(table)('keeps the outcome $outcome with $branch', ({ outcome, content, artifacts }) => {
    const bounded = boundToolResult(ToolResult.of(outcome, content, artifacts, target));
    expect(bounded.outcome).toBe(outcome);
    expect(bounded.isError).toBe(outcome !== 'ok');
  });

  it('bounds the content of every outcome', () => {
    for (const outcome of TOOL_OUTCOMES) {
      const bounded = boundToolResult(ToolResult.of(outcome, oversizedContent));
      expect(bounded.content).toBe(`${'c'.repeat(LIMIT)}${TRUNCATION_MARKER}`);
    }
  });

  it('bounds the artifacts of an ok result', () => {
    omittedArtifact(boundToolResult(ToolResult.ok('x', oversizedArtifacts)).artifacts);
    expect(boundToolResult(ToolResult.ok('x', small)).artifacts).toEqual(small);
  });

  it('a bounded cancelled result is still cancelled, an error, and carries no artifacts or write target', () => {
    for (const { content, artifacts } of cases) {
      const bounded = boundToolResult(ToolResult.of('cancelled', content, artifacts, target));
      expect(bounded.outcome).toBe('cancelled');
      expect(bounded.isError).toBe(true);
      expect(bounded.artifacts).toEqual([]);
      expect(bounded.writeTarget).toBeNull();
    }
  });

  it('a bounded failed result carries no artifacts or write target', () => {
    for (const { content, artifacts } of cases) {
      const bounded = boundToolResult(ToolResult.of('failed', content, artifacts, target));
      expect(bounded.outcome).toBe('failed');
      expect(bounded.artifacts).toEqual([]);
      expect(bounded.writeTarget).toBeNull();
    }
  });

  it('an ok result keeps its write target through bounding, in every branch', () => {
    for (const { content, artifacts } of cases) {
      const bounded = boundToolResult(ToolResult.ok(content, artifacts, target));
      expect(bounded.outcome).toBe('ok');
      expect(bounded.writeTarget).toEqual(target);
    }
  });

  it('repairs invalid content of a cancelled result and keeps it cancelled', () => {
    const bounded = boundToolResult(ToolResult.cancelled('half\uD800'));
    expect(bounded.content).toBe(`half${REPLACEMENT}`);
    expect(bounded.outcome).toBe('cancelled');
  });
});

describe('the repair of text PostgreSQL cannot hold', () => {
  it('replaces U+0000 and each lone surrogate with U+FFFD, one for one, and counts them', () => {
    const count = new RepairCount();
    expect(repairText('a\u0000b\uD800c\uDC00\uD83D\uDE00\uDBFF', count)).toBe(
      `a${REPLACEMENT}b${REPLACEMENT}c${REPLACEMENT}😀${REPLACEMENT}`,
    );
    expect(count.characters).toBe(4);
    expect(repairText('clean 😀')).toBe('clean 😀');
    expect(repairFacts(new RepairCount())).toEqual({});
    expect(repairFacts(count)).toEqual({ repairedCharacters: 4 });
  });

  it('repairs every string of a JSON value, object keys included, and loses no member', () => {
    const count = new RepairCount();
    const repaired = repairJson(
      { 'a\u0000': 1, [`a${REPLACEMENT}`]: 2, 'a\uD800': 3, list: ['\u0000', 4, null, { '\uDC00': true }] },
      count,
    );
    expect(repaired).toEqual({
      [`a${REPLACEMENT}`]: 2,
      [`a${REPLACEMENT}${REPLACEMENT}`]: 1,
      [`a${REPLACEMENT}${REPLACEMENT}${REPLACEMENT}`]: 3,
      list: [REPLACEMENT, 4, null, { [REPLACEMENT]: true }],
    });
    expect(count.characters).toBe(4);
  });

  it('repairs content before the cut, and counts artifacts only when they are kept', () => {
    const count = new RepairCount();
    const content = boundContent(`${'\u0000'.repeat(MAX_CONTENT_BYTES)}`, count);
    // Each U+FFFD is 3 bytes: the cut measures what is stored.
    expect(new TextEncoder().encode(content.slice(0, -TRUNCATION_MARKER.length)).length).toBeLessThanOrEqual(
      MAX_CONTENT_BYTES,
    );
    expect(count.characters).toBe(MAX_CONTENT_BYTES);
    const omittedCount = new RepairCount();
    const big: ToolArtifact[] = [
      { title: 't', type: 'text', content: `\u0000${'x'.repeat(MAX_ARTIFACT_BYTES)}` },
    ];
    expect(boundArtifacts(big, omittedCount)[0]?.title).toBe(ARTIFACTS_OMITTED_TITLE);
    expect(omittedCount.characters).toBe(0);
    const keptCount = new RepairCount();
    expect(
      boundArtifacts([{ title: 't\u0000', type: 'json', content: { '\uD800': 'x' } }], keptCount),
    ).toEqual([{ title: `t${REPLACEMENT}`, type: 'json', content: { [REPLACEMENT]: 'x' } }]);
    expect(keptCount.characters).toBe(2);
  });

  it.each(TOOL_OUTCOMES)('keeps the outcome %s of a repaired result', (outcome) => {
    const bounded = boundToolResult(ToolResult.of(outcome, 'bin\u0000ary'));
    expect([bounded.outcome, bounded.content]).toEqual([outcome, `bin${REPLACEMENT}ary`]);
  });
});
