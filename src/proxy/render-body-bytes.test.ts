import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { layoutJsonObject } from './json-layout.js';
import { type ParsedBody, renderBodyBytes } from './render-body-bytes.js';
import type { JsonObject } from './wire-dialect.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function parsedBody(text: string): ParsedBody & { body: JsonObject } {
  const bytes = encoder.encode(text);
  const fields = layoutJsonObject(bytes)!;
  const values = new Map<string, unknown>();
  const body: JsonObject = {};
  for (const field of fields) {
    const value: unknown = JSON.parse(decoder.decode(bytes.subarray(field.start, field.end)));
    values.set(field.key, value);
    body[field.key] = value;
  }
  return { bytes, fields, values, body };
}

const rendered = (body: JsonObject, source: ParsedBody) => decoder.decode(renderBodyBytes(body, source));

describe('renderBodyBytes', () => {
  it("copies the client's bytes for what is unchanged, serialises the rest", () => {
    const text =
      '{"model":"m", "messages":[{"role":"user",  "content":"a"} , {"role":"assistant","content":"b"}],"tools":[ 1 ]}';
    const source = parsedBody(text);
    expect(rendered(source.body, source)).toBe(
      '{"model":"m","messages":[{"role":"user",  "content":"a"} , {"role":"assistant","content":"b"}],"tools":[ 1 ]}',
    );
    const messages = source.body.messages as unknown[];
    const changed = {
      ...source.body,
      // The first element written anew from the same content, the second replaced, one added.
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'c' },
        { role: 'user', content: 'd' },
      ],
      tools: undefined,
      stream: true,
    };
    expect(messages).toHaveLength(2);
    expect(rendered(changed, source)).toBe(
      '{"model":"m","messages":[{"role":"user",  "content":"a"},{"role":"assistant","content":"c"},{"role":"user","content":"d"}],"stream":true}',
    );
  });

  it("gives an unchanged compact body back as the client's bytes themselves, and one run per unchanged stretch", () => {
    const text = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'é' }, 2, 3],
      stream: true,
    });
    const source = parsedBody(text);
    expect(renderBodyBytes(source.body, source)).toBe(source.bytes);
    const appended = { ...source.body, messages: [...(source.body.messages as unknown[]), 4] };
    const written = renderBodyBytes(appended, source);
    expect(written).not.toBe(source.bytes);
    expect(decoder.decode(written)).toBe(JSON.stringify(appended));
  });

  it('writes the same JSON as JSON.stringify, whatever was changed', () => {
    const element = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })),
    );
    const edit = fc.oneof(
      fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: element }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), value: element }),
      fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }),
      fc.record({ kind: fc.constant('copy' as const), at: fc.nat() }),
      fc.record({
        kind: fc.constant('field' as const),
        key: fc.string(),
        value: fc.jsonValue({ maxDepth: 2 }),
      }),
      fc.record({ kind: fc.constant('drop' as const), key: fc.string() }),
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })),
        fc.array(element, { maxLength: 8 }),
        fc.array(edit, { maxLength: 6 }),
        fc.constantFrom(undefined, 2),
        (fields, list, edits, indent) => {
          if ('__proto__' in fields) return;
          const source = parsedBody(JSON.stringify({ ...fields, messages: list }, null, indent));
          const body: JsonObject = { ...source.body };
          let messages = [...(body.messages as unknown[])];
          for (const change of edits) {
            const at = 'at' in change ? change.at % (messages.length + 1) : 0;
            if (change.kind === 'replace' && at < messages.length) messages[at] = change.value;
            if (change.kind === 'insert') messages.splice(at, 0, change.value);
            if (change.kind === 'remove') messages.splice(at, 1);
            if (change.kind === 'copy' && at < messages.length) messages[at] = structuredClone(messages[at]);
            if (change.kind === 'field' && change.key !== '__proto__' && change.key !== 'messages')
              body[change.key] = change.value;
            if (change.kind === 'drop' && change.key !== 'messages') delete body[change.key];
          }
          messages = messages.map((value) => value);
          body.messages = messages;
          expect(JSON.parse(rendered(body, source))).toEqual(JSON.parse(JSON.stringify(body)));
        },
      ),
      { numRuns: 300 },
    );
  });
});
