import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, OpaquePart } from '../../core/transcript.js';
import {
  type AdapterUnderTest,
  describeAdapterContract,
  describeWritingFromSource,
  expectBadInputAt,
  readFixture,
} from '../adapter-contract.case.js';
import { fromOpenAIChat } from './convert-from-openai-chat.js';
import { toOpenAIChat } from './convert-to-openai-chat.js';
import type { OpenAIChatMessage } from './openai-chat-api.js';

const fixture = (name: string) =>
  readFixture(new URL(`./fixtures/${name}`, import.meta.url)) as { messages: OpenAIChatMessage[] };

describe('openai-chat round trip on fixtures', () => {
  it.each([
    'parallel-tools-with-reasoning.json',
    'developer-refusal-shapes.json',
    'audio-file-parts.json',
    // opencode marks its last messages for the cache through openai-compatible: on the tool message.
    'tool-message-fields.json',
  ])('%s', (name) => {
    const { messages } = fixture(name);
    const canonical = fromOpenAIChat(messages);
    const back = toOpenAIChat(canonical.messages);
    expect(back.messages).toStrictEqual(messages);
    expect(JSON.stringify(back.messages)).toBe(JSON.stringify(messages));
    expect([...canonical.warnings, ...back.warnings]).toEqual([]);
  });

  it("reads the SDK's dumped replies, every field null when unset, and writes them back", () => {
    // Python agents send back `message.model_dump()`: `tool_calls: null` on a reply without calls.
    const { messages } = fixture('sdk-dumped-messages.json');
    const canonical = fromOpenAIChat(messages);
    expect(canonical.messages[4]?.parts).toEqual([{ type: 'text', text: 'Two entries: README.md and src.' }]);
    expect(toOpenAIChat(canonical.messages).messages).toStrictEqual(messages);
  });

  it('keeps input_audio and file parts as opaque parts in place', () => {
    const { messages } = fromOpenAIChat(fixture('audio-file-parts.json').messages);
    expect(messages[1]?.parts.map((part) => (part.type === 'opaque' ? part.kind : part.type))).toEqual([
      'text',
      'input_audio',
      'file',
    ]);
    const [, audio, file] = messages[1]!.parts as [unknown, OpaquePart, OpaquePart];
    expect(audio).toMatchObject({ provider: 'openaiChat', text: '' });
    expect(file.text).toBe('spec-v2.pdf');
    expect(messages[3]?.parts).toEqual([
      {
        type: 'opaque',
        provider: 'openaiChat',
        kind: 'file',
        text: '',
        data: { type: 'file', file: { file_id: 'file-6F2ksmvXxt4VdoqmHRw6kL' } },
      },
    ]);
  });

  it('maps reasoning, parallel calls, tool names and images to canonical parts', () => {
    const { messages } = fromOpenAIChat(fixture('parallel-tools-with-reasoning.json').messages);
    const assistant = messages[2];
    expect(assistant?.parts.map((part) => part.type)).toEqual(['reasoning', 'tool-call', 'tool-call']);
    expect(messages[4]?.parts[0]).toMatchObject({
      type: 'tool-result',
      name: 'bash',
      callId: 'call_H6jD0fG5sA9kQ2wE8rT3yU1i',
    });
    expect(messages[1]?.parts[1]).toMatchObject({
      type: 'image',
      source: 'url',
      providerData: { openaiChat: { detail: 'high' } },
    });
    expect(assistant?.providerData).toBeUndefined();
  });

  it('remembers developer role, names, refusals and data images', () => {
    const { messages } = fromOpenAIChat(fixture('developer-refusal-shapes.json').messages);
    expect(messages[0]).toMatchObject({
      role: 'system',
      providerData: { openaiChat: { role: 'developer' } },
    });
    expect(messages[1]?.parts[1]).toMatchObject({ type: 'image', source: 'data', mediaType: 'image/png' });
    expect(messages[4]?.parts).toEqual([
      {
        type: 'text',
        text: "I can't help with revealing credentials.",
        providerData: { openaiChat: { refusal: 'field' } },
      },
    ]);
  });
});

describe('toOpenAIChat defaults for messages it did not read', () => {
  it('writes one text part as a string and a calls-only reply with null content', () => {
    const transcript: Message[] = [
      { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', parts: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: '{}' }] },
      { role: 'tool', parts: [{ type: 'tool-result', callId: 'c1', name: 'bash', content: 'ok' }] },
    ];
    expect(toOpenAIChat(transcript).messages).toEqual([
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{}' } }],
      },
      { role: 'tool', content: 'ok', tool_call_id: 'c1' },
    ]);
  });

  it('splits a tool message with several results into one chat tool message each', () => {
    const results: Message = {
      role: 'tool',
      parts: [
        { type: 'tool-result', callId: 'a', name: 'x', content: '1' },
        { type: 'tool-result', callId: 'b', name: 'y', content: '2' },
      ],
    };
    expect(toOpenAIChat([results]).messages).toEqual([
      { role: 'tool', content: '1', tool_call_id: 'a' },
      { role: 'tool', content: '2', tool_call_id: 'b' },
    ]);
  });
});

