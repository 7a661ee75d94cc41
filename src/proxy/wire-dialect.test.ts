import { describe, expect, it } from 'vitest';
import type { Wire } from '../testing/upstream-test-kit.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { responsesDialect } from './responses-dialect.js';
import { UNFINISHED_TURN_NOTE } from './stream-merger.js';
import { eventUsage } from './wire-dialect.js';

describe('eventUsage', () => {
  const response = (usage: unknown) => ({
    instructions: 'You are Codex.',
    tools: [{ type: 'function', name: 'shell', parameters: { properties: { usage: { type: 'string' } } } }],
    usage,
  });

  it('reads the usage of the events that report it, in each provider shape', () => {
    const completed = {
      type: 'response.completed',
      response: response({ input_tokens: 900, input_tokens_details: { cached_tokens: 800 } }),
    };
    expect(eventUsage(responsesDialect, JSON.stringify(completed))).toEqual({
      inputTokens: 900,
      cachedTokens: 800,
    });
    const start = {
      type: 'message_start',
      message: { id: 'm', usage: { input_tokens: 10, cache_read_input_tokens: 90 } },
    };
    expect(eventUsage(anthropicMessagesDialect, JSON.stringify(start))).toMatchObject({ inputTokens: 100 });
    // Spaces around the colon, as some servers write it.
    const chunk = '{"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 5}}';
    expect(eventUsage(chatDialect, chunk)).toEqual({ inputTokens: 50, cachedTokens: 0 });
  });

  it('leaves events without a usage object unparsed, and an unreadable one unread', () => {
    const created = { type: 'response.created', response: response(null) };
    expect(eventUsage(responsesDialect, JSON.stringify(created))).toBeUndefined();
    expect(
      eventUsage(chatDialect, '{"choices":[{"delta":{"content":"the \\"usage\\": {} of it"}}]}'),
    ).toBeUndefined();
    expect(eventUsage(chatDialect, '{"usage":{"prompt_tokens":')).toBeUndefined();
    expect(eventUsage(chatDialect, '[DONE]')).toBeUndefined();
  });
});

describe('the assistant turn recovery passes back', () => {
  it('chat: the answer as a client sends it back, without what only an answer carries', () => {
    const call = {
      id: 'a',
      type: 'function',
      function: { name: 'selfgc_expand', arguments: '{}' },
      extra_content: { google: { thought_signature: 'c2ln' } },
    };
    const answer = {
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            reasoning_content: 'Expand first.',
            refusal: null,
            annotations: [],
            audio: { id: 'audio_1', data: 'UklG', expires_at: 1, transcript: 'hm' },
            tool_calls: [call],
          },
        },
      ],
    };
    const body = chatDialect.withToolResults({ messages: [] }, answer, [{ id: 'a', output: 'page' }]);
    expect(body.messages).toEqual([
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'Expand first.',
        audio: { id: 'audio_1' },
        tool_calls: [call],
      },
      { role: 'tool', tool_call_id: 'a', content: 'page' },
    ]);
  });
});

describe('the assistant turn recovery passes back, on messages', () => {
  it('holds no text block of whitespace alone, which the API refuses in a message with no other text', () => {
    const thinking = { type: 'thinking', thinking: 'Expand it.', signature: 'c2ln' };
    const expand = { type: 'tool_use', id: 'toolu_1', name: 'selfgc_expand', input: { id: 'x' } };
    const answer = {
      role: 'assistant',
      content: [thinking, { type: 'text', text: '\n\n' }, expand, { type: 'text', text: ' ' }],
      stop_reason: 'tool_use',
    };
    const body = anthropicMessagesDialect.withToolResults({ messages: [] }, answer, [
      { id: 'toolu_1', output: 'page' },
    ]);
    expect(body.messages).toEqual([
      { role: 'assistant', content: [thinking, expand] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'page' }] },
    ]);
  });
});

