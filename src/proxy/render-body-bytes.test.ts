import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { layoutJsonObject } from './json-layout.js';
import { type ParsedBody, renderBodyBytes, type SerialisedElements } from './render-body-bytes.js';
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

  it('copies every unchanged element of a long conversation written anew with runs folded, not only the first few', () => {
    // Spaced as no serialiser writes it: a copied element keeps its spaces, a serialised one loses them.
    const original = Array.from(
      { length: 400 },
      (_, index) =>
        `{"role": "${index % 2 === 0 ? 'assistant' : 'tool'}", "content": "output ${index} ${'x'.repeat(index % 7)}"}`,
    );
    const source = parsedBody(`{"model":"m","messages":[${original.join(', ')}]}`);
    const parsed = source.body.messages as JsonObject[];
    // Written anew (other objects, the same JSON), with every fortieth run of ten folded into one.
    const messages: unknown[] = [];
    for (let index = 0; index < original.length; index += 1) {
      if (index % 40 === 0) {
        messages.push({ role: 'user', content: `[folded ${index}..${index + 9}]` });
        index += 9;
      } else messages.push({ ...parsed[index]! });
    }
    const out = rendered({ ...source.body, messages }, source);
    expect(JSON.parse(out)).toEqual({ model: 'm', messages });
    const kept = messages.filter((message) => (message as { role: string }).role !== 'user');
    expect(out.split('"role": ').length - 1).toBe(kept.length);
  });

  it("copies an element written anew with its members in another order: the same value, in the client's bytes", () => {
    const source = parsedBody(
      '{"messages":[{"role": "tool", "tool_call_id": "c1", "content": "ok"}, {"role": "user", "content": "go"}]}',
    );
    const messages = [
      { role: 'tool', content: 'ok', tool_call_id: 'c1' },
      { content: 'go', role: 'user' },
      { role: 'tool', content: 'ok', tool_call_id: 'c2' },
    ];
    expect(rendered({ messages }, source)).toBe(
      '{"messages":[{"role": "tool", "tool_call_id": "c1", "content": "ok"},{"role": "user", "content": "go"},{"role":"tool","content":"ok","tool_call_id":"c2"}]}',
    );
  });

  it('writes an element the last render serialised from its bytes, when it is the same value again', () => {
    const source = parsedBody('{"messages":[{"role":"user","content":"a"},{"role":"tool","content":"b"}]}');
    const summary = (text: string) => ({ role: 'user', content: `[folded] ${text.repeat(400)}` });
    const first: SerialisedElements = new Map();
    expect(decoder.decode(renderBodyBytes({ messages: [summary('index ')] }, source, { next: first }))).toBe(
      JSON.stringify({ messages: [summary('index ')] }),
    );
    const [kept] = [...first.values()].flat();
    expect(kept?.bytes.byteLength).toBeGreaterThan(2_000);
    // The same value, built anew (another object, members in another order): its bytes come back.
    const second: SerialisedElements = new Map();
    const again = { content: summary('index ').content, role: 'user' };
    const out = renderBodyBytes({ messages: [again, { role: 'user', content: 'a' }] }, source, {
      previous: first,
      next: second,
    });
    expect(JSON.parse(decoder.decode(out))).toEqual({ messages: [again, { role: 'user', content: 'a' }] });
    expect([...second.values()].flat()[0]?.bytes).toBe(kept?.bytes);
    // Another summary of the same outline is serialised anew; short elements are not kept.
    const third: SerialisedElements = new Map();
    const other = summary('indey ');
    const written = renderBodyBytes({ messages: [other, { role: 'user', content: 'new' }] }, source, {
      previous: second,
      next: third,
    });
    expect(JSON.parse(decoder.decode(written))).toEqual({
      messages: [other, { role: 'user', content: 'new' }],
    });
    const entries = [...third.values()].flat();
    expect(entries).toHaveLength(1);
    expect(entries[0]?.bytes).not.toBe(kept?.bytes);
    expect(decoder.decode(entries[0]?.bytes)).toBe(JSON.stringify(other));
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