describe('toOpenAIChat warnings', () => {
  it('reasoning-metadata-dropped: keeps the text, warns about the signature', () => {
    const { messages, warnings } = toOpenAIChat([
      {
        role: 'assistant',
        parts: [
          { type: 'reasoning', text: 'think', signature: 'sig' },
          { type: 'text', text: 'done' },
        ],
      },
    ]);
    expect(messages[0]).toMatchObject({ reasoning_content: 'think', content: 'done' });
    expect(warnings).toEqual([
      expect.objectContaining({ code: 'reasoning-metadata-dropped', messageIndex: 0 }),
    ]);
  });

  it('tool-error-flag-dropped: chat has no error flag', () => {
    const { warnings } = toOpenAIChat([
      {
        role: 'tool',
        parts: [{ type: 'tool-result', callId: 'c', name: 'bash', content: 'boom', isError: true }],
      },
    ]);
    expect(warnings.map((warning) => warning.code)).toEqual(['tool-error-flag-dropped']);
  });

  it('unsupported-part: an image in a tool result or system message becomes a text placeholder', () => {
    const image = { type: 'image', ref: 'https://example.com/a.png', source: 'url' } as const;
    const { messages, warnings } = toOpenAIChat([
      { role: 'system', parts: [image] },
      { role: 'tool', parts: [{ type: 'tool-result', callId: 'c', name: 'shot', content: [image] }] },
    ]);
    expect(messages).toEqual([
      { role: 'system', content: '[image omitted: https://example.com/a.png]' },
      {
        role: 'tool',
        content: [{ type: 'text', text: '[image omitted: https://example.com/a.png]' }],
        tool_call_id: 'c',
      },
    ]);
    expect(warnings.map((warning) => [warning.code, warning.messageIndex])).toEqual([
      ['unsupported-part', 0],
      ['unsupported-part', 1],
    ]);
  });
});

describe('fromOpenAIChat validation', () => {
  const fails = (input: unknown) => () => fromOpenAIChat(input as OpenAIChatMessage[]);

  it('names the message index of an unknown role', () => {
    const input = [
      { role: 'user', content: 'hi' },
      { role: 'robot', content: 'beep' },
    ];
    expectBadInputAt(fails(input), /openai-chat message 1: role: Invalid discriminator value/, 1);
  });

  it('names the field of a malformed message', () => {
    expect(fails([{ role: 'tool', content: 'x' }])).toThrow(/message 0: tool_call_id: .*expected string/);
    expect(
      fails([{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function' }] }]),
    ).toThrow(/tool_calls\.0\.function/);
    expect(fails({ role: 'user' })).toThrow(/expected an array/);
  });

  it('refuses a malformed part of a type it reads, and a role it does not know', () => {
    const image = { role: 'user', content: [{ type: 'image_url', image_url: { detail: 'low' } }] };
    expect(fails([image])).toThrow(/message 0: content\.0\.image_url\.url/);
    expect(fails([{ role: 'function', name: 'f', content: 'x' }])).toThrow(/message 0: role/);
  });
});

/** Audio and file parts, as the adapter reads them. */
const chatOpaque = {
  user: fc
    .oneof(
      fc
        .base64String({ minLength: 4, maxLength: 16 })
        .map((data) => ({ type: 'input_audio', input_audio: { data, format: 'wav' } })),
      fc
        .stringMatching(/^[a-z]{1,8}\.pdf$/)
        .map((filename) => ({ type: 'file', file: { filename, file_id: 'file-1' } })),
    )
    .map((part) => {
      const read = fromOpenAIChat([{ role: 'user', content: [part] }] as OpenAIChatMessage[]).messages[0]
        ?.parts[0];
      if (read?.type !== 'opaque') throw new Error('expected an opaque part');
      return read;
    }),
};

const chatAdapter: AdapterUnderTest = {
  name: 'openai-chat',
  to: (messages) => {
    const { messages: wire, warnings } = toOpenAIChat(messages);
    return { wire, warnings };
  },
  from: (wire) => fromOpenAIChat(wire as OpenAIChatMessage[]),
  toFrom: (view, wire, reading) =>
    toOpenAIChat(view, { elements: wire as OpenAIChatMessage[], reading }).messages,
  carries: { reasoning: ['plain'], opaque: chatOpaque },
  ignores: { isError: 'always' },
};
describeAdapterContract(chatAdapter);
describeWritingFromSource(chatAdapter, (wire) => wire as OpenAIChatMessage[]);
