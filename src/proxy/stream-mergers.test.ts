/**
 * The stream mergers on rounds the scripted upstream cannot write: thinking, text after a tool
 * call, a chunk that carries text and a call at once, reasoning items. What comes out must keep
 * the route's grammar and read, through the SDK's own accumulator, as one answer.
 */
import { BetaMessageStream } from '@anthropic-ai/sdk/lib/BetaMessageStream';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import { Stream } from 'openai/streaming';
import { describe, expect, it } from 'vitest';
import type { Wire } from '../testing/upstream-test-kit.js';
import { mergeAnthropicStreams } from './anthropic-stream-merger.js';
import { mergeChatStreams } from './chat-stream-merger.js';
import { mergeResponsesStreams } from './responses-stream-merger.js';
import { encodeSse, type SseMessage, type StreamMerger, UNFINISHED_TURN_NOTE } from './stream-merger.js';
import { streamGrammarProblems } from './testing/stream-grammar.js';
import { EXPAND_TOOL, isRecoveryTool } from './transparent-recovery.js';

const options = { isInternal: isRecoveryTool, client: { tool_choice: 'auto' } };

/** Every round through the merger, the last one finished; what the client got, and each round's answer. */
function merge(merger: StreamMerger, rounds: SseMessage[][]) {
  const sent: SseMessage[] = [];
  const answers: Wire[] = [];
  rounds.forEach((round, position) => {
    for (const message of round) sent.push(...merger.push(message));
    const end = merger.endRound();
    if (end.kind !== 'answered') throw new Error(`round ${position} ended ${end.kind}`);
    answers.push(end.answer);
    sent.push(...(position === rounds.length - 1 ? merger.finish() : merger.continueRound()));
  });
  return { sent, text: encodeSse(sent), answers };
}

/** The events as the SDKs' `fromReadableStream` reads them: one JSON value a line. */
function jsonLines(messages: readonly SseMessage[]): ReadableStream<Uint8Array> {
  const lines = messages.filter((message) => message.data !== '[DONE]').map((message) => `${message.data}\n`);
  return new Response(lines.join('')).body!;
}

const named = (payload: Wire): SseMessage => ({ event: payload.type, data: JSON.stringify(payload) });

