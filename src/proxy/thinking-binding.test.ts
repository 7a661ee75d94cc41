import { describe, expect, it } from 'vitest';
import { THINKING_BINDING_BETA } from '../adapters/index.js';
import {
  afterThinkingRefusal,
  dropInvalidatedThinking,
  hasBeta,
  withBeta,
  withoutBeta,
} from './thinking-binding.js';

const thought = { type: 'thinking', thinking: '', signature: 'c2ln' };
const messages = [
  { role: 'user', content: 'read a.ts' },
  { role: 'assistant', content: [thought, { type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'x' }] },
];
const body = { model: 'claude-fable-5-1', max_tokens: 1024, messages };

describe('dropInvalidatedThinking', () => {
  it('asks to drop invalidated thinking, keeping the rest of the setting, a client behaviour giving way', () => {
    const setting = {
      type: 'enabled',
      budget_tokens: 512,
      block_binding: { prefix_mismatch_behavior: 'error', x: 1 },
    };
    expect(dropInvalidatedThinking({ ...body, thinking: setting })).toEqual({
      body: {
        ...body,
        thinking: {
          type: 'enabled',
          budget_tokens: 512,
          block_binding: { prefix_mismatch_behavior: 'drop_block', x: 1 },
        },
      },
      beta: THINKING_BINDING_BETA,
    });
    // No setting: adaptive, these models' default.
    expect(dropInvalidatedThinking(body)?.body.thinking).toEqual({
      type: 'adaptive',
      block_binding: { prefix_mismatch_behavior: 'drop_block' },
    });
  });

  it('leaves a body it cannot help as it is', () => {
    const forced = { ...body, tool_choice: { type: 'tool', name: 'Read' } };
    const cases = [
      { ...body, model: 'claude-sonnet-4-5' },
      { ...body, messages: [messages[0]] },
      { ...body, thinking: { type: 'disabled' } },
      forced,
    ];
    expect(cases.map(dropInvalidatedThinking)).toEqual([undefined, undefined, undefined, undefined]);
    // A request that names its thinking is helped though it forces a tool.
    expect(dropInvalidatedThinking({ ...forced, thinking: { type: 'adaptive' } })).toBeDefined();
  });
});

describe('withBeta', () => {
  it("adds the beta once to the client's list", () => {
    const headers = new Headers({ 'anthropic-beta': 'a, b' });
    withBeta(headers, THINKING_BINDING_BETA);
    withBeta(headers, THINKING_BINDING_BETA);
    expect(headers.get('anthropic-beta')).toBe(`a,b,${THINKING_BINDING_BETA}`);
    const none = new Headers();
    withBeta(none, 'x');
    expect(none.get('anthropic-beta')).toBe('x');
  });
});

describe('afterThinkingRefusal', () => {
  const bound =
    'messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation.';
  const dropping = {
    ...body,
    thinking: {
      type: 'adaptive',
      display: 'omitted',
      block_binding: { prefix_mismatch_behavior: 'drop_block' },
    },
  };

  it('asks to drop thinking bound to a different conversation, with the beta', () => {
    expect(afterThinkingRefusal(bound, () => body)).toEqual({
      body: dropInvalidatedThinking(body)!.body,
      addBeta: THINKING_BINDING_BETA,
    });
  });

  it('takes the thinking out where the setting cannot be asked for', () => {
    const bare = messages.map((message) =>
      Array.isArray(message.content)
        ? { ...message, content: message.content.filter((block) => block.type !== 'thinking') }
        : message,
    );
    const off = { ...body, thinking: { type: 'disabled' } };
    expect(afterThinkingRefusal(bound, () => off)).toEqual({ body: { ...off, messages: bare } });
    const forced = { ...body, tool_choice: { type: 'any' } };
    expect(afterThinkingRefusal(bound, () => forced)).toEqual({ body: { ...forced, messages: bare } });
  });

  it('takes the setting and its beta out where the platform does not know them', () => {
    const refusals = [
      'invalid beta flag',
      '{"message":"thinking.adaptive.block_binding: Extra inputs are not permitted"}',
      `Unknown beta: ${THINKING_BINDING_BETA}`,
    ];
    for (const error of refusals)
      expect(afterThinkingRefusal(error, () => dropping)).toEqual({
        body: { ...body, thinking: { type: 'adaptive', display: 'omitted' } },
        dropBeta: THINKING_BINDING_BETA,
      });
  });

  it('knows no remedy for any other refusal, nor for one the setting already answers', () => {
    const other = 'prompt is too long: 210000 tokens > 200000 maximum';
    // Another refusal's body is not read at all.
    expect(
      afterThinkingRefusal(other, () => {
        throw new Error('read');
      }),
    ).toBeUndefined();
    expect(afterThinkingRefusal(other, () => body)).toBeUndefined();
    expect(afterThinkingRefusal(other, () => dropping)).toBeUndefined();
    expect(afterThinkingRefusal(bound, () => dropping)).toBeUndefined();
    // Not the setting's refusal: the body names none.
    expect(afterThinkingRefusal('invalid beta flag', () => body)).toBeUndefined();
    // Thinking on, for a model not known to bind: taken out, the turn's thinking would be missed.
    const enabled = { type: 'enabled', budget_tokens: 512 };
    expect(
      afterThinkingRefusal(bound, () => ({ ...body, model: 'claude-next', thinking: enabled })),
    ).toBeUndefined();
    expect(afterThinkingRefusal(bound, () => ({ ...body, model: 'claude-next' }))).toBeUndefined();
    // A body without thinking blocks.
    expect(afterThinkingRefusal(bound, () => ({ ...body, messages: [messages[0]] }))).toBeUndefined();
    // A refused body that cannot be read.
    expect(afterThinkingRefusal(bound, () => undefined)).toBeUndefined();
  });
});

describe('withoutBeta and hasBeta', () => {
  it("takes the beta out of the client's list, and the header when it was the only one", () => {
    const headers = new Headers({ 'anthropic-beta': `a, ${THINKING_BINDING_BETA},b` });
    expect(hasBeta(headers, THINKING_BINDING_BETA)).toBe(true);
    withoutBeta(headers, THINKING_BINDING_BETA);
    expect(headers.get('anthropic-beta')).toBe('a,b');
    expect(hasBeta(headers, THINKING_BINDING_BETA)).toBe(false);
    const only = new Headers({ 'anthropic-beta': THINKING_BINDING_BETA });
    withoutBeta(only, THINKING_BINDING_BETA);
    expect(only.has('anthropic-beta')).toBe(false);
  });
});