describe('the calls a recovery round continues with', () => {
  const isProxy = (name: string) => name.startsWith('selfgc_');

  it("responses: only the proxy's own, whatever kind of call the client's are", () => {
    const reasoning = { id: 'rs_1', type: 'reasoning', summary: [], encrypted_content: 'enc' };
    const expand = {
      id: 'fc_1',
      type: 'function_call',
      call_id: 'c1',
      name: 'selfgc_expand',
      arguments: '{}',
    };
    const search = { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search' } };
    const client = [
      { id: 'fc_2', type: 'function_call', call_id: 'c2', name: 'shell', arguments: '{}' },
      { id: 'ctc_1', type: 'custom_tool_call', call_id: 'c3', name: 'apply_patch', input: '*** Begin Patch' },
      { id: 'lsh_1', type: 'local_shell_call', call_id: 'c4', status: 'completed', action: { type: 'exec' } },
      { id: 'tsc_1', type: 'tool_search_call', call_id: 'c5', execution: 'client', arguments: {} },
      { id: 'sh_1', type: 'shell_call', call_id: 'c6', action: { commands: ['ls'] } },
      { id: 'ap_1', type: 'apply_patch_call', call_id: 'c7', operation: { type: 'update_file' } },
      { id: 'cu_1', type: 'computer_call', call_id: 'c8', action: { type: 'click' } },
    ];
    // What the server ran comes with its output in the same answer: no client answers it.
    const server = [
      { id: 'tsc_2', type: 'tool_search_call', call_id: 'c9', execution: 'server', arguments: {} },
      { id: 'tso_2', type: 'tool_search_output', call_id: 'c9', execution: 'server', tools: [] },
      { id: 'sh_2', type: 'shell_call', call_id: 'c10', action: { commands: ['ls'] } },
      { id: 'sho_2', type: 'shell_call_output', call_id: 'c10', output: [] },
    ];
    const answer = { output: [reasoning, expand, ...client, search, ...server] };
    // Without the client's calls, the items left no longer pair as the provider holds them: they
    // go upstream as new input, without their ids.
    const noId = ({ id: _id, ...item }: Record<string, unknown>) => item;
    expect(responsesDialect.keepToolCalls(answer, isProxy).output).toEqual(
      [reasoning, expand, search, ...server].map(noId),
    );
    // To a client that keeps no item, the answer without the proxy's calls.
    const unstored = { store: false };
    expect(responsesDialect.keepToolCalls(answer, (name) => !isProxy(name), unstored).output).toEqual([
      reasoning,
      ...client,
      search,
      ...server,
    ]);
  });

  it('responses with store: the client gets what it can pass back by id, the upstream new input', () => {
    const reasoning = (id: string) => ({ id, type: 'reasoning', summary: [] });
    const call = (id: string, name: string) => ({
      id: `fc_${id}`,
      type: 'function_call',
      call_id: id,
      name,
      arguments: '{}',
    });
    const message = { id: 'msg_1', type: 'message', role: 'assistant', content: [] };
    const ids = (answer: Record<string, unknown>) =>
      (answer.output as Array<{ id?: string }>).map((item) => item.id);
    const toClient = (output: unknown[]) =>
      ids(responsesDialect.keepToolCalls({ output, store: true }, (name) => !isProxy(name), {}));
    // Before the proxy's call, less the reasoning that led to it; nothing after it.
    expect(
      toClient([
        reasoning('rs_1'),
        message,
        reasoning('rs_2'),
        call('p', 'selfgc_expand'),
        call('a', 'read'),
      ]),
    ).toEqual(['rs_1', 'msg_1']);
    expect(toClient([reasoning('rs_1'), call('a', 'read'), call('p', 'selfgc_expand')])).toEqual([
      'rs_1',
      'fc_a',
    ]);
    // Upstream, a round's reasoning passed by id would lack the client call that followed it.
    const turn = responsesDialect.keepToolCalls(
      {
        output: [
          { ...reasoning('rs_1'), encrypted_content: 'enc' },
          call('a', 'read'),
          call('p', 'selfgc_expand'),
        ],
      },
      isProxy,
    );
    const next = responsesDialect.withToolResults({ input: [] }, turn, [{ id: 'p', output: 'page' }]);
    expect(next.input).toEqual([
      { type: 'reasoning', summary: [], encrypted_content: 'enc' },
      { type: 'function_call', call_id: 'p', name: 'selfgc_expand', arguments: '{}' },
      { type: 'function_call_output', call_id: 'p', output: 'page' },
    ]);
    // A round of the proxy's calls alone goes by id.
    const whole = { output: [reasoning('rs_1'), call('p', 'selfgc_expand')] };
    expect(responsesDialect.keepToolCalls(whole, isProxy)).toBe(whole);
  });

  it("chat: the client's answer is never left with neither text nor calls", () => {
    const expand = { id: 'a', type: 'function', function: { name: 'selfgc_expand', arguments: '{}' } };
    const answer = (content: string | null) => ({
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: { role: 'assistant', content, tool_calls: [expand] },
        },
      ],
    });
    const toClient = (content: string | null) =>
      (
        chatDialect.keepToolCalls(answer(content), (name) => !isProxy(name), {}) as {
          choices: [{ message: Wire }];
        }
      ).choices[0].message;
    expect(toClient(null)).toEqual({ role: 'assistant', content: UNFINISHED_TURN_NOTE });
    expect(toClient('Looking.')).toEqual({ role: 'assistant', content: 'Looking.' });
    // A turn going upstream keeps what it had.
    const turn = chatDialect.keepToolCalls(answer(null), isProxy) as { choices: [{ message: Wire }] };
    expect(turn.choices[0].message.content).toBeNull();
  });

  it('chat: a custom tool call is a client call too', () => {
    const expand = { id: 'a', type: 'function', function: { name: 'selfgc_expand', arguments: '{}' } };
    const patch = { id: 'b', type: 'custom', custom: { name: 'apply_patch', input: '*** Begin Patch' } };
    const answer = {
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: { role: 'assistant', tool_calls: [expand, patch] },
        },
      ],
    };
    const kept = chatDialect.keepToolCalls(answer, isProxy) as {
      choices: [{ message: { tool_calls: unknown } }];
    };
    expect(kept.choices[0].message.tool_calls).toEqual([expand]);
  });

  it('responses without store: no item by its id, no reasoning without its state', () => {
    const output = [
      { id: 'rs_1', type: 'reasoning', summary: [] },
      { id: 'rs_2', type: 'reasoning', summary: [], encrypted_content: 'enc' },
      {
        id: 'fc_1',
        type: 'function_call',
        call_id: 'c1',
        name: 'selfgc_expand',
        arguments: '{}',
        status: 'completed',
      },
    ];
    const results = [{ id: 'c1', output: 'page' }];
    const stateless = responsesDialect.withToolResults({ input: [], store: false }, { output }, results);
    expect(stateless.input).toEqual([
      { type: 'reasoning', summary: [], encrypted_content: 'enc' },
      { type: 'function_call', call_id: 'c1', name: 'selfgc_expand', arguments: '{}', status: 'completed' },
      { type: 'function_call_output', call_id: 'c1', output: 'page' },
    ]);
    // Stored, the API finds every item by its id.
    const stored = responsesDialect.withToolResults({ input: [] }, { output }, results);
    expect(stored.input).toEqual([
      ...output,
      { type: 'function_call_output', call_id: 'c1', output: 'page' },
    ]);
  });
});