describe('Anthropic Messages', () => {
  const start = (id: string) =>
    named({
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: 'claude',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 1 },
      },
    });
  const block = (index: number, content_block: Wire, deltas: Wire[]) => [
    named({ type: 'content_block_start', index, content_block }),
    ...deltas.map((delta) => named({ type: 'content_block_delta', index, delta })),
    named({ type: 'content_block_stop', index }),
  ];
  const end = (stop_reason: string) => [
    named({
      type: 'message_delta',
      delta: { stop_reason, stop_sequence: null },
      usage: { output_tokens: 7 },
    }),
    named({ type: 'message_stop' }),
  ];
  const thinking = (index: number, text: string) =>
    block(index, { type: 'thinking', thinking: '', signature: '' }, [
      { type: 'thinking_delta', thinking: text },
      { type: 'signature_delta', signature: `sig-${text}` },
    ]);
  const tool = (index: number, id: string, name: string, json: string) =>
    block(index, { type: 'tool_use', id, name, input: {} }, [
      { type: 'input_json_delta', partial_json: '' },
      { type: 'input_json_delta', partial_json: json },
    ]);
  const text = (index: number, value: string) =>
    block(index, { type: 'text', text: '' }, [{ type: 'text_delta', text: value }]);

  it('keeps thinking, releases text written after a proxy call, and renumbers every block', async () => {
    const {
      sent,
      text: raw,
      answers,
    } = merge(mergeAnthropicStreams(options), [
      [
        start('msg_1'),
        ...thinking(0, 'need the file'),
        ...tool(1, 'tu_1', EXPAND_TOOL, '{"id":"function:read:1"}'),
        ...text(2, 'Expanding.'),
        ...end('tool_use'),
      ],
      [
        start('msg_2'),
        named({ type: 'ping' }),
        ...thinking(0, 'now edit'),
        ...text(1, 'Editing.'),
        ...tool(2, 'tu_2', 'edit', '{"path":"a"}'),
        ...end('tool_use'),
      ],
    ]);
    expect(streamGrammarProblems('messages', raw)).toEqual([]);
    const final = await MessageStream.fromReadableStream(jsonLines(sent)).finalMessage();
    expect(final.id).toBe('msg_1');
    expect(final.content.map((item) => item.type)).toEqual([
      'thinking',
      'text',
      'thinking',
      'text',
      'tool_use',
    ]);
    expect(final.content[4]).toMatchObject({ id: 'tu_2', name: 'edit', input: { path: 'a' } });
    expect(final.stop_reason).toBe('tool_use');
    // What goes back upstream: the round as the model wrote it, signature and parsed input kept.
    expect(answers[0].content).toEqual([
      { type: 'thinking', thinking: 'need the file', signature: 'sig-need the file' },
      { type: 'tool_use', id: 'tu_1', name: EXPAND_TOOL, input: { id: 'function:read:1' } },
      { type: 'text', text: 'Expanding.' },
    ]);
  });

  it('passes back upstream every block of a round as the SDK assembles it: a compaction, an MCP call', async () => {
    // The server compacted before the model answered (`compact_20260112`), and the model called a
    // tool of an MCP server the request connects, then the proxy's.
    const round = [
      start('msg_1'),
      ...block(0, { type: 'compaction', content: null, encrypted_content: null }, [
        {
          type: 'compaction_delta',
          content: 'Summary: module 3 divides by zero.',
          encrypted_content: 'enc-1',
        },
      ]),
      ...block(
        1,
        { type: 'mcp_tool_use', id: 'mcptoolu_1', name: 'search', server_name: 'docs', input: {} },
        [
          { type: 'input_json_delta', partial_json: '{"query": ' },
          { type: 'input_json_delta', partial_json: '"computeValue"}' },
        ],
      ),
      ...block(2, { type: 'mcp_tool_result', tool_use_id: 'mcptoolu_1', is_error: false, content: [] }, []),
      ...tool(3, 'tu_1', EXPAND_TOOL, '{"id":"function:read:1"}'),
      ...end('tool_use'),
    ];
    const { answers } = merge(mergeAnthropicStreams(options), [
      round,
      [start('msg_2'), ...text(0, 'Fixed.'), ...end('end_turn')],
    ]);
    const assembled = await BetaMessageStream.fromReadableStream(jsonLines(round)).finalMessage();
    expect(answers[0].content).toEqual(JSON.parse(JSON.stringify(assembled.content)));
    expect(answers[0].content[0]).toMatchObject({ content: 'Summary: module 3 divides by zero.' });
    expect(answers[0].content[1]).toMatchObject({ input: { query: 'computeValue' } });
  });

  it('ends a last round that only called the proxy as a finished turn', async () => {
    const { sent } = merge(mergeAnthropicStreams(options), [
      [
        start('msg_1'),
        ...text(0, 'Done. '),
        ...tool(1, 'tu_1', EXPAND_TOOL, '{"id":"x"}'),
        ...end('tool_use'),
      ],
    ]);
    const final = await MessageStream.fromReadableStream(jsonLines(sent)).finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Done. ' }]);
    expect(final.stop_reason).toBe('end_turn');
  });

  it('closes with a note an answer whose last round says nothing after a round of thinking', async () => {
    const { sent } = merge(mergeAnthropicStreams(options), [
      [
        start('msg_1'),
        ...thinking(0, 'Expand it.'),
        ...tool(1, 'tu_1', EXPAND_TOOL, '{"id":"x"}'),
        ...end('tool_use'),
      ],
      [start('msg_2'), ...end('end_turn')],
    ]);
    const final = await MessageStream.fromReadableStream(jsonLines(sent)).finalMessage();
    expect(final.content.map((block) => block.type)).toEqual(['thinking', 'text']);
  });

  it('leaves an answer of the model that ends in thinking as it came', async () => {
    const { sent } = merge(mergeAnthropicStreams(options), [
      [start('msg_1'), ...thinking(0, 'Out of tokens while'), ...end('max_tokens')],
    ]);
    const final = await MessageStream.fromReadableStream(jsonLines(sent)).finalMessage();
    expect(final.content.map((block) => block.type)).toEqual(['thinking']);
  });

  // The API refuses an assistant message that ends in thinking, or has no content.
  it.each([
    ['after thinking', true],
    ['alone', false],
  ])('closes with a note an answer whose last round only called the proxy %s', async (_, thought) => {
    const { sent, text: raw } = merge(mergeAnthropicStreams(options), [
      [
        start('msg_1'),
        ...(thought ? thinking(0, 'Expand it.') : []),
        ...tool(thought ? 1 : 0, 'tu_1', EXPAND_TOOL, '{"id":"x"}'),
        ...end('tool_use'),
      ],
    ]);
    expect(streamGrammarProblems('messages', raw)).toEqual([]);
    const final = await MessageStream.fromReadableStream(jsonLines(sent)).finalMessage();
    expect(final.content.map((block) => block.type)).toEqual(thought ? ['thinking', 'text'] : ['text']);
    expect(final.content.at(-1)).toEqual({ type: 'text', text: UNFINISHED_TURN_NOTE });
    expect(final.stop_reason).toBe('end_turn');
  });
});

