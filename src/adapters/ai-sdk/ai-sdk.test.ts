import { describe, expect, it } from 'vitest';
import { approximateTokenCounter } from '../../core/tokens.js';
import { type Message, messageText, partText } from '../../core/transcript.js';
import { describeAdapterContract, expectBadInputAt, readFixture } from '../adapter-contract.case.js';
import type { ModelMessage } from './ai-sdk-api.js';
import { fromModelMessages } from './convert-from-model-messages.js';
import { toModelMessages } from './convert-to-model-messages.js';

const fixture = () =>
  readFixture(new URL('./fixtures/tool-loop.json', import.meta.url)) as { messages: ModelMessage[] };

describe('ai-sdk round trip on the fixture', () => {
  it('tool-loop.json', () => {
    const { messages } = fixture();
    const canonical = fromModelMessages(messages);
    const back = toModelMessages(canonical.messages);
    expect(back.messages).toStrictEqual(messages);
    expect(JSON.stringify(back.messages)).toBe(JSON.stringify(messages));
    expect([...canonical.warnings, ...back.warnings]).toEqual([]);
  });

  it('maps inputs, outputs, signatures and files to canonical parts', () => {
    const { messages } = fromModelMessages(fixture().messages);
    expect(messages[2]?.parts[0]).toMatchObject({
      type: 'reasoning',
      signature: expect.stringMatching(/^ErUB/),
    });
    expect(messages[2]?.parts[3]).toMatchObject({
      type: 'tool-call',
      arguments: '{"path":".","depth":2,"ignore":["node_modules","dist"]}',
    });
    expect(messages[1]?.parts[2]).toMatchObject({
      type: 'image',
      source: 'data',
      mediaType: 'application/pdf',
    });
    expect(messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'tool',
      'tool',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(messages[3]?.parts[0]).toMatchObject({
      content: '{"sections":["Goals","Architecture","Risks"],"pages":12}',
    });
    expect(messages[5]?.parts[0]).toMatchObject({ arguments: '{"path": "docs/risks.md"}' });
    expect(messages[6]?.parts[0]).toMatchObject({
      isError: true,
      content: expect.stringContaining('ENOENT'),
    });
    expect(messages[9]?.parts[0]).toMatchObject({
      isError: true,
      content: 'The user declined deleting files.',
    });
  });
});

describe('toModelMessages for transcripts from elsewhere', () => {
  it('parses arguments into input and remembers text JSON.stringify would not rebuild', () => {
    const transcript: Message[] = [
      {
        role: 'assistant',
        parts: [
          { type: 'tool-call', id: 'a', name: 'bash', arguments: '{"command":"ls"}' },
          { type: 'tool-call', id: 'b', name: 'bash', arguments: '{"command": "pwd"}' },
        ],
      },
      { role: 'tool', parts: [{ type: 'tool-result', callId: 'a', name: 'bash', content: 'x' }] },
      {
        role: 'tool',
        parts: [{ type: 'tool-result', callId: 'b', name: 'bash', content: 'y', isError: true }],
      },
    ];
    const { messages, warnings } = toModelMessages(transcript);
    expect(messages).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'tool-call', toolCallId: 'a', toolName: 'bash', input: { command: 'ls' } },
          {
            type: 'tool-call',
            toolCallId: 'b',
            toolName: 'bash',
            input: { command: 'pwd' },
            providerOptions: { selfGc: { arguments: '{"command": "pwd"}' } },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'a', toolName: 'bash', output: { type: 'text', value: 'x' } },
          {
            type: 'tool-result',
            toolCallId: 'b',
            toolName: 'bash',
            output: { type: 'error-text', value: 'y' },
          },
        ],
      },
    ]);
    expect(warnings).toEqual([]);
    expect(fromModelMessages(messages).messages[0]?.parts[1]).toMatchObject({
      arguments: '{"command": "pwd"}',
    });
  });

  it('malformed-tool-arguments: text that is not JSON travels as the input string', () => {
    const { messages, warnings } = toModelMessages([
      {
        role: 'assistant',
        parts: [{ type: 'tool-call', id: 'a', name: 'bash', arguments: '{"command": "ls' }],
      },
    ]);
    expect(messages[0]?.content).toEqual([
      { type: 'tool-call', toolCallId: 'a', toolName: 'bash', input: '{"command": "ls' },
    ]);
    expect(warnings.map((warning) => warning.code)).toEqual(['malformed-tool-arguments']);
    expect(fromModelMessages(messages).messages[0]?.parts[0]).toMatchObject({ arguments: '{"command": "ls' });
  });

  it('unsupported-part: an image in an assistant message becomes a text placeholder', () => {
    const { messages, warnings } = toModelMessages([
      { role: 'assistant', parts: [{ type: 'image', ref: 'https://example.com/a.png', source: 'url' }] },
    ]);
    expect(messages[0]?.content).toEqual([
      { type: 'text', text: '[image omitted: https://example.com/a.png]' },
    ]);
    expect(warnings.map((warning) => warning.code)).toEqual(['unsupported-part']);
  });

  it('tool-error-flag-dropped: a failed result with list content has no error form', () => {
    const { messages, warnings } = toModelMessages([
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: 'a',
            name: 'shot',
            content: [{ type: 'text', text: 'no' }],
            isError: true,
          },
        ],
      },
    ]);
    expect(messages[0]?.content).toEqual([
      {
        type: 'tool-result',
        toolCallId: 'a',
        toolName: 'shot',
        output: { type: 'content', value: [{ type: 'text', text: 'no' }] },
      },
    ]);
    expect(warnings.map((warning) => warning.code)).toEqual(['tool-error-flag-dropped']);
  });
});

