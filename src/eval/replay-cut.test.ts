import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { indexTranscript } from '../core/ledger.js';
import { gcTranscriptArbitrary } from '../core/testing/gc-transcript-arbitrary.js';
import { longSession } from '../core/testing/long-session.js';
import { sampleSession, threeRequestSession } from '../core/testing/sample-session.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { Message } from '../core/transcript.js';
import { autoCuts, CONTINUATION_STEPS, type CutRecord, continuationAt, replayCuts } from './replay-cut.js';
import { STRATEGY_NAMES, strategyByName } from './strategies/registry.js';
import type { Strategy, StrategyInput } from './strategies/strategy.js';
import { quotingSession, recountViewTokens, viewProblems } from './testing/eval-fixtures.js';

const KEEPS: ReadonlyArray<number | 'auto'> = ['auto', 0.6, 0.3];
const ALL_STRATEGIES = STRATEGY_NAMES.map((name) => strategyByName(name));

function replay(messages: readonly Message[], cuts: readonly number[], strategies = ALL_STRATEGIES) {
  return replayCuts({
    sessionId: 'session',
    messages,
    cuts,
    strategies,
    keeps: KEEPS,
    tokenCounter: approximateTokenCounter,
  });
}

/** Ledgers of prefixes, indexed from scratch (not the replay's own, grown cut by cut). */
function prefixLedgers(messages: readonly Message[]) {
  const ledgers = new Map<number, ReturnType<typeof indexTranscript>>();
  return (cut: number) => {
    let ledger = ledgers.get(cut);
    if (!ledger) {
      ledger = indexTranscript(messages.slice(0, cut), { tokenCounter: approximateTokenCounter });
      ledgers.set(cut, ledger);
    }
    return ledger;
  };
}

const recordKey = (record: CutRecord) => `${record.cut}/${record.strategy}/${record.keep}`;

/** What the strategy produced and the judge reads from it, without the continuation's verdict. */
function viewOf(record: CutRecord) {
  return {
    items: record.output.items,
    tokens: record.output.tokens,
    state: record.output.state,
    prefixTokens: record.prefixTokens,
    viewTokens: record.viewTokens,
    recoverable: record.recoverable,
  };
}

/** Index just past the `CONTINUATION_STEPS`-th assistant message from `cut` on. */
function continuationEnd(messages: readonly Message[], cut: number): number {
  let seen = 0;
  for (let index = cut; index < messages.length; index += 1) {
    if (messages[index]!.role === 'assistant') seen += 1;
    if (seen === CONTINUATION_STEPS) return index + 1;
  }
  return messages.length;
}

