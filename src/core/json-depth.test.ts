import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadInputError, parseJson } from './errors.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth.js';

const nested = (depth: number, open = '[', close = ']') => `${open.repeat(depth)}${close.repeat(depth)}`;
const bytesOf = (text: string) => new TextEncoder().encode(text);

/** The true depth, by walking the parsed value (only for shallow test values). */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === 'object')
    return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

describe('exceedsJsonDepth', () => {
  it('accepts exactly the limit and refuses one level more, as text and as bytes', () => {
    for (const input of [
      nested(MAX_JSON_DEPTH),
      `${'{"a":'.repeat(MAX_JSON_DEPTH - 1)}[]${'}'.repeat(MAX_JSON_DEPTH - 1)}`,
    ]) {
      expect(exceedsJsonDepth(input)).toBe(false);
      expect(exceedsJsonDepth(bytesOf(input))).toBe(false);
    }
    expect(exceedsJsonDepth(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(exceedsJsonDepth(bytesOf(nested(MAX_JSON_DEPTH + 1)))).toBe(true);
    expect(exceedsJsonDepth(nested(100_000))).toBe(true);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = JSON.stringify({ text: `${'['.repeat(1000)} \\" \\\\" "${'{'.repeat(1000)}` });
    expect(exceedsJsonDepth(text, 1)).toBe(false);
    expect(exceedsJsonDepth(bytesOf(text), 1)).toBe(false);
    expect(exceedsJsonDepth(`["${'\\\\'.repeat(3)}", [[1]]]`, 2)).toBe(true);
    expect(exceedsJsonDepth('["unterminated [[[[', 1)).toBe(false);
  });

  it('agrees with the parsed value on random JSON, text and UTF-8 bytes alike', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 8 }), (value, limit) => {
        const text = JSON.stringify(value);
        const expected = depthOf(value) > limit;
        expect(exceedsJsonDepth(text, limit)).toBe(expected);
        expect(exceedsJsonDepth(bytesOf(text), limit)).toBe(expected);
      }),
    );
  });
});

describe('parseJson', () => {
  it('refuses text nested deeper than the limit before parsing, naming where', () => {
    expect(() => parseJson(nested(100_000), 'request body')).toThrow(BadInputError);
    expect(() => parseJson(nested(100_000), 'request body')).toThrow(
      `request body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
    );
    expect(parseJson(nested(3), 'x', 3)).toEqual([[[]]]);
    expect(() => parseJson(nested(4), 'x', 3)).toThrow('x: JSON nested deeper than 3 levels');
  });
});