describe('OpenAI Chat Completions', () => {
  const chunk = (id: string, delta: Wire, finish: string | null = null, extra: Wire = {}): SseMessage => ({
    data: JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created: id === 'c1' ? 1 : 2,
      model: 'gpt',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...extra,
    }),
  });
  const call = (index: number, id: string, name: string, args: string) => ({
    tool_calls: [{ index, id, type: 'function', function: { name, arguments: args } }],
  });

  // Gemini's OpenAI endpoint streams `stop` for a turn of calls.
  it.each(['tool_calls', 'stop', 'length'])(
    'closes with a note an answer whose last round only called the proxy, with nothing said (%s)',
    async (reason) => {
      const { sent, text: raw } = merge(mergeChatStreams(options), [
        [
          chunk('c1', { role: 'assistant', content: null }),
          chunk('c1', call(0, 'a', EXPAND_TOOL, '{"id":"x"}')),
          chunk('c1', {}, reason),
          { data: '[DONE]' },
        ],
      ]);
      expect(streamGrammarProblems('chat', raw)).toEqual([]);
      const final = await ChatCompletionStream.fromReadableStream(jsonLines(sent)).finalChatCompletion();
      expect(final.choices[0]?.message.content).toBe(UNFINISHED_TURN_NOTE);
      expect(final.choices[0]?.finish_reason).toBe(reason === 'tool_calls' ? 'stop' : reason);
    },
  );

  it('closes with a note an answer whose rounds said nothing', async () => {
    const { sent } = merge(mergeChatStreams(options), [
      [
        chunk('c1', { role: 'assistant', content: null }),
        chunk('c1', call(0, 'a', EXPAND_TOOL, '{}')),
        chunk('c1', {}, 'tool_calls'),
      ],
      [chunk('c2', { role: 'assistant', content: '' }), chunk('c2', {}, 'stop')],
    ]);
    const final = await ChatCompletionStream.fromReadableStream(jsonLines(sent)).finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe(UNFINISHED_TURN_NOTE);
  });

  it('keeps one id, one role and one finish, and renumbers the client calls from 0', async () => {
    const {
      sent,
      text: raw,
      answers,
    } = merge(mergeChatStreams(options), [
      [
        chunk('c1', { role: 'assistant', content: '' }),
        chunk('c1', { content: 'Look', ...call(0, 'a', EXPAND_TOOL, '{"id":"x"}') }),
        chunk('c1', {}, 'tool_calls'),
        { data: '[DONE]' },
      ],
      [
        chunk('c2', { role: 'assistant', content: '' }),
        chunk('c2', { content: 'ing.' }),
        chunk('c2', call(0, 'b', 'read_file', '{"path":')),
        chunk('c2', { tool_calls: [{ index: 0, function: { arguments: '"a"}' } }] }),
        chunk('c2', call(1, 'c', EXPAND_TOOL, '{"id":"y"}')),
        chunk('c2', call(2, 'd', 'grep', '{}')),
        // Some servers report usage on the finishing chunk itself.
        chunk('c2', {}, 'tool_calls', {
          usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 },
        }),
        { data: '[DONE]' },
      ],
    ]);
    expect(streamGrammarProblems('chat', raw)).toEqual([]);
    const final = await ChatCompletionStream.fromReadableStream(jsonLines(sent)).finalChatCompletion();
    expect(final.id).toBe('c1');
    expect(final.usage?.prompt_tokens).toBe(50);
    const message = final.choices[0]!.message;
    expect(message.content).toBe('Looking.');
    expect(
      message.tool_calls?.map((item) => [
        item.id,
        (item as Wire).function.name,
        (item as Wire).function.arguments,
      ]),
    ).toEqual([
      ['b', 'read_file', '{"path":"a"}'],
      ['d', 'grep', '{}'],
    ]);
    expect(answers[0].choices[0].message).toEqual({
      role: 'assistant',
      content: 'Look',
      tool_calls: [{ id: 'a', type: 'function', function: { name: EXPAND_TOOL, arguments: '{"id":"x"}' } }],
    });
  });
});

