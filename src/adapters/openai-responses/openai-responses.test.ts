import { describe, expect, it } from 'vitest';
import type { Message } from '../../core/transcript.js';
import { describeAdapterContract, expectBadInputAt, readFixture } from '../adapter-contract.case.js';
import { fromOpenAIResponses } from './convert-from-openai-responses.js';
import { toOpenAIResponses } from './convert-to-openai-responses.js';
import type { ResponseInputItem } from './openai-responses-api.js';

const fixture = (name: string) =>
  readFixture(new URL(`./fixtures/${name}`, import.meta.url)) as { input: ResponseInputItem[] };

describe('openai-responses round trip on fixtures', () => {
  it.each(['reasoning-function-calls.json', 'message-forms.json'])('%s', (name) => {
    const { input } = fixture(name);
    const canonical = fromOpenAIResponses(input);
    const back = toOpenAIResponses(canonical.messages);
    expect(back.messages).toStrictEqual(input);
    expect(JSON.stringify(back.messages)).toBe(JSON.stringify(input));
    expect([...canonical.warnings, ...back.warnings]).toEqual([]);
  });

  it('groups a run of reasoning, calls and an assistant message into one assistant message', () => {
    const { messages } = fromOpenAIResponses(fixture('reasoning-function-calls.json').input);
    expect(messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'user',
      'assistant',
      'tool',
    ]);
    expect(messages[2]?.parts.map((part) => part.type)).toEqual(['reasoning', 'tool-call', 'tool-call']);
    expect(messages[2]?.parts[0]).toMatchObject({
      type: 'reasoning',
      text: expect.stringContaining('**Planning two lookups**'),
      redactedData: expect.stringMatching(/^gAAAAA/),
    });
    expect(messages[4]?.parts[0]).toMatchObject({
      type: 'tool-result',
      callId: 'call_Wq1Bn9yTe4KsLm0Pv7Xc2RdA',
      name: 'get_weather',
    });
    expect(messages[5]?.parts.map((part) => part.type)).toEqual(['reasoning', 'text']);
  });

  it('keeps two assistant message items apart inside one canonical message', () => {
    const { messages } = fromOpenAIResponses(fixture('message-forms.json').input);
    expect(messages[4]?.parts.map((part) => part.type)).toEqual(['text', 'text', 'text']);
    const back = toOpenAIResponses([messages[4] as Message]).messages;
    expect(back).toHaveLength(2);
  });
});

describe('toOpenAIResponses defaults and warnings', () => {
  it('writes harness-made messages in the short forms', () => {
    const transcript: Message[] = [
      { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        parts: [
          { type: 'text', text: 'calling' },
          { type: 'tool-call', id: 'c1', name: 'f', arguments: '{}' },
        ],
      },
      { role: 'tool', parts: [{ type: 'tool-result', callId: 'c1', name: 'f', content: 'ok' }] },
    ];
    expect(toOpenAIResponses(transcript)).toEqual({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'calling' },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'ok' },
      ],
      warnings: [],
    });
  });

  it('reasoning-without-id and reasoning-metadata-dropped', () => {
    const { messages, warnings } = toOpenAIResponses([
      { role: 'assistant', parts: [{ type: 'reasoning', text: 'plan', signature: 'sig' }] },
    ]);
    expect(messages).toEqual([{ type: 'reasoning', summary: [{ type: 'summary_text', text: 'plan' }] }]);
    expect(warnings.map((warning) => warning.code)).toEqual([
      'reasoning-metadata-dropped',
      'reasoning-without-id',
    ]);
  });

  it('tool-error-flag-dropped, unsupported-part and empty-content', () => {
    const { messages, warnings } = toOpenAIResponses([
      { role: 'assistant', parts: [] },
      {
        role: 'tool',
        parts: [{ type: 'tool-result', callId: 'c', name: 'f', content: 'boom', isError: true }],
      },
      { role: 'user', parts: [{ type: 'tool-call', id: 'x', name: 'f', arguments: '{"a":1}' }] },
    ]);
    expect(messages).toEqual([
      { type: 'function_call_output', call_id: 'c', output: 'boom' },
      { role: 'user', content: 'f {"a":1}' },
    ]);
    expect(warnings.map((warning) => [warning.code, warning.messageIndex])).toEqual([
      ['empty-content', 0],
      ['tool-error-flag-dropped', 1],
      ['unsupported-part', 2],
    ]);
  });
});

describe('fromOpenAIResponses validation', () => {
  const fails = (input: unknown) => () => fromOpenAIResponses(input as ResponseInputItem[]);

  it('names the item index of an unsupported item type', () => {
    const input = [
      { role: 'user', content: 'hi' },
      { type: 'web_search_call', id: 'ws_1', status: 'completed' },
    ];
    expectBadInputAt(fails(input), /openai-responses item 1: unsupported item type "web_search_call"/, 1);
  });

  it('names the field of a malformed item', () => {
    expect(fails([{ type: 'function_call', call_id: 'c', name: 'f' }])).toThrow(/item 0: arguments/);
    expect(fails([{ role: 'robot', content: 'x' }])).toThrow(/item 0: role/);
    expect(fails([{ role: 'user', content: [{ type: 'input_image', detail: 'low' }] }])).toThrow(
      /input_image needs an image_url or a file_id/,
    );
    expect(
      fails([{ type: 'reasoning', id: 'rs', summary: [{ type: 'summary_text', text: 'x', extra: 1 }] }]),
    ).toThrow(/summary\.0/);
  });
});

describeAdapterContract({
  name: 'openai-responses',
  to: (messages) => {
    const { messages: wire, warnings } = toOpenAIResponses(messages);
    return { wire, warnings };
  },
  from: (wire) => fromOpenAIResponses(wire as ResponseInputItem[]),
  carries: { reasoning: ['plain', 'encrypted', 'redacted'], toolResultImages: true },
  ignores: { isError: 'always' },
});
