import { describe, expect, it } from 'vitest';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { responsesDialect } from './responses-dialect.js';
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