describe('OpenAI Chat Completions from servers that stream calls their own way', () => {
  const chunk = (delta: Wire, finish: string | null = null, choice: Wire = { index: 0 }): SseMessage => ({
    data: JSON.stringify({
      id: 'c1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ ...choice, delta, finish_reason: finish }],
    }),
  });
  const names = (message: Wire) => message.tool_calls.map((call: Wire) => call.function.name);

  // Gemini's OpenAI endpoint, older Ollama and SGLang send each call whole, without `index`.
  it('tells calls without an index apart by their ids', async () => {
    const whole = (id: string, name: string, args: string) => ({
      tool_calls: [{ id, type: 'function', function: { name, arguments: args } }],
    });
    const { sent, answers } = merge(mergeChatStreams(options), [
      [
        chunk({ role: 'assistant', content: null }),
        chunk(whole('a', EXPAND_TOOL, '{"id":"x"}')),
        chunk(whole('b', 'read_file', '{"path":"a"}')),
        chunk({}, 'tool_calls'),
      ],
      [
        chunk({ role: 'assistant', content: null }),
        chunk(whole('c', 'read_file', '{"path":"b"}')),
        chunk(whole('d', 'grep', '{}')),
        chunk({}, 'tool_calls'),
      ],
    ]);
    expect(answers[0].choices[0].message.tool_calls).toEqual([
      { id: 'a', type: 'function', function: { name: EXPAND_TOOL, arguments: '{"id":"x"}' } },
      { id: 'b', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
    ]);
    const final = await ChatCompletionStream.fromReadableStream(jsonLines(sent)).finalChatCompletion();
    expect(final.choices[0]?.message.tool_calls?.map((call) => [call.id, (call as Wire).function])).toEqual([
      ['c', { name: 'read_file', arguments: '{"path":"b"}' }],
      ['d', { name: 'grep', arguments: '{}' }],
    ]);
  });

  // Kimi on Fireworks and MiniMax on NVIDIA NIM send the whole name again with every piece.
  it('reads a name sent again with every piece of its call as the one name', () => {
    const piece = (args: string) => ({
      tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: EXPAND_TOOL, arguments: args } }],
    });
    const { sent, answers } = merge(mergeChatStreams(options), [
      [
        chunk({ role: 'assistant', content: null }),
        chunk(piece('{"id":')),
        chunk(piece('"x"}')),
        chunk({}, 'tool_calls'),
      ],
    ]);
    expect(names(answers[0].choices[0].message)).toEqual([EXPAND_TOOL]);
    expect(sent.some((message) => message.data.includes(EXPAND_TOOL))).toBe(false);
  });

  // Mistral's reasoning models stream their content as a list: thinking chunks, then text ones.
  it('reads text streamed as a list of chunks as text the model said', async () => {
    const listed = (type: string, text: string) => ({
      content: [type === 'text' ? { type, text } : { type, thinking: [{ type: 'text', text }] }],
    });
    const { sent, answers } = merge(mergeChatStreams(options), [
      [
        chunk({ role: 'assistant', content: '' }),
        chunk(listed('thinking', 'Need the file.')),
        chunk(listed('text', 'Looking it up.')),
        chunk({
          tool_calls: [
            { index: 0, id: 'a', type: 'function', function: { name: EXPAND_TOOL, arguments: '{"id":"x"}' } },
          ],
        }),
        chunk({}, 'tool_calls'),
      ],
      [chunk({ role: 'assistant', content: '' }), chunk(listed('thinking', 'Done.')), chunk({}, 'stop')],
    ]);
    expect(answers[0].choices[0].message.content).toBe('Looking it up.');
    expect(sent.some((message) => message.data.includes(UNFINISHED_TURN_NOTE))).toBe(false);
  });

  // Google's OpenAI endpoint once, and gateways (one-api) for Gemini and Claude, end with `[DONE]`
  // and never name a finish: the answer is whole, as the client reads it straight.
  it('takes a round that ends with [DONE] and names no finish as answered', () => {
    const { text, answers } = merge(mergeChatStreams(options), [
      [
        chunk({ role: 'assistant', content: '' }),
        chunk({
          tool_calls: [
            { index: 0, id: 'a', type: 'function', function: { name: EXPAND_TOOL, arguments: '{}' } },
          ],
        }),
        { data: '[DONE]' },
      ],
      [
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'The file says 42.' }),
        { data: '[DONE]' },
      ],
    ]);
    expect(answers[0].choices[0].message.tool_calls).toHaveLength(1);
    expect(text).toContain('The file says 42.');
    expect(text).not.toContain('"error"');
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
  });

  // Gateways (one-api) that leave out the choice's own `index`.
  it("holds the calls of a choice that names no index, as the request's one choice", () => {
    const { sent, answers } = merge(mergeChatStreams(options), [
      [
        chunk({ role: 'assistant', content: 'Looking.' }, null, {}),
        chunk(
          {
            tool_calls: [
              { index: 0, id: 'a', type: 'function', function: { name: EXPAND_TOOL, arguments: '{}' } },
            ],
          },
          null,
          {},
        ),
        chunk({}, 'tool_calls', {}),
      ],
    ]);
    expect(names(answers[0].choices[0].message)).toEqual([EXPAND_TOOL]);
    expect(sent.some((message) => message.data.includes(EXPAND_TOOL))).toBe(false);
  });
});