describe('tool outputs as tools return them', () => {
  it('a JSON output with a property left undefined reads as the SDK takes it, and writes back as JSON', () => {
    // A tool that returns `{ stdout, stderr: undefined }`: `ai` takes it, JSON text leaves it out.
    const output = {
      type: 'json',
      value: { stdout: 'ok', stderr: undefined, lines: [1, { more: undefined }] },
    };
    const input = [
      { role: 'user', content: 'run it' },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'sh', input: {} }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'sh', output }] },
    ] as unknown as ModelMessage[];
    const { messages } = fromModelMessages(input);
    expect(messages[2]?.parts[0]).toMatchObject({
      type: 'tool-result',
      content: '{"stdout":"ok","lines":[1,{}]}',
    });
    const back = toModelMessages(messages).messages;
    expect(JSON.stringify(back)).toBe(JSON.stringify(input));
  });
});

describe('fields a later SDK adds to tool outputs', () => {
  it('ride along on the output and on each content item, and come back where they were', () => {
    const output = {
      type: 'content',
      value: [
        { type: 'text', text: 'see the chart', future: 1 },
        { type: 'image-data', data: 'iVBORw0KGgo=', mediaType: 'image/png', future: 2 },
        { type: 'media', data: 'UklGRg==', mediaType: 'audio/wav', providerOptions: { x: { y: 1 } } },
      ],
      future: 3,
    };
    const input = [
      { role: 'user', content: 'plot it' },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'plot', input: {} }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'plot', output }] },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'b',
            toolName: 'f',
            output: { type: 'text', value: 'v', future: 4 },
          },
        ],
      },
    ] as unknown as ModelMessage[];
    const back = toModelMessages(fromModelMessages(input).messages);
    expect(back.messages).toEqual(input);
    expect(back.warnings).toEqual([]);
  });
});

