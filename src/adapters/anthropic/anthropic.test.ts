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
import type { AnthropicMessagesPrompt } from './anthropic-api.js';
import { fromAnthropicMessages } from './convert-from-anthropic-messages.js';
import { toAnthropicMessages } from './convert-to-anthropic-messages.js';

const fixture = (name: string) =>
  readFixture(new URL(`./fixtures/${name}`, import.meta.url)) as AnthropicMessagesPrompt;

describe('anthropic round trip on fixtures', () => {
  it.each(['thinking-tools-cache.json', 'string-content.json', 'server-tools-documents.json'])(
    '%s',
    (name) => {
      const { system, messages } = fixture(name);
      const canonical = fromAnthropicMessages({ system, messages } as AnthropicMessagesPrompt);
      const { warnings, ...back } = toAnthropicMessages(canonical.messages);
      expect(back).toStrictEqual({ system, messages });
      expect(JSON.stringify(back)).toBe(JSON.stringify({ system, messages }));
      expect([...canonical.warnings, ...warnings]).toEqual([]);
    },
  );

  it('splits a user message with tool results into tool messages and a user message', () => {
    const { messages } = fromAnthropicMessages(fixture('thinking-tools-cache.json'));
    expect(messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(messages[4]?.parts[0]).toMatchObject({
      type: 'tool-result',
      callId: 'toolu_01B7xK3mN9pQ2rS5tU8vW1yZ',
      name: 'Bash',
      isError: true,
    });
    expect(messages[5]).toMatchObject({
      parts: [
        { type: 'text', providerData: { anthropic: { extra: { cache_control: { type: 'ephemeral' } } } } },
      ],
      providerData: { anthropic: { turn: 2 } },
    });
    expect(messages[2]?.parts[3]).toMatchObject({
      type: 'tool-call',
      arguments: '{"command":"git show --stat HEAD","description":"Latest commit","timeout":30000}',
    });
    expect(messages[6]?.parts[0]).toMatchObject({
      type: 'reasoning',
      text: '',
      redactedData: expect.any(String),
    });
  });
});

describe('toAnthropicMessages with the wire messages the transcript was read from', () => {
  const read = (name: string) => {
    const prompt = fixture(name);
    return { prompt, reading: fromAnthropicMessages(prompt) };
  };
  const turnless = (): Message => ({ role: 'user', parts: [{ type: 'text', text: 'a note of no turn' }] });

  it('does not take a wire message whose messages another user message would merge with', () => {
    const { prompt, reading } = read('thinking-tools-cache.json');
    // A user message of no turn right before a tool-result turn joins it on the wire.
    const at = reading.messages.findIndex((message) => message.role === 'tool');
    const view = [...reading.messages.slice(0, at), turnless(), ...reading.messages.slice(at)];
    const written = toAnthropicMessages(view, { elements: prompt.messages, reading });
    expect(written.messages).toStrictEqual(toAnthropicMessages(view).messages);
    expect(written.messages.some((element) => prompt.messages.includes(element))).toBe(true);
  });
});

describe('toAnthropicMessages for transcripts from elsewhere', () => {
  const fromChat: Message[] = [
    { role: 'system', parts: [{ type: 'text', text: 'Be terse.' }] },
    { role: 'user', parts: [{ type: 'text', text: 'List files.' }] },
    {
      role: 'assistant',
      parts: [
        { type: 'text', text: '' },
        { type: 'tool-call', id: 'call_1', name: 'bash', arguments: '{"command": "ls"}' },
        { type: 'tool-call', id: 'call_2', name: 'bash', arguments: '{"command": "pwd"}' },
      ],
    },
    { role: 'tool', parts: [{ type: 'tool-result', callId: 'call_1', name: 'bash', content: 'a.txt' }] },
    { role: 'tool', parts: [{ type: 'tool-result', callId: 'call_2', name: 'bash', content: '/repo' }] },
    { role: 'user', parts: [{ type: 'text', text: 'Thanks' }] },
  ];

  it('merges tool and user messages into one user turn and leaves out empty text beside tool calls', () => {
    const { system, messages, warnings } = toAnthropicMessages(fromChat);
    expect(system).toEqual([{ type: 'text', text: 'Be terse.' }]);
    expect(messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'List files.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'bash', input: { command: 'ls' } },
          { type: 'tool_use', id: 'call_2', name: 'bash', input: { command: 'pwd' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'a.txt' },
          { type: 'tool_result', tool_use_id: 'call_2', content: '/repo' },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
    expect(warnings).toEqual([]);
  });

  it('reasoning-dropped: reasoning without a signature cannot be sent back', () => {
    const { messages, warnings } = toAnthropicMessages([
      {
        role: 'assistant',
        parts: [
          { type: 'reasoning', text: 'plan' },
          { type: 'text', text: 'answer' },
        ],
      },
    ]);
    expect(messages).toEqual([{ role: 'assistant', content: [{ type: 'text', text: 'answer' }] }]);
    expect(warnings).toEqual([expect.objectContaining({ code: 'reasoning-dropped', messageIndex: 0 })]);
  });

  it('reasoning-dropped: redacted reasoning keeps its data, and says its text is gone', () => {
    const { messages, warnings } = toAnthropicMessages([
      { role: 'assistant', parts: [{ type: 'reasoning', text: 'summary', redactedData: 'opaque' }] },
    ]);
    expect(messages).toEqual([
      { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'opaque' }] },
    ]);
    expect(warnings.map((warning) => warning.code)).toEqual(['reasoning-dropped']);
  });

  it('malformed-tool-arguments: text that is not a JSON object is wrapped, not lost', () => {
    const { messages, warnings } = toAnthropicMessages([
      {
        role: 'assistant',
        parts: [{ type: 'tool-call', id: 't', name: 'bash', arguments: '{"command": "ls' }],
      },
    ]);
    expect(messages[0]?.content).toEqual([
      { type: 'tool_use', id: 't', name: 'bash', input: { raw_arguments: '{"command": "ls' } },
    ]);
    expect(warnings.map((warning) => warning.code)).toEqual(['malformed-tool-arguments']);
  });

  it('system-in-conversation and unsupported-part', () => {
    const { messages, warnings } = toAnthropicMessages([
      { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      { role: 'system', parts: [{ type: 'text', text: 'late rule' }] },
      { role: 'user', parts: [{ type: 'image', ref: 'data:image/svg+xml,<svg/>', source: 'data' }] },
    ]);
    expect(messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hi' },
          { type: 'text', text: 'late rule' },
          { type: 'text', text: '[image omitted: inline]' },
        ],
      },
    ]);
    expect(warnings.map((warning) => [warning.code, warning.messageIndex])).toEqual([
      ['system-in-conversation', 1],
      ['unsupported-part', 2],
    ]);
  });
});

