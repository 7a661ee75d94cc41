import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ByteSpan, layoutJsonObject } from './json-layout.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const bytesOf = (text: string) => encoder.encode(text);
const valueAt = (bytes: Uint8Array, span: ByteSpan): unknown =>
  JSON.parse(decoder.decode(bytes.subarray(span.start, span.end)));

describe('layoutJsonObject', () => {
  it('finds every field and array element of random objects, compact or indented', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.constantFrom(undefined, 1, '\t'),
        (generated, indent) => {
          const text = JSON.stringify(generated, null, indent);
          const object = JSON.parse(text) as Record<string, unknown>;
          const bytes = bytesOf(text);
          const fields = layoutJsonObject(bytes);
          expect(fields).toBeDefined();
          expect(fields!.map((field) => field.key)).toEqual(Object.keys(object));
          for (const field of fields!) {
            const value = object[field.key];
            expect(valueAt(bytes, field)).toEqual(value);
            if (Array.isArray(value)) {
              expect(field.elements!.map((element) => valueAt(bytes, element))).toEqual(value);
            } else {
              expect(field.elements).toBeUndefined();
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads strings with escaped quotes, brackets and multi-byte characters as strings', () => {
    const object = { a: ['x\\"]', '{[', 'é ✓ 𝄞'], b: { c: '\\' }, d: 'tail"' };
    const bytes = bytesOf(JSON.stringify(object));
    const fields = layoutJsonObject(bytes)!;
    expect(fields.map((field) => valueAt(bytes, field))).toEqual(Object.values(object));
    expect(fields[0]!.elements!.map((element) => valueAt(bytes, element))).toEqual(object.a);
  });

  it('gives no layout for what is not an object outline', () => {
    for (const text of [
      '',
      '[]',
      '"text"',
      '{"a":1',
      '{"a" 1}',
      '{"a":1,}',
      '{a:1}',
      '{"a":1} x',
      '{"a":[1 2]}',
      '{"a":"unterminated}',
      '{"a":}',
      '\uFEFF{"a":1}',
    ]) {
      expect(layoutJsonObject(bytesOf(text)), text).toBeUndefined();
    }
    expect(layoutJsonObject(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))).toBeUndefined();
  });

  it('gives no layout past the depth limit, counting the object itself', () => {
    expect(layoutJsonObject(bytesOf('{"a":[[1]]}'), 3)).toBeDefined();
    expect(layoutJsonObject(bytesOf('{"a":[[1]]}'), 2)).toBeUndefined();
    expect(layoutJsonObject(bytesOf('{"a":[{"b":[]}]}'), 3)).toBeUndefined();
    expect(layoutJsonObject(bytesOf(`{"a":${'['.repeat(300)}${']'.repeat(300)}}`))).toBeUndefined();
  });

  it('reads an empty object and empty arrays', () => {
    expect(layoutJsonObject(bytesOf(' { } '))).toEqual([]);
    expect(layoutJsonObject(bytesOf('{"a":[ ]}'))).toEqual([{ key: 'a', start: 5, end: 8, elements: [] }]);
  });
});