describe('parts the adapter keeps whole', () => {
  // What `generateText` answers with for a tool that needs approval, then a provider-executed
  // search whose result the provider returns in the same assistant message, then the approval.
  const history = [
    { role: 'user', content: 'Delete the temp files, then search the docs.' },
    {
      role: 'assistant',
      content: [
        { type: 'tool-call', toolCallId: 'del', toolName: 'rm', input: { path: 'tmp/' } },
        { type: 'tool-approval-request', approvalId: 'ap1', toolCallId: 'del' },
        {
          type: 'tool-call',
          toolCallId: 'ws',
          toolName: 'web_search',
          input: { query: 'ai sdk' },
          providerExecuted: true,
        },
        {
          type: 'tool-result',
          toolCallId: 'ws',
          toolName: 'web_search',
          output: { type: 'json', value: [{ url: 'https://ai-sdk.dev', title: 'AI SDK' }] },
        },
      ],
    },
    { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: 'ap1', approved: true }] },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'del',
          toolName: 'rm',
          output: { type: 'text', value: 'removed 3 files' },
        },
      ],
    },
    { role: 'assistant', content: [{ type: 'future-part', payload: { note: 'a later SDK' } }] },
  ] as unknown as ModelMessage[];

  it('reads tool approvals, a provider-executed result and an unknown part in place, and writes them back', () => {
    const { messages } = fromModelMessages(history);
    const kinds = messages.map((message) =>
      message.parts.map((part) => (part.type === 'opaque' ? part.kind : part.type)),
    );
    expect(kinds).toEqual([
      ['text'],
      ['tool-call', 'tool-approval-request', 'tool-call', 'tool-result'],
      ['tool-approval-response'],
      ['tool-result'],
      ['future-part'],
    ]);
    // The provider's own call and result are one pair, the provider's: both kept whole.
    expect(messages[1]!.parts.map((part) => part.type)).toEqual(['tool-call', 'opaque', 'opaque', 'opaque']);
    // The search result is read as the model reads it: its output, whole.
    expect(messageText(messages[1]!)).toContain(
      JSON.stringify([{ url: 'https://ai-sdk.dev', title: 'AI SDK' }]),
    );
    const back = toModelMessages(messages);
    expect(back.messages).toEqual(history);
    expect(back.warnings).toEqual([]);
  });

  it('counts a provider-executed result by its output, however the provider names its fields', () => {
    const page = 'lorem ipsum '.repeat(5_000);
    const fetched = {
      role: 'assistant',
      content: [
        {
          type: 'tool-call',
          toolCallId: 'wf',
          toolName: 'web_fetch',
          input: { url: 'https://example.com' },
          providerExecuted: true,
        },
        {
          type: 'tool-result',
          toolCallId: 'wf',
          toolName: 'web_fetch',
          output: {
            type: 'json',
            value: {
              type: 'web_fetch_result',
              source: { type: 'text', mediaType: 'text/plain', data: page },
            },
          },
        },
      ],
    } as unknown as ModelMessage;
    const [message] = fromModelMessages([fetched]).messages;
    const tokens = message!.parts.reduce(
      (sum, part) => sum + approximateTokenCounter.count(partText(part)),
      0,
    );
    expect(tokens).toBeGreaterThan(approximateTokenCounter.count(page));
  });

  it('a governed view keeps them whole where they stand, the client result folded', () => {
    const { messages } = fromModelMessages(history);
    const folded = messages.map((message) =>
      message.parts[0]?.type === 'tool-result'
        ? { ...message, parts: [{ ...message.parts[0], content: '[folded function:rm:1]' }] }
        : message,
    );
    const back = toModelMessages(folded).messages as unknown as Array<{ content: unknown }>;
    expect(back[1]).toEqual(history[1]);
    expect(back[2]).toEqual(history[2]);
    expect(JSON.stringify(back[3])).toContain('[folded function:rm:1]');
  });
});

describe('fromModelMessages validation', () => {
  const fails = (input: unknown) => () => fromModelMessages(input as ModelMessage[]);

  it('names the message index of a malformed part', () => {
    const input = [
      { role: 'user', content: 'hi' },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'f' }] },
    ];
    expectBadInputAt(fails(input), /ai-sdk message 1: content\.0\.output/, 1);
  });

  it('names the field of a malformed message', () => {
    expect(fails([{ role: 'system', content: [{ type: 'text', text: 'x' }] }])).toThrow(/message 0: content/);
    expect(
      fails([{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'f' }] }]),
    ).toThrow(/content\.0\.input: input is required/);
    const custom = { type: 'content', value: [{ type: 'custom' }] };
    const result = { type: 'tool-result', toolCallId: 'a', toolName: 'f', output: custom };
    expect(fails([{ role: 'tool', content: [result] }])).toThrow(/content\.0\.output\.value\.0\.type/);
  });
});

describeAdapterContract({
  name: 'ai-sdk',
  to: (messages) => {
    const { messages: wire, warnings } = toModelMessages(messages);
    return { wire, warnings };
  },
  from: (wire) => fromModelMessages(wire as ModelMessage[]),
  carries: { toolResultImages: true },
  ignores: { isError: 'with-list-content' },
});