describe('autoCuts', () => {
  it('spreads at most `count` assistant indexes over the second half of a long session', () => {
    const messages = longSession({ rounds: 20 });
    const cuts = autoCuts(messages, 4);
    expect(cuts).toHaveLength(4);
    for (const cut of cuts) {
      expect(messages[cut]!.role).toBe('assistant');
      expect(cut).toBeGreaterThanOrEqual(messages.length / 2);
    }
    expect(cuts).toEqual([...cuts].sort((a, b) => a - b));
    expect(new Set(cuts).size).toBe(cuts.length);
    expect(autoCuts(messages, 2)).toHaveLength(2);
  });

  it('takes every assistant message after the first request when a session has fewer than four', () => {
    const messages = sampleSession().slice(0, 8);
    expect(autoCuts(messages, 4)).toEqual([2, 4, 6]);
    expect(autoCuts(messages.slice(0, 2), 4)).toEqual([]);
  });

  it('gives sorted, distinct assistant cuts with a continuation, at most `count`, on any transcript', () => {
    fc.assert(
      fc.property(
        gcTranscriptArbitrary({ maxTurns: 6 }),
        fc.integer({ min: 1, max: 6 }),
        (messages, count) => {
          const cuts = autoCuts(messages, count);
          const assistants = messages.flatMap((message, index) =>
            message.role === 'assistant' && index > 1 ? [index] : [],
          );
          expect(cuts.length).toBeLessThanOrEqual(count);
          for (const [position, cut] of cuts.entries()) {
            expect(messages[cut]!.role).toBe('assistant');
            expect(cut).toBeGreaterThan(1);
            if (position > 0) expect(cut).toBeGreaterThan(cuts[position - 1]!);
            expect(continuationAt(messages, cut).length).toBeGreaterThan(0);
            if (assistants.length >= 4) expect(cut).toBeGreaterThanOrEqual(messages.length / 2);
          }
          if (assistants.length > 0) expect(cuts.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('continuationAt', () => {
  it('takes the next three assistant messages from the cut on, skipping tool and user messages', () => {
    const messages = sampleSession();
    expect(continuationAt(messages, 2)).toEqual([messages[2], messages[4], messages[6]]);
    expect(continuationAt(messages, 11)).toEqual([messages[12], messages[14]]);
    expect(continuationAt(messages, 14)).toEqual([messages[14]]);
    expect(continuationAt(messages, messages.length)).toEqual([]);
  });
});

describe('replayCuts', () => {
  it('gives the same view when the session is cut short at the same point: no strategy sees past the cut', async () => {
    const cases: Array<[string, Message[]]> = [
      ['quoting', quotingSession(16)],
      ['three requests', threeRequestSession()],
      ['long', longSession({ rounds: 18, requestEvery: 5 })],
    ];
    for (const [name, messages] of cases) {
      const cuts = autoCuts(messages, 3);
      expect(cuts.length, name).toBeGreaterThan(0);
      const full = new Map((await replay(messages, cuts)).map((record) => [recordKey(record), record]));
      for (const cut of cuts) {
        const end = continuationEnd(messages, cut);
        for (const k of new Set([1, 2, 4, end - cut])) {
          const short = await replay(messages.slice(0, cut + k), [cut]);
          expect(short.length, `${name} cut ${cut} k ${k}`).toBe(KEEPS.length * ALL_STRATEGIES.length);
          for (const record of short) {
            const twin = full.get(recordKey(record))!;
            const where = `${name}, ${recordKey(record)}, cut short by ${k}`;
            // The oracle alone reads the continuation, which a shorter session shortens.
            if (record.strategy !== 'oracle' || cut + k >= end)
              expect(viewOf(record), where).toEqual(viewOf(twin));
            // With the whole continuation kept, the judge sees the same inputs too.
            if (cut + k >= end) {
              expect(record.verdict, where).toEqual(twin.verdict);
              expect(record.rareTokens, where).toEqual(twin.rareTokens);
            }
          }
        }
      }
    }
  });

  it('hands the continuation to the oracle only, and every strategy a ledger of the prefix', async () => {
    const messages = quotingSession(14);
    const cuts = autoCuts(messages, 3);
    const seen: Array<{ strategy: string; prefix: number; input: StrategyInput }> = [];
    const spies = ALL_STRATEGIES.map(
      (strategy): Strategy => ({
        ...strategy,
        run(input) {
          seen.push({ strategy: strategy.name, prefix: input.ledger.messages.length, input });
          return strategy.run(input);
        },
      }),
    );
    await replay(messages, cuts, spies);
    expect(seen).toHaveLength(cuts.length * ALL_STRATEGIES.length * KEEPS.length);
    const atCut = seen.map((entry) => entry.prefix);
    expect(new Set(atCut)).toEqual(new Set(cuts));
    for (const { strategy, prefix, input } of seen) {
      if (strategy === 'oracle') expect(input.continuation).toEqual(continuationAt(messages, prefix));
      else expect('continuation' in input, strategy).toBe(false);
    }
  });

  it('reports the ledger total of the prefix as prefixTokens and the view tokens of the output', async () => {
    const messages = quotingSession(12);
    const cuts = autoCuts(messages, 4);
    const prefixOf = prefixLedgers(messages);
    for (const record of await replay(messages, cuts)) {
      const prefix = prefixOf(record.cut);
      expect(record.prefixTokens).toBe(prefix.totalTokens);
      expect(record.viewTokens).toBe(record.output.tokens);
      expect(record.viewTokens).toBe(recountViewTokens(prefix, record.output.items));
      expect(record.session).toBe('session');
    }
  });

  it('keeps every view sound: no orphaned tool result, system prompt, first request and latest turn intact', async () => {
    const messages = quotingSession(16);
    const prefixOf = prefixLedgers(messages);
    for (const record of await replay(messages, autoCuts(messages, 4))) {
      const prefix = prefixOf(record.cut);
      expect(viewProblems(prefix, record.output.items), recordKey(record)).toEqual([]);
    }
  });

  it('keeps every view sound on random transcripts', async () => {
    await fc.assert(
      fc.asyncProperty(gcTranscriptArbitrary({ maxTurns: 4 }), async (messages) => {
        const prefixOf = prefixLedgers(messages);
        for (const record of await replay(messages, autoCuts(messages, 2))) {
          const prefix = prefixOf(record.cut);
          expect(viewProblems(prefix, record.output.items), recordKey(record)).toEqual([]);
        }
      }),
      { numRuns: 30 },
    );
  });

  it('judges the full view as passing both judges, and says what the rare-token judge needed', async () => {
    const messages = quotingSession(16);
    const records = await replay(messages, autoCuts(messages, 4), [strategyByName('none')]);
    expect(records.some((record) => record.rareTokens.needed.length > 0)).toBe(true);
    for (const record of records) {
      expect(record.verdict.strict, recordKey(record)).toBe(true);
      expect(record.rareTokens, recordKey(record)).toMatchObject({ missing: [], pass: true, score: 1 });
    }
  });

  it('lets the oracle, an upper bound, break no continuation', async () => {
    const messages = quotingSession(16);
    const records = await replay(messages, autoCuts(messages, 4), [strategyByName('oracle')]);
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) {
      expect(record.verdict.needed.length).toBeGreaterThan(0);
      expect(record.verdict.strict, recordKey(record)).toBe(true);
    }
  });

  it('skips cuts out of range, repeated or without a continuation, and takes cuts in order', async () => {
    const messages = sampleSession();
    const none = [strategyByName('none')];
    const records = await replay(messages, [12, 4, 4, 0, messages.length + 3], none);
    expect([...new Set(records.map((record) => record.cut))]).toEqual([4, 12]);
    // A cut at the very end has no assistant message left to judge.
    expect(await replay(messages, [messages.length], none)).toEqual([]);
  });
});