describe('fromAnthropicMessages validation', () => {
  const fails = (input: unknown) => () => fromAnthropicMessages(input as AnthropicMessagesPrompt);

  it('names the message index of a malformed block of a type it reads', () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png' } };
    const input = {
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'user', content: [image] },
      ],
    };
    expectBadInputAt(fails(input), /anthropic message 1: content\.0\.source/, 1);
    const callInUserTurn = { type: 'tool_use', id: 't', name: 'f', input: {} };
    expectBadInputAt(
      fails({ messages: [{ role: 'user', content: [callInUserTurn] }] }),
      /message 0: content\.0/,
      0,
    );
  });

  it('names the field of a malformed message or system', () => {
    expect(
      fails({
        messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'x', name: 'f', input: 'ls' }] }],
      }),
    ).toThrow(/message 0: content\.0\.input/);
    expect(fails({ messages: [{ role: 'wizard', content: 'x' }] })).toThrow(/message 0: role/);
    expect(fails({ messages: [{ role: 'system', content: [{ type: 'image', source: {} }] }] })).toThrow(
      /message 0: content/,
    );
    expect(fails({ system: [{ type: 'image' }], messages: [] })).toThrow(/anthropic system: 0/);
    expect(fails({ system: 'x' })).toThrow(/expected an array/);
    expect(fails([])).toThrow(/expected \{ system\?, messages \}/);
  });
});

/** The first part of the first message the adapter reads from `messages`. */
function readPart(messages: unknown[]): OpaquePart {
  const part = fromAnthropicMessages({ messages } as AnthropicMessagesPrompt).messages[0]?.parts[0];
  const inner = part?.type === 'tool-result' && Array.isArray(part.content) ? part.content[0] : part;
  if (inner?.type !== 'opaque') throw new Error('expected an opaque part');
  return inner;
}

const words = fc.lorem({ maxCount: 6 });
const documentBlock = words.map((data) => ({
  type: 'document',
  source: { type: 'text', media_type: 'text/plain', data },
  title: 'notes.txt',
}));
const searchResultBlock = words.map((text) => ({
  type: 'search_result',
  source: 'https://docs.example.com/a',
  title: 'A',
  content: [{ type: 'text', text }],
}));
/** Opaque parts as the adapter reads its own blocks: user documents, server tool pairs, documents in results. */
const anthropicOpaque = {
  user: fc
    .oneof(documentBlock, searchResultBlock)
    .map((block) => readPart([{ role: 'user', content: [block] }])),
  assistant: words.map((query) => {
    const id = 'srvtoolu_01';
    const use = { type: 'server_tool_use', id, name: 'web_search', input: { query } };
    const result = { type: 'web_search_tool_result', tool_use_id: id, content: [] };
    const { messages } = fromAnthropicMessages({
      messages: [{ role: 'assistant', content: [use, result] }],
    } as AnthropicMessagesPrompt);
    return messages[0]!.parts as OpaquePart[];
  }),
  toolResult: documentBlock.map((block) =>
    readPart([{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [block] }] }]),
  ),
};

const anthropicAdapter: AdapterUnderTest = {
  name: 'anthropic',
  to: (messages) => {
    const { warnings, ...wire } = toAnthropicMessages(messages);
    return { wire, warnings };
  },
  from: (wire) => fromAnthropicMessages(wire as AnthropicMessagesPrompt),
  toFrom: (view, wire, reading) => {
    const { warnings: _warnings, ...written } = toAnthropicMessages(view, {
      elements: (wire as AnthropicMessagesPrompt).messages,
      reading,
    });
    return written;
  },
  carries: { reasoning: ['signed', 'redacted'], toolResultImages: true, opaque: anthropicOpaque },
  argumentsAsJson: true,
};
describeAdapterContract(anthropicAdapter);
describeWritingFromSource(anthropicAdapter, (wire) => (wire as AnthropicMessagesPrompt).messages);