describe('OpenAI Chat Completions, thinking models', () => {
  it("keeps a round's reasoning_content and each call's own fields, for the turn recovery passes back", () => {
    const chunk = (delta: Wire, finish: string | null = null): SseMessage => ({
      data: JSON.stringify({
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'deepseek-reasoner',
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      }),
    });
    const signature = { google: { thought_signature: 'c2ln' } };
    const { answers } = merge(mergeChatStreams(options), [
      [
        chunk({ role: 'assistant', content: null, reasoning_content: 'The fold ' }),
        chunk({ reasoning_content: 'hides it.' }),
        chunk({
          tool_calls: [
            {
              index: 0,
              id: 'a',
              type: 'function',
              function: { name: EXPAND_TOOL, arguments: '' },
              extra_content: signature,
            },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"id":"x"}' } }] }),
        chunk({}, 'tool_calls'),
        { data: '[DONE]' },
      ],
    ]);
    expect(answers[0].choices[0].message).toEqual({
      role: 'assistant',
      content: null,
      reasoning_content: 'The fold hides it.',
      tool_calls: [
        {
          id: 'a',
          type: 'function',
          function: { name: EXPAND_TOOL, arguments: '{"id":"x"}' },
          extra_content: signature,
        },
      ],
    });
  });
});

describe('OpenAI Chat Completions through OpenRouter', () => {
  it("joins each reasoning_details entry's fragments by index, for the turn recovery passes back", () => {
    const chunk = (delta: Wire, finish: string | null = null): SseMessage => ({
      data: JSON.stringify({
        id: 'gen-1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'anthropic/claude-sonnet-4.5',
        choices: [{ index: 0, delta, finish_reason: finish }],
      }),
    });
    const text = (index: number, piece: string, more: Wire = {}) => ({
      reasoning_details: [
        { type: 'reasoning.text', text: piece, format: 'anthropic-claude-v1', index, ...more },
      ],
    });
    const { answers } = merge(mergeChatStreams(options), [
      [
        chunk({ role: 'assistant', content: '', ...text(0, 'The fold ') }),
        chunk(text(0, 'hides it.')),
        chunk(text(0, '', { signature: 'c2ln' })),
        chunk({ reasoning_details: [{ type: 'reasoning.encrypted', data: 'ZW5j', index: 1 }] }),
        chunk({ reasoning_details: [{ type: 'reasoning.summary', summary: 'unindexed' }] }),
        chunk({
          tool_calls: [
            { index: 0, id: 'a', type: 'function', function: { name: EXPAND_TOOL, arguments: '{"id":"x"}' } },
          ],
        }),
        chunk({}, 'tool_calls'),
        { data: '[DONE]' },
      ],
    ]);
    expect(answers[0].choices[0].message.reasoning_details).toEqual([
      {
        type: 'reasoning.text',
        text: 'The fold hides it.',
        format: 'anthropic-claude-v1',
        index: 0,
        signature: 'c2ln',
      },
      { type: 'reasoning.encrypted', data: 'ZW5j', index: 1 },
      { type: 'reasoning.summary', summary: 'unindexed' },
    ]);
  });

  // OpenRouter's AI SDK provider joins consecutive `reasoning.text` entries into one, keeping the
  // first signature: a later round's thinking joined to the first's, sent back, fails Anthropic's
  // signature check. The later rounds continue the first's turn, as on Messages.
  it("gives the client the signed thinking of the first round only, and each round's own upstream", () => {
    const chunk = (id: string, delta: Wire, finish: string | null = null): SseMessage => ({
      data: JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created: 1,
        model: 'anthropic/claude-sonnet-4.5',
        choices: [{ index: 0, delta, finish_reason: finish }],
      }),
    });
    const thinking = (id: string, piece: string, signature?: string) =>
      chunk(id, {
        reasoning: piece,
        reasoning_details: [
          { type: 'reasoning.text', text: piece, format: 'anthropic-claude-v1', index: 0, signature },
        ],
      });
    const { sent, answers } = merge(mergeChatStreams(options), [
      [
        chunk('gen-1', { role: 'assistant', content: '' }),
        thinking('gen-1', 'Need the file.', 'sig-1'),
        chunk('gen-1', {
          tool_calls: [
            { index: 0, id: 'a', type: 'function', function: { name: EXPAND_TOOL, arguments: '{"id":"x"}' } },
          ],
        }),
        chunk('gen-1', {}, 'tool_calls'),
      ],
      [
        chunk('gen-2', { role: 'assistant', content: '' }),
        thinking('gen-2', 'Now edit.', 'sig-2'),
        chunk('gen-2', { content: 'Editing.' }),
        chunk('gen-2', {}, 'stop'),
      ],
    ]);
    const details = sent
      .flatMap((message) => (message.data.startsWith('{') ? [JSON.parse(message.data)] : []))
      .flatMap((payload) => payload.choices?.[0]?.delta?.reasoning_details ?? []);
    expect(details.map((detail: Wire) => detail.signature)).toEqual(['sig-1']);
    expect(answers[1].choices[0].message.reasoning_details).toEqual([
      {
        type: 'reasoning.text',
        text: 'Now edit.',
        format: 'anthropic-claude-v1',
        index: 0,
        signature: 'sig-2',
      },
    ]);
  });
});

