import { describe, expect, it } from 'vitest';
import { alternatingLikeClient } from './alternating-turns.js';
import type { OpenAIChatMessage } from './openai-chat-api.js';

const task: OpenAIChatMessage = { role: 'user', content: 'Fix the build.' };
const fold: OpenAIChatMessage = { role: 'user', content: '[folded conversation:user:1@9: …]' };
const step: OpenAIChatMessage = { role: 'assistant', content: 'Reading.' };
const alternating: OpenAIChatMessage[] = [task, step, { role: 'user', content: 'Go on.' }];

describe('alternatingLikeClient', () => {
  it('joins user turns that follow each other when the client alternates: texts by a blank line', () => {
    expect(alternatingLikeClient([task, fold, step], alternating)).toEqual([
      { role: 'user', content: 'Fix the build.\n\n[folded conversation:user:1@9: …]' },
      step,
    ]);
  });

  it('joins parts one after the other, breakpoints with them, and keeps the one set of own fields', () => {
    const parts: OpenAIChatMessage = {
      role: 'user',
      content: [{ type: 'text', text: 'Fix the build.', cache_control: { type: 'ephemeral' } }],
      name: 'dev',
    };
    expect(alternatingLikeClient([parts, fold, fold], alternating)).toEqual([
      {
        role: 'user',
        name: 'dev',
        content: [
          { type: 'text', text: 'Fix the build.', cache_control: { type: 'ephemeral' } },
          { type: 'text', text: '[folded conversation:user:1@9: …]' },
          { type: 'text', text: '[folded conversation:user:1@9: …]' },
        ],
      },
    ]);
  });

  it('leaves two turns that each have fields of their own, and a client that sends such runs itself', () => {
    const named = (name: string): OpenAIChatMessage => ({ role: 'user', content: name, name });
    expect(alternatingLikeClient([named('a'), named('b')], alternating)).toEqual([named('a'), named('b')]);
    const runs: OpenAIChatMessage[] = [task, { role: 'user', content: 'And the tests.' }];
    expect(alternatingLikeClient([task, fold, step], runs)).toEqual([task, fold, step]);
  });
});
