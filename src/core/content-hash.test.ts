import { describe, expect, it } from 'vitest';
import { commonPrefixLength, messageDigest, transcriptChain } from './content-hash.js';
import type { Message } from './transcript.js';

const BREAKPOINT = { cache_control: { type: 'ephemeral' } };

/** A tool message as the Anthropic adapter reads one: wire extras kept under `anthropic.extra`. */
function toolResult(text: string, blockExtra?: object, innerExtra?: object): Message {
  return {
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: 'toolu_1',
        name: 'read_file',
        content: [
          {
            type: 'text',
            text,
            ...(innerExtra ? { providerData: { anthropic: { extra: innerExtra } } } : {}),
          },
        ],
        ...(blockExtra
          ? { providerData: { anthropic: { content: 'absent', extra: blockExtra } } }
          : { providerData: { anthropic: { content: 'absent' } } }),
      },
    ],
    providerData: { anthropic: { turn: 3 } },
  } as Message;
}

function userText(text: string, extra?: object): Message {
  return {
    role: 'user',
    parts: [{ type: 'text', text, ...(extra ? { providerData: { anthropic: { extra } } } : {}) }],
    providerData: { anthropic: { turn: 2 } },
  } as Message;
}

describe('messageDigest', () => {
  it('leaves out cache breakpoints wherever the adapters keep them', () => {
    expect(messageDigest(userText('hello', BREAKPOINT))).toBe(messageDigest(userText('hello')));
    expect(messageDigest(toolResult('x', BREAKPOINT))).toBe(messageDigest(toolResult('x')));
    expect(messageDigest(toolResult('x', undefined, BREAKPOINT))).toBe(messageDigest(toolResult('x')));
    // Other wire extras beside the breakpoint still count.
    expect(messageDigest(userText('hello', { ...BREAKPOINT, citations: [] }))).toBe(
      messageDigest(userText('hello', { citations: [] })),
    );
    expect(messageDigest(userText('hello', { citations: [] }))).not.toBe(messageDigest(userText('hello')));
    const topLevel = { ...userText('hello'), providerData: { ...BREAKPOINT, anthropic: { turn: 2 } } };
    expect(messageDigest(topLevel)).toBe(messageDigest(userText('hello')));
  });

  it('leaves out a breakpoint inside a block kept whole: a document, in a message or a result', () => {
    const document = (mark: object) => ({
      type: 'opaque',
      provider: 'anthropic',
      kind: 'document',
      text: 'spec.pdf',
      data: { type: 'document', source: { type: 'base64', data: 'JVBERi0x' }, title: 'spec.pdf', ...mark },
    });
    const user = (mark: object) =>
      ({ role: 'user', parts: [document(mark)], providerData: { anthropic: { turn: 2 } } }) as Message;
    const result = (mark: object) => {
      const message = toolResult('x');
      const part = message.parts[0] as { content: unknown[] };
      return { ...message, parts: [{ ...part, content: [document(mark)] }] } as unknown as Message;
    };
    expect(messageDigest(user(BREAKPOINT))).toBe(messageDigest(user({})));
    expect(messageDigest(result(BREAKPOINT))).toBe(messageDigest(result({})));
    expect(messageDigest(user({ title: 'other.pdf' }))).not.toBe(messageDigest(user({})));
  });

  it('still tells content apart, and a text that names the key is content', () => {
    expect(messageDigest(userText('hello', BREAKPOINT))).not.toBe(messageDigest(userText('hellO')));
    expect(messageDigest(toolResult('x', BREAKPOINT))).not.toBe(messageDigest(toolResult('y')));
    expect(messageDigest(userText('"cache_control"'))).not.toBe(messageDigest(userText('')));
  });

  it('leaves out the wire form of the content: a string and one text block are the same message', () => {
    // The Anthropic adapter marks a string; the Chat adapter marks an array (its default is the string).
    const asString = { ...userText('hello'), providerData: { anthropic: { turn: 2, content: 'string' } } };
    expect(messageDigest(asString)).toBe(messageDigest(userText('hello', BREAKPOINT)));
    const chat = (form?: string): Message => ({
      role: 'user',
      parts: [{ type: 'text', text: 'hello' }],
      ...(form === undefined ? {} : { providerData: { openaiChat: { content: form } } }),
    });
    expect(messageDigest(chat('array'))).toBe(messageDigest(chat()));
    // What the form hint sits beside still counts, and so does the text.
    expect(messageDigest(asString)).not.toBe(
      messageDigest({ ...asString, providerData: { anthropic: { turn: 4 } } }),
    );
    expect(messageDigest(asString)).not.toBe(messageDigest(userText('hellO', BREAKPOINT)));
    expect(messageDigest(asString)).not.toBe(messageDigest(userText('hello', { citations: [] })));
  });

  it('digests messages without breakpoints as it always did (stored bindings stay valid)', () => {
    const message = toolResult('a "quoted" line', undefined, { citations: [] });
    expect(messageDigest(message)).toBe('341fe58e11f2a9085f9a7b31963b39a4');
  });

  it('a breakpoint moved to the newest message keeps the chain a pure append', () => {
    const before = [userText('task', BREAKPOINT)];
    const after = [userText('task'), toolResult('out', BREAKPOINT)];
    expect(commonPrefixLength(transcriptChain(before), transcriptChain(after))).toBe(1);
  });
});
