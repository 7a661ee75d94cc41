import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countMessageTokens } from '../core/ledger.js';
import { approximateTokenCounter, MESSAGE_OVERHEAD_TOKENS } from '../core/tokens.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import { chatDialect } from './chat-dialect.js';
import {
  createRecoveryBudget,
  cutPage,
  MAX_RECOVERY_ROOM,
  NOTE_TOKENS,
  RECOVERY_ROOM_SHARE,
  ROUND_RESERVE_TOKENS,
  recoveryRoom,
} from './recovery-budget.js';
import { fileContent } from './testing/agent-conversation.js';

const o200k = createTokenCounter('o200k_base');

/** Every page of `text` under `budget`, in order. */
function pagesOf(text: string, budget: number, counter = approximateTokenCounter): string[] {
  const pages: string[] = [];
  for (let offset = 0; offset < text.length; ) {
    const { page, end } = cutPage(text, offset, budget, counter);
    if (end <= offset) throw new Error(`no progress at ${offset}`);
    pages.push(page);
    offset = end;
  }
  return pages;
}

describe('cutPage', () => {
  const text = Array.from({ length: 12 }, (_, turn) => fileContent(turn)).join('\n');

  it.each([
    ['chars/4', approximateTokenCounter],
    ['o200k', o200k],
  ])('cuts pages that fit the budget and together are the text (%s)', (_name, counter) => {
    const pages = pagesOf(text, 500, counter);
    expect(pages.join('')).toBe(text);
    expect(pages.length).toBeGreaterThan(5);
    for (const page of pages) expect(counter.count(page)).toBeLessThanOrEqual(500);
    // Full pages end at a line break, and fill most of the budget.
    for (const page of pages.slice(0, -1)) {
      expect(page.endsWith('\n')).toBe(true);
      expect(counter.count(page)).toBeGreaterThan(400);
    }
  });

  it('ends a page of JSON text at an escaped line break, as Cline sends its tool results', () => {
    const json = JSON.stringify([{ query: 'notes/secret.txt', result: text }]);
    expect(json).not.toContain('\n');
    const pages = pagesOf(json, 500);
    expect(pages.join('')).toBe(json);
    for (const page of pages.slice(0, -1)) expect(page.endsWith('\\n')).toBe(true);
  });

  it('returns the whole rest when it fits', () => {
    expect(cutPage('short text', 0, 100, approximateTokenCounter)).toEqual({ page: 'short text', end: 10 });
    expect(cutPage('short text', 6, 100, approximateTokenCounter)).toEqual({ page: 'text', end: 10 });
  });

  it('never splits a surrogate pair and always makes progress', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 400 }),
        fc.integer({ min: 4, max: 40 }),
        (value, budget) => {
          const pages = pagesOf(value, budget, o200k);
          expect(pages.join('')).toBe(value);
          for (const page of pages) {
            expect(page.length).toBeGreaterThan(0);
            const last = page.charCodeAt(page.length - 1);
            expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('finds nothing to send when the budget is smaller than one token of text', () => {
    expect(cutPage('abcdefgh', 0, 0, approximateTokenCounter)).toEqual({ page: '', end: 0 });
  });
});

describe('createRecoveryBudget', () => {
  const first = {
    model: 'gpt-4o',
    messages: [
      { role: 'system', content: 'You are careful.' },
      { role: 'user', content: 'Find the bug.' },
    ],
  };

  it('counts what recovery appends after the view, as the governor counts a view', () => {
    const budget = createRecoveryBudget(
      { windowTokens: 1000, viewTokens: 300 },
      chatDialect,
      first,
      approximateTokenCounter,
    );
    expect(budget.used()).toBe(300);
    const call = { id: 'c1', type: 'function', function: { name: 'selfgc_expand', arguments: '{"id":"x"}' } };
    const next = {
      ...first,
      messages: [
        ...first.messages,
        { role: 'assistant', content: 'Looking.', tool_calls: [call] },
        { role: 'tool', tool_call_id: 'c1', content: 'x'.repeat(400) },
      ],
    };
    const appended = chatDialect.readTranscript(next).slice(2);
    const expected = appended.reduce(
      (sum, message) => sum + countMessageTokens(approximateTokenCounter, message),
      0,
    );
    expect(budget.measure(next)).toBe(300 + expected);
    expect(expected).toBeGreaterThan(100 + 2 * MESSAGE_OVERHEAD_TOKENS);
    budget.charge('y'.repeat(40));
    expect(budget.used()).toBe(300 + expected + 10);
  });

  it('shares the room left among calls, with notes and a reserve for one more round set aside', () => {
    const budget = createRecoveryBudget(
      { windowTokens: 2000, viewTokens: 1500 },
      chatDialect,
      first,
      approximateTokenCounter,
    );
    expect(budget.share(1)).toBe(500 - NOTE_TOKENS - ROUND_RESERVE_TOKENS);
    expect(budget.share(2)).toBe(Math.floor((500 - 2 * NOTE_TOKENS - ROUND_RESERVE_TOKENS) / 2));
    budget.charge('z'.repeat(2000));
    expect(budget.share(1)).toBe(0);
  });

  it('gives a page no more than the room kept for recovery, however much the view leaves free', () => {
    const budget = createRecoveryBudget(
      { windowTokens: 20_000, viewTokens: 2_000 },
      chatDialect,
      first,
      approximateTokenCounter,
    );
    expect(budget.share(1)).toBe(recoveryRoom(20_000));
    expect(budget.share(3)).toBe(recoveryRoom(20_000));
    budget.charge('z'.repeat(4 * 15_000));
    expect(budget.share(1)).toBeLessThan(recoveryRoom(20_000));
  });
});

describe('recoveryRoom', () => {
  it('keeps a share of the conversation room free for recovered pages, capped, never below nothing', () => {
    expect(recoveryRoom(9_000)).toBe(Math.floor(9_000 * RECOVERY_ROOM_SHARE));
    // A page of recovered content, with its note and the reserve of a further round, fits in it.
    expect(recoveryRoom(9_000) - NOTE_TOKENS - ROUND_RESERVE_TOKENS).toBeGreaterThan(1_000);
    expect(recoveryRoom(1_000_000)).toBe(MAX_RECOVERY_ROOM);
    expect(recoveryRoom(-500)).toBe(0);
  });
});