describe('OpenAI Responses', () => {
  const response = (id: string, status: string, output: Wire[]) => ({
    id,
    object: 'response',
    created_at: 1,
    status,
    output,
    tools: [
      { type: 'function', name: 'read_file' },
      { type: 'function', name: EXPAND_TOOL },
    ],
    tool_choice: 'auto',
    usage: null,
  });
  let sequence = 0;
  const event = (payload: Wire): SseMessage => named({ ...payload, sequence_number: sequence++ });
  const item = (index: number, value: Wire) => [
    event({
      type: 'response.output_item.added',
      output_index: index,
      item: { ...value, status: 'in_progress' },
    }),
    event({ type: 'response.output_item.done', output_index: index, item: value }),
  ];
  const reasoning = (id: string) => ({ id, type: 'reasoning', summary: [], encrypted_content: `enc-${id}` });
  const call = (id: string, name: string) => ({
    id: `fc_${id}`,
    type: 'function_call',
    status: 'completed',
    call_id: id,
    name,
    arguments: '{}',
  });
  const message = (id: string, text: string) => ({
    id,
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [] }],
  });
  const round = (id: string, items: Wire[]) => {
    sequence = 0;
    return [
      event({ type: 'response.created', response: response(id, 'in_progress', []) }),
      ...items.flatMap((value, index) => item(index, value)),
      event({ type: 'response.completed', response: response(id, 'completed', items) }),
    ];
  };

  const eventsOf = (raw: string) =>
    raw
      .split('\n\n')
      .filter(Boolean)
      .map((text) => JSON.parse(text.split('data: ')[1]!));
  const unstored = { ...options, client: { tool_choice: 'auto', store: false } };
  const clientOutput = (raw: string): string[] =>
    eventsOf(raw)
      .at(-1)
      .response.output.map((value: Wire) => value.id);
  /**
   * What a client passing items back by id would be refused for, by the API's two rules: a
   * reasoning item without the item that followed it, an item without the reasoning it came from.
   */
  const brokenPairs = (rounds: Wire[][], client: readonly string[]): string[] => {
    const got = new Set(client);
    return rounds.flatMap((items) => {
      let reasoningBefore: string | undefined;
      return items.flatMap((value, position) => {
        const next = items[position + 1];
        if (value.type === 'reasoning') {
          reasoningBefore = value.id;
          return got.has(value.id) && next !== undefined && !got.has(next.id)
            ? [`${value.id} without ${next.id}`]
            : [];
        }
        return got.has(value.id) && reasoningBefore !== undefined && !got.has(reasoningBefore)
          ? [`${value.id} without ${reasoningBefore}`]
          : [];
      });
    });
  };

  it('keeps reasoning, releases a message written after a proxy call, and completes with what was streamed', () => {
    const { text: raw, answers } = merge(mergeResponsesStreams(unstored), [
      round('resp_1', [reasoning('rs_1'), call('c1', EXPAND_TOOL), message('m1', 'Expanding.')]),
      round('resp_2', [reasoning('rs_2'), message('m2', 'Now reading.'), call('c2', 'read_file')]),
    ]);
    expect(streamGrammarProblems('responses', raw)).toEqual([]);
    const completed = eventsOf(raw).at(-1);
    expect(completed.response.id).toBe('resp_1');
    expect(completed.response.output.map((value: Wire) => value.id)).toEqual([
      'rs_1',
      'm1',
      'rs_2',
      'm2',
      'fc_c2',
    ]);
    expect(completed.response.tools).toEqual([{ type: 'function', name: 'read_file' }]);
    expect(answers[0].output.map((value: Wire) => value.id)).toEqual(['rs_1', 'fc_c1', 'm1']);
  });

  // With `store` on, a client passes items back by id, and the API refuses a reasoning item
  // without the item that followed it, and an item without its reasoning (`brokenPairs`).
  it('gives the client nothing a round held when it goes on, when the provider keeps items', () => {
    const rounds = [
      [reasoning('rs_1'), call('c1', EXPAND_TOOL), message('m1', 'Expanding.')],
      [reasoning('rs_2'), message('m2', 'Now reading.'), call('c2', 'read_file')],
    ];
    const { text: raw } = merge(
      mergeResponsesStreams(options),
      rounds.map((items, index) => round(`resp_${index + 1}`, items)),
    );
    expect(streamGrammarProblems('responses', raw)).toEqual([]);
    expect(raw).not.toContain('rs_1');
    expect(clientOutput(raw)).toEqual(['rs_2', 'm2', 'fc_c2']);
    expect(brokenPairs(rounds, clientOutput(raw))).toEqual([]);
  });

  it.each([
    [
      'a call made the round hold before',
      [call('c0', 'read_file'), reasoning('rs_2'), call('c1', EXPAND_TOOL)],
    ],
    ['two in a row', [reasoning('rs_1'), reasoning('rs_2'), call('c1', EXPAND_TOOL)]],
    ['text after the call', [reasoning('rs_1'), call('c1', EXPAND_TOOL), message('m1', 'Expanding.')]],
    ['a client call beside it', [reasoning('rs_1'), call('c1', EXPAND_TOOL), call('c3', 'read_file')]],
  ])('keeps every reasoning item with what it led to, when the provider keeps items: %s', (_, items) => {
    const going = merge(mergeResponsesStreams(options), [
      round('resp_1', items),
      round('resp_2', [message('m2', 'Done.')]),
    ]);
    expect(streamGrammarProblems('responses', going.text)).toEqual([]);
    expect(clientOutput(going.text)).toEqual(['m2']);
    // The same round ending the answer (no room left for another): what precedes the proxy's call.
    const ending = merge(mergeResponsesStreams(options), [round('resp_1', items)]);
    expect(streamGrammarProblems('responses', ending.text)).toEqual([]);
    expect(brokenPairs([items], clientOutput(ending.text))).toEqual([]);
    expect(clientOutput(ending.text)).not.toContain('fc_c1');
  });

  it('keeps a hosted call with the output the server gave it in the same round', () => {
    const shell = {
      id: 'sh_1',
      type: 'shell_call',
      call_id: 'call_sh',
      status: 'completed',
      action: { commands: ['ls'] },
      environment: { type: 'container_reference', container_id: 'cntr_1' },
    };
    const output = {
      id: 'sho_1',
      type: 'shell_call_output',
      call_id: 'call_sh',
      status: 'completed',
      output: [],
    };
    const { text: raw } = merge(mergeResponsesStreams(unstored), [
      round('resp_1', [shell, output, call('c1', EXPAND_TOOL)]),
      round('resp_2', [message('m2', 'Done.')]),
    ]);
    expect(clientOutput(raw)).toEqual(['sh_1', 'sho_1', 'm2']);
  });

  it("keeps the proxy's calls out of a failed round's response", () => {
    const merger = mergeResponsesStreams(options);
    const sent: SseMessage[] = [];
    for (const message of round('resp_1', [call('c1', EXPAND_TOOL)])) sent.push(...merger.push(message));
    merger.endRound();
    sent.push(...merger.continueRound());
    const failing = round('resp_2', [call('c2', EXPAND_TOOL)]);
    const failed = JSON.parse(failing.at(-1)!.data);
    failing[failing.length - 1] = named({
      ...failed,
      type: 'response.failed',
      response: { ...failed.response, status: 'failed' },
    });
    for (const message of failing) sent.push(...merger.push(message));
    expect(merger.endRound()).toEqual({ kind: 'failed' });
    expect(encodeSse(sent)).not.toContain('fc_c');
  });

  it('sends reasoning once the item after it is known not to be a call, and before that item', () => {
    const merger = mergeResponsesStreams(options);
    const events = round('resp_1', [reasoning('rs_1'), message('m1', 'Reading.'), call('c1', EXPAND_TOOL)]);
    const messageStarts = events.findIndex((event) => event.data.includes('"id":"m1"'));
    const sentBefore = events.slice(0, messageStarts).flatMap((event) => merger.push(event));
    expect(sentBefore.map((event) => JSON.parse(event.data).type)).toEqual(['response.created']);
    const sentWith = merger.push(events[messageStarts]!).map((event) => JSON.parse(event.data));
    expect(sentWith.map((event) => [event.type, event.item.id, event.output_index])).toEqual([
      ['response.output_item.added', 'rs_1', 0],
      ['response.output_item.done', 'rs_1', 0],
      ['response.output_item.added', 'm1', 1],
    ]);
    for (const event of events.slice(messageStarts + 1)) merger.push(event);
    merger.endRound();
    merger.continueRound();
    const last = round('resp_2', [message('m2', 'Done.')]);
    const rest = last.flatMap((event) => merger.push(event));
    merger.endRound();
    rest.push(...merger.finish());
    const output = JSON.parse(rest.at(-1)!.data).response.output.map((value: Wire) => value.id);
    expect(output).toEqual(['rs_1', 'm1', 'm2']);
  });

  // Responses-compatible servers (LiteLLM, OpenRouter) end each stream with `[DONE]` after
  // `response.completed`; the SDK's stream reads nothing after one.
  it('ends the merged answer with one [DONE], after its last event, where the rounds sent one', async () => {
    const done: SseMessage = { data: '[DONE]' };
    const { sent } = merge(mergeResponsesStreams(unstored), [
      [...round('resp_1', [reasoning('rs_1'), message('m1', 'Expanding.'), call('c1', EXPAND_TOOL)]), done],
      [...round('resp_2', [message('m2', 'Found it.')]), done],
    ]);
    expect(streamGrammarProblems('responses', encodeSse(sent))).toEqual([]);
    expect(sent.filter((event) => event.data === '[DONE]')).toHaveLength(1);
    expect(sent.at(-1)).toEqual(done);
    expect(JSON.parse(sent.at(-2)!.data).type).toBe('response.completed');
    const stream = Stream.fromSSEResponse(new Response(encodeSse(sent)), new AbortController());
    const read: Wire[] = [];
    for await (const event of stream) read.push(event as Wire);
    expect(read.at(-1)?.type).toBe('response.completed');
    expect(read.at(-1)?.response.output.map((value: Wire) => value.id)).toEqual(['rs_1', 'm1', 'm2']);
  });

  it("holds Codex's other calls like a function's: a round that goes on drops them all", () => {
    const patch = {
      id: 'ctc_1',
      type: 'custom_tool_call',
      call_id: 'p1',
      name: 'apply_patch',
      input: '*** Begin',
    };
    const shell = { id: 'lsh_1', type: 'local_shell_call', call_id: 's1', action: {}, status: 'completed' };
    const { text: raw } = merge(mergeResponsesStreams(unstored), [
      round('resp_1', [reasoning('rs_1'), patch, shell, call('c1', EXPAND_TOOL)]),
      round('resp_2', [message('m2', 'Done.')]),
    ]);
    expect(streamGrammarProblems('responses', raw)).toEqual([]);
    expect(raw).not.toContain('apply_patch');
    expect(raw).not.toContain('lsh_1');
    expect(
      eventsOf(raw)
        .at(-1)
        .response.output.map((value: Wire) => value.id),
    ).toEqual(['rs_1', 'm2']);
  });
});

describe('the grammar check', () => {
  it('refuses two rounds sent one after the other, as a proxy without a merger would', () => {
    const round = (id: string): SseMessage[] => [
      named({
        type: 'message_start',
        message: { id, type: 'message', role: 'assistant', content: [], usage: {} },
      }),
      named({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      named({ type: 'content_block_stop', index: 0 }),
      named({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } }),
      named({ type: 'message_stop' }),
    ];
    expect(streamGrammarProblems('messages', encodeSse(round('a')))).toEqual([]);
    expect(streamGrammarProblems('messages', encodeSse([...round('a'), ...round('b')]))).toEqual(
      expect.arrayContaining(['2 message_start events', 'block 0 started where 1 was next']),
    );
    const chat = (id: string): SseMessage[] => [
      {
        data: JSON.stringify({
          id,
          choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }],
        }),
      },
      { data: JSON.stringify({ id, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) },
      { data: '[DONE]' },
    ];
    expect(streamGrammarProblems('chat', encodeSse(chat('a')))).toEqual([]);
    expect(streamGrammarProblems('chat', encodeSse([...chat('a'), ...chat('b')]))).toEqual(
      expect.arrayContaining(['2 completion ids: a, b', '2 finish reasons', '2 role deltas']),
    );
  });
});
