import { describe, expect, it } from 'vitest';
import { asJson } from '../../src/otlp/mapping.ts';

/** The rule as it reads: a string attribute is the JSON it holds when it holds JSON, else the string. */
function parsedOrText(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

describe('a string attribute read as JSON', () => {
  it('is what JSON.parse makes of it, or the string itself, whatever it starts with', () => {
    const values = [
      '{"query":"benchmark"}',
      '[1, 2]',
      '"quoted"',
      '-1.5e3',
      '0',
      '42',
      'true',
      'false',
      'null',
      'nul',
      'truth',
      ' \t\r\n{"a": 1}',
      '\u00a0{"a": 1}',
      '\u2028[1]',
      'a result of modest size',
      '',
      '   ',
      '{not json',
      '-',
      'NaN',
      'Infinity',
      "{'a': 1}",
      '\ufeff{"a": 1}',
    ];
    // Every one-character start as well: the shortcut must never skip text JSON.parse accepts.
    for (let code = 0; code < 128; code += 1)
      values.push(`${String.fromCharCode(code)}1`, String.fromCharCode(code));
    for (const value of values) expect([value, asJson(value)]).toEqual([value, parsedOrText(value)]);
  });

  it('keeps a value that is not a string as it is', () => {
    expect(asJson(7)).toBe(7);
    expect(asJson(undefined)).toBeNull();
  });
});
