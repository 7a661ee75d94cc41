import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ByteSpan, layoutJsonObject, usageHolderOf } from './json-layout.js';

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
    expect(layoutJsonObject(bytesOf('{"a":[[1]]}'), { maxDepth: 3 })).toBeDefined();
    expect(layoutJsonObject(bytesOf('{"a":[[1]]}'), { maxDepth: 2 })).toBeUndefined();
    expect(layoutJsonObject(bytesOf('{"a":[{"b":[]}]}'), { maxDepth: 3 })).toBeUndefined();
    expect(layoutJsonObject(bytesOf(`{"a":${'['.repeat(300)}${']'.repeat(300)}}`))).toBeUndefined();
  });

  it('reads an empty object and empty arrays', () => {
    expect(layoutJsonObject(bytesOf(' { } '))).toEqual([]);
    expect(layoutJsonObject(bytesOf('{"a":[ ]}'))).toEqual([
      { key: 'a', keyStart: 1, start: 5, end: 8, elements: [] },
    ]);
  });

  it('takes over a previous layout where the bytes agree, and gives what a whole scan gives', () => {
    const body = fc.record({
      model: fc.string(),
      messages: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 12 }),
      tools: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
      stream: fc.boolean(),
    });
    const change = fc.record({
      append: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
      cut: fc.nat(),
      edit: fc.option(fc.tuple(fc.nat(), fc.jsonValue({ maxDepth: 1 }))),
      model: fc.option(fc.string()),
      order: fc.boolean(),
    });
    fc.assert(
      fc.property(body, change, fc.constantFrom(undefined, 1), (before, next, indent) => {
        const messages = [
          ...before.messages.slice(0, next.cut % (before.messages.length + 1)),
          ...next.append,
        ];
        if (next.edit && messages.length > 0) messages[next.edit[0] % messages.length] = next.edit[1];
        const after = { ...before, messages, ...(next.model === null ? {} : { model: next.model }) };
        const ordered = next.order
          ? after
          : { tools: after.tools, messages: after.messages, model: after.model };
        const previousBytes = bytesOf(JSON.stringify(before, null, indent));
        const previous = { bytes: previousBytes, fields: layoutJsonObject(previousBytes)! };
        const bytes = bytesOf(JSON.stringify(ordered, null, indent));
        expect(layoutJsonObject(bytes, { previous })).toEqual(layoutJsonObject(bytes));
      }),
      { numRuns: 400 },
    );
  });

  it('stops once the named field has its first elements', () => {
    const bytes = bytesOf(JSON.stringify({ model: 'm', messages: [1, 2, 3, 4], tools: [5] }));
    const fields = layoutJsonObject(bytes, { until: { field: 'messages', elements: 2 } })!;
    expect(fields.map((field) => field.key)).toEqual(['model', 'messages']);
    expect(fields[1]!.elements!.map((element) => valueAt(bytes, element))).toEqual([1, 2]);
    const short = layoutJsonObject(bytesOf('{"messages":[1],"x":[}'), {
      until: { field: 'messages', elements: 2 },
    });
    expect(short).toBeUndefined();
  });
});

describe('usageHolderOf', () => {
  const bytes = bytesOf;

  it('parses the top-level usage field alone, the last when it repeats, as JSON.parse reads it', () => {
    const answer = {
      tools: [{ name: 'log', parameters: { properties: { usage: { type: 'string' } } } }],
      output: [{ content: 'the "usage": {"input_tokens": 1} of it' }],
      usage: { input_tokens: 12, output_tokens: 3 },
    };
    expect(usageHolderOf(bytes(JSON.stringify(answer)))).toEqual({ usage: answer.usage });
    const repeated = '{"usage":{"input_tokens":1},"id":"x","usage":{"input_tokens":2}}';
    expect(usageHolderOf(bytes(repeated))).toEqual({ usage: JSON.parse(repeated).usage });
  });

  it('gives nothing for an answer without usage, an array, or bytes that are not JSON', () => {
    expect(usageHolderOf(bytes('{"id":"x","nested":{"usage":{"input_tokens":5}}}'))).toBeUndefined();
    expect(usageHolderOf(bytes('[{"usage":{"input_tokens":5}}]'))).toBeUndefined();
    expect(usageHolderOf(bytes('upstream says no'))).toBeUndefined();
    expect(usageHolderOf(bytes('{"usage":{"input_tokens":}'))).toBeUndefined();
  });
});
