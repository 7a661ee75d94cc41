import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Message, messageText, type OpaquePart } from '../../core/transcript.js';
import {
  type AdapterUnderTest,
  describeAdapterContract,
  describeWritingFromSource,
  expectBadInputAt,
  readFixture,
} from '../adapter-contract.case.js';
import { toAnthropicMessages } from '../anthropic/convert-to-anthropic-messages.js';
import { fromOpenAIResponses } from './convert-from-openai-responses.js';
import { toOpenAIResponses } from './convert-to-openai-responses.js';
import type { ResponseInputItem } from './openai-responses-api.js';

const fixture = (name: string) =>
  readFixture(new URL(`./fixtures/${name}`, import.meta.url)) as { input: ResponseInputItem[] };

describe('openai-responses round trip on fixtures', () => {
  it.each(['reasoning-function-calls.json', 'message-forms.json', 'codex-tools.json'])('%s', (name) => {
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

describe('what Codex sends: custom and local shell tools, compaction, web search', () => {
  const read = () => fromOpenAIResponses(fixture('codex-tools.json').input).messages;
  const kinds = (message: Message | undefined) =>
    (message?.parts ?? []).map((part) => (part.type === 'opaque' ? part.kind : part.type));

  it('reads custom and local shell calls as tool calls, each answered by its output', () => {
    const messages = read();
    expect(messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'system',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'system',
      'assistant',
      'tool',
      'assistant',
      'user',
    ]);
    // The compacted history is what the model continues from: pinned like instructions, never
    // folded with the work after it.
    expect(messages[2]).toMatchObject({ role: 'system', parts: [{ type: 'opaque', kind: 'compaction' }] });
    expect(kinds(messages[3])).toEqual(['reasoning', 'web_search_call', 'tool-call']);
    expect(messages[3]?.parts[2]).toMatchObject({
      type: 'tool-call',
      id: 'call_Kq9tS2',
      name: 'local_shell',
      arguments: expect.stringContaining('"command":["bash","-lc","pytest tests/test_parser.py -x"]'),
    });
    expect(messages[4]?.parts[0]).toMatchObject({
      type: 'tool-result',
      callId: 'call_Kq9tS2',
      name: 'local_shell',
    });
    expect(messages[5]?.parts[0]).toMatchObject({
      type: 'tool-call',
      id: 'call_Ap7Hx1',
      name: 'apply_patch',
      arguments: expect.stringMatching(/^\*\*\* Begin Patch\n/),
    });
    expect(messages[6]?.parts[0]).toMatchObject({
      type: 'tool-result',
      callId: 'call_Ap7Hx1',
      name: 'apply_patch',
      content: expect.stringContaining('M src/parser.py'),
    });
    expect(messages[8]?.parts[0]).toMatchObject({
      type: 'tool-result',
      callId: 'call_Zr4Lm8',
      name: 'local_shell',
    });
    // Tools the developer adds are instructions: a system message, pinned like one.
    expect(messages[9]).toMatchObject({
      role: 'system',
      parts: [{ type: 'opaque', kind: 'additional_tools' }],
    });
    // The tool search call joins the assistant run; its output answers it in a tool message.
    expect(kinds(messages[10])).toEqual(['tool_search_call']);
    expect(kinds(messages[11])).toEqual(['tool_search_output']);
    expect(kinds(messages[12])).toEqual(['text', 'item_reference']);
    expect(kinds(messages[1])).toEqual(['text', 'input_file']);
    expect((messages[1]!.parts[1] as OpaquePart).text).toBe('parser-spec.pdf');
    expect(messageText(messages[3]!)).toContain('tree-sitter parser error recovery');
    expect(messageText(messages[2]!)).not.toContain('gAAAAABpZ3X9');
  });

  it('a governed view (outputs folded) writes the same item kinds back, each call answered', () => {
    const messages = read().map((message) =>
      message.role === 'tool' && message.parts[0]?.type === 'tool-result'
        ? { ...message, parts: [{ ...message.parts[0], content: '[folded]' }] }
        : message,
    );
    const { messages: items, warnings } = toOpenAIResponses(messages);
    expect(warnings).toEqual([]);
    const types = items.map((item) => (item as { type?: string }).type ?? 'message');
    expect(types).toEqual(
      fixture('codex-tools.json').input.map((item) => (item as { type?: string }).type ?? 'message'),
    );
    expect(items[6]).toEqual({ type: 'function_call_output', call_id: 'call_Kq9tS2', output: '[folded]' });
    expect(items[8]).toEqual({ type: 'custom_tool_call_output', call_id: 'call_Ap7Hx1', output: '[folded]' });
    expect(items[10]).toEqual({ type: 'local_shell_call_output', id: 'call_Zr4Lm8', output: '[folded]' });
  });

  it('another adapter writes the opaque items as text with a warning and the tool calls as calls', () => {
    const { messages, warnings } = toAnthropicMessages(read());
    const text = JSON.stringify(messages);
    expect(text).toContain('"type":"tool_use","id":"call_Ap7Hx1","name":"apply_patch"');
    expect(text).toContain('[compaction omitted]');
    expect(warnings.map((warning) => warning.code)).toContain('unsupported-part');
  });
});

describe('fromOpenAIResponses validation', () => {
  const fails = (input: unknown) => () => fromOpenAIResponses(input as ResponseInputItem[]);

  it('names the item index of an item whose type is not a string', () => {
    const input = [
      { role: 'user', content: 'hi' },
      { type: 7, id: 'ws_1' },
    ];
    expectBadInputAt(fails(input), /openai-responses item 1: unsupported item type 7/, 1);
  });

  it('names the field of a malformed item', () => {
    expect(fails([{ type: 'function_call', call_id: 'c', name: 'f' }])).toThrow(/item 0: arguments/);
    expect(fails([{ type: 'custom_tool_call', call_id: 'c', name: 'apply_patch' }])).toThrow(/item 0: input/);
    expect(fails([{ type: 'local_shell_call_output', output: '{}' }])).toThrow(/item 0: id/);
    expect(fails([{ role: 'robot', content: 'x' }])).toThrow(/item 0: role/);
    expect(fails([{ role: 'user', content: [{ type: 'input_image', detail: 'low' }] }])).toThrow(
      /input_image needs an image_url or a file_id/,
    );
    expect(
      fails([{ type: 'reasoning', id: 'rs', summary: [{ type: 'summary_text', text: 'x', extra: 1 }] }]),
    ).toThrow(/summary\.0/);
  });
});

/** The first opaque part the adapter reads from `items`, wherever it lands. */
function readOpaque(items: unknown[]): OpaquePart {
  const parts = fromOpenAIResponses(items as ResponseInputItem[]).messages.flatMap((message) =>
    message.parts.flatMap((part) =>
      part.type === 'tool-result' && Array.isArray(part.content) ? part.content : [part],
    ),
  );
  const found = parts.find((part) => part.type === 'opaque');
  if (found?.type !== 'opaque') throw new Error('expected an opaque part');
  return found;
}

const fileName = fc.stringMatching(/^[a-z]{1,8}\.pdf$/);
const inputFile = fileName.map((filename) => ({ type: 'input_file', filename, file_id: 'file-1' }));
/** Files in messages and outputs, and model items (web search, image generation) in the assistant run. */
const responsesOpaque = {
  user: inputFile.map((part) => readOpaque([{ role: 'user', content: [part] }])),
  assistant: fc
    .oneof(
      fc.lorem({ maxCount: 4 }).map((query) => ({
        type: 'web_search_call',
        status: 'completed',
        action: { type: 'search', query },
      })),
      fc
        .base64String({ minLength: 4, maxLength: 16 })
        .map((result) => ({ type: 'image_generation_call', status: 'completed', result })),
    )
    .map((item) => [readOpaque([item])]),
  toolResult: inputFile.map((part) =>
    readOpaque([{ type: 'function_call_output', call_id: 'c', output: [part] }]),
  ),
};

const responsesAdapter: AdapterUnderTest = {
  name: 'openai-responses',
  to: (messages) => {
    const { messages: wire, warnings } = toOpenAIResponses(messages);
    return { wire, warnings };
  },
  from: (wire) => fromOpenAIResponses(wire as ResponseInputItem[]),
  toFrom: (view, wire, reading) =>
    toOpenAIResponses(view, { elements: wire as ResponseInputItem[], reading }).messages,
  carries: {
    reasoning: ['plain', 'encrypted', 'redacted'],
    toolResultImages: true,
    opaque: responsesOpaque,
  },
  ignores: { isError: 'always' },
};
describeAdapterContract(responsesAdapter);
describeWritingFromSource(responsesAdapter, (wire) => wire as ResponseInputItem[]);