describe("the answer after recovery rounds: what it keeps of the first round's turn", () => {
  const thinking = { type: 'thinking', thinking: 'Expand it.', signature: 'c2ln' };
  const redacted = { type: 'redacted_thinking', data: 'ZW5j' };
  const expand = { type: 'tool_use', id: 'toolu_1', name: 'selfgc_expand', input: { id: 'x' } };
  const firstTurn = { role: 'assistant', content: [thinking, redacted, expand], stop_reason: 'tool_use' };
  const answer = (content: unknown[]) => ({ role: 'assistant', content, stop_reason: 'end_turn' });
  const text = { type: 'text', text: 'Found it.' };

  it('messages: the thinking that opened the turn, before an answer that opens with none', () => {
    expect(anthropicMessagesDialect.withTurnOpening?.(answer([text]), firstTurn)).toEqual(
      answer([thinking, redacted, text]),
    );
  });

  it('messages: an answer that opens with thinking of its own, or has no content, as it came', () => {
    const own = answer([{ ...thinking, thinking: 'Now read it.' }, text]);
    expect(anthropicMessagesDialect.withTurnOpening?.(own, firstTurn)).toBe(own);
    const empty = answer([]);
    expect(anthropicMessagesDialect.withTurnOpening?.(empty, firstTurn)).toBe(empty);
    const plain = answer([text]);
    expect(anthropicMessagesDialect.withTurnOpening?.(plain, { ...firstTurn, content: [expand] })).toBe(
      plain,
    );
  });
});
