import { describe, expect, it } from 'vitest';
import type { ViewItem } from '../../core/project-view.js';
import {
  assistantCalls,
  assistantMessage,
  systemMessage,
  toolCall,
  toolRound,
  userMessage,
} from '../../core/testing/transcript-builders.js';
import type { Message } from '../../core/transcript.js';
import {
  createTokenIndex,
  judgeRareTokens,
  neededRareTokens,
  RARE_SHARE,
  rareJudgeTokens,
  rareLimit,
} from './rare-token-judge.js';
import type { WordVocabulary } from './word-vocabulary.js';

/**
 * 40 messages, so a rare token sits in at most 2 (5% of 40): message 2 holds `evict_entry`
 * and `zeta_cache`, message 3 (a tool result) `zeta_cache` again and `gamma_flag`; the words of
 * the filler (`working`, `task`, `step`) are everywhere, and `widespread` in three messages.
 */
function prefix(): Message[] {
  const filler = Array.from({ length: 33 }, (_, step) =>
    assistantMessage(`working on the task, step ${step}`),
  );
  return [
    systemMessage('You are a coding agent.'),
    userMessage('Fix the cache.'),
    ...toolRound(
      'call_1',
      'read_file',
      { file_path: 'src/zeta_cache.py' },
      'zeta_cache.py: def evict_entry(key): gamma_flag',
    ),
    assistantMessage('widespread note'),
    assistantMessage('widespread note'),
    assistantMessage('widespread note'),
    ...filler,
  ];
}

const full = (messages: readonly Message[]): ViewItem[] =>
  messages.map((message, source) => ({ source, message, changed: false }));

describe('rareJudgeTokens', () => {
  it('splits on anything but letters, digits and underscores, lowercases, and keeps 3 to 64 characters', () => {
    expect([...rareJudgeTokens('Edit src/Cache.py: evict_entry() at 42, not 404 — Größe')]).toEqual([
      'edit',
      'src',
      'cache',
      'evict_entry',
      'not',
      '404',
      'größe',
    ]);
    expect(rareJudgeTokens(`${'a'.repeat(65)} ${'b'.repeat(64)}`)).toEqual(new Set(['b'.repeat(64)]));
  });
});

describe('rareLimit', () => {
  it(`allows ${RARE_SHARE * 100}% of the prefix's messages, and at least one`, () => {
    expect([0, 19, 20, 40, 200].map(rareLimit)).toEqual([1, 1, 1, 2, 10]);
  });
});

describe('createTokenIndex', () => {
  it("lists each token's holders, reading tool calls by their argument values, and grows", () => {
    const messages = prefix();
    const index = createTokenIndex(messages.slice(0, 3));
    expect(index.size).toBe(3);
    expect(index.holders('zeta_cache')).toEqual([2]);
    expect(index.holders('read_file')).toEqual([2]);
    // An argument's key is not shown as a word of the call.
    expect(index.holders('file_path')).toEqual([]);
    index.append(messages.slice(3));
    expect(index.size).toBe(40);
    expect(index.holders('zeta_cache')).toEqual([2, 3]);
    expect(index.holders('absent')).toEqual([]);
  });
});

describe('neededRareTokens', () => {
  it('keeps the continuation tokens held by 1 to rareLimit prefix messages, weighted by idf', () => {
    const index = createTokenIndex(prefix());
    const continuation = [
      assistantCalls(
        [toolCall('call_9', 'edit_file', { file_path: 'lib/zeta_cache.py', text: 'gamma_flag' })],
        'The widespread task: evict_entry and brand_new_name',
      ),
    ];
    const needed = neededRareTokens(index, continuation);
    expect(new Map([...needed].map(([token, rare]) => [token, rare.holders]))).toEqual(
      new Map([
        ['zeta_cache', [2, 3]],
        ['gamma_flag', [3]],
        ['evict_entry', [3]],
      ]),
    );
    expect(needed.get('gamma_flag')?.weight).toBeCloseTo(Math.log(41));
    expect(needed.get('zeta_cache')?.weight).toBeCloseTo(Math.log(21));
  });

  it('leaves out common words of general language, however few messages hold them', () => {
    const index = createTokenIndex(prefix());
    const continuation = [assistantMessage('gamma_flag and zeta_cache')];
    expect([...neededRareTokens(index, continuation).keys()]).toEqual(['gamma_flag', 'zeta_cache']);
    const vocabulary: WordVocabulary = { isCommonWord: (token) => token === 'gamma_flag' };
    expect([...neededRareTokens(index, continuation, vocabulary).keys()]).toEqual(['zeta_cache']);
    // The default vocabulary knows English: `note` sits in three messages, `def` in one.
    const index40 = createTokenIndex(prefix());
    expect(neededRareTokens(index40, [assistantMessage('def note')]).size).toBe(0);
  });

  it('reads only what assistant messages wrote: not user messages, not reasoning', () => {
    const index = createTokenIndex(prefix());
    const continuation: Message[] = [
      userMessage('evict_entry'),
      {
        role: 'assistant',
        parts: [
          { type: 'reasoning', text: 'gamma_flag' },
          { type: 'text', text: 'done' },
        ],
      },
    ];
    expect(neededRareTokens(index, continuation).size).toBe(0);
  });
});

describe('judgeRareTokens', () => {
  const continuation = [assistantMessage('gamma_flag and zeta_cache')];

  it('passes with score 1 when every holder stays in the view', () => {
    const messages = prefix();
    const verdict = judgeRareTokens({
      index: createTokenIndex(messages),
      items: full(messages),
      continuation,
    });
    expect(verdict).toEqual({ needed: ['gamma_flag', 'zeta_cache'], missing: [], pass: true, score: 1 });
  });

  it('fails when a needed token left the view, scoring the visible share by idf', () => {
    const messages = prefix();
    const items = full(messages).filter((item) => item.source !== 3);
    const verdict = judgeRareTokens({ index: createTokenIndex(messages), items, continuation });
    // zeta_cache is still in message 2; gamma_flag was only in message 3.
    expect(verdict.missing).toEqual(['gamma_flag']);
    expect(verdict.pass).toBe(false);
    expect(verdict.score).toBeCloseTo(Math.log(21) / (Math.log(41) + Math.log(21)));
  });

  it('sees a token in the text of a changed item, as a whole token only', () => {
    const messages = prefix();
    const index = createTokenIndex(messages);
    const without = full(messages).filter((item) => item.source !== 3);
    const summary = (text: string): ViewItem => ({
      source: 3,
      changed: true,
      message: assistantMessage(text),
    });
    expect(
      judgeRareTokens({ index, items: [...without, summary('kept: GAMMA_FLAG')], continuation }).pass,
    ).toBe(true);
    expect(
      judgeRareTokens({ index, items: [...without, summary('kept: gamma_flags')], continuation }).missing,
    ).toEqual(['gamma_flag']);
  });

  it('passes with score 1 when the continuation needs nothing rare', () => {
    const messages = prefix();
    const verdict = judgeRareTokens({
      index: createTokenIndex(messages),
      items: [],
      continuation: [assistantMessage('working on the task')],
    });
    expect(verdict).toEqual({ needed: [], missing: [], pass: true, score: 1 });
  });

  it('uses a precomputed needed map instead of the continuation when given', () => {
    const messages = prefix();
    const index = createTokenIndex(messages);
    const needed = neededRareTokens(index, [assistantMessage('evict_entry')]);
    const verdict = judgeRareTokens({ index, items: [], continuation, needed });
    expect(verdict).toMatchObject({
      needed: ['evict_entry'],
      missing: ['evict_entry'],
      pass: false,
      score: 0,
    });
  });
});
