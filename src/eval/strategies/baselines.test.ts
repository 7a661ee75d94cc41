import { describe, expect, it } from 'vitest';
import { indexTranscript, type Ledger } from '../../core/ledger.js';
import type { ViewItem } from '../../core/project-view.js';
import { latestTurnStart } from '../../core/rehearse-plan.js';
import { longSession } from '../../core/testing/long-session.js';
import { sampleSession, threeRequestSession } from '../../core/testing/sample-session.js';
import { approximateTokenCounter } from '../../core/tokens.js';
import { type Message, messageText, partText } from '../../core/transcript.js';
import {
  parallelLatestStep,
  quotingSession,
  recountViewTokens,
  viewProblems,
} from '../testing/eval-fixtures.js';
import {
  clearToolUsesStrategy,
  hybridStrategy,
  lastObservationsStrategy,
  noneStrategy,
  oldestTurnStrategy,
  toolMaskPruneStrategy,
  toolPruneStrategy,
} from './baselines.js';
import { DEFAULT_BASELINE_KEEP, type SyncStrategy } from './strategy.js';

const PREFIXES: Array<[string, Message[]]> = [
  ['quoting', quotingSession(16).slice(0, -1)],
  ['three requests', threeRequestSession()],
  ['long, several requests', longSession({ rounds: 20, requestEvery: 4 }).slice(0, -1)],
  ['sample, ending on a request', sampleSession().slice(0, 12)],
  ['parallel latest step', parallelLatestStep(6)],
];

const BUDGETED = [oldestTurnStrategy, toolPruneStrategy, toolMaskPruneStrategy, hybridStrategy];
const KEEP_LAST = [clearToolUsesStrategy, lastObservationsStrategy];
const KEEPS = [0.9, 0.75, 0.55, 0.3, 0.1, 'auto'] as const;

const ledgerOf = (messages: readonly Message[]) =>
  indexTranscript(messages, { tokenCounter: approximateTokenCounter });

const toolIndexes = (ledger: Ledger) =>
  ledger.messages.flatMap((message, index) => (message.role === 'tool' ? [index] : []));

/** The text of every tool result in a view item. */
const resultTexts = (item: ViewItem) =>
  item.message.parts.flatMap((part) => (part.type === 'tool-result' ? [partText(part)] : []));

const changedSources = (items: readonly ViewItem[]) =>
  items.filter((item) => item.changed).map((item) => item.source);

describe.each(BUDGETED.map((strategy) => [strategy.name, strategy] as const))('%s', (_, strategy) => {
  it('fits the budget, or has nothing left to remove (its view at keep 0)', () => {
    for (const [name, messages] of PREFIXES) {
      const ledger = ledgerOf(messages);
      const floor = strategy.run({ ledger, keep: 0 });
      for (const keep of KEEPS) {
        const output = strategy.run({ ledger, keep });
        const budget = Math.floor(ledger.totalTokens * (keep === 'auto' ? DEFAULT_BASELINE_KEEP : keep));
        if (output.tokens > budget) expect(output, `${name} at ${keep}`).toEqual(floor);
        expect(output.tokens, `${name} at ${keep}`).toBe(recountViewTokens(ledger, output.items));
        expect(output.state).toBeUndefined();
      }
    }
  });

  it('never touches the latest turn, the system prompt or the first request, nor orphans a result', () => {
    for (const [name, messages] of PREFIXES) {
      const ledger = ledgerOf(messages);
      for (const keep of [...KEEPS, 0]) {
        const output = strategy.run({ ledger, keep });
        expect(viewProblems(ledger, output.items), `${name} at ${keep}`).toEqual([]);
        // Items keep transcript order.
        const sources = output.items.map((item) => item.source);
        expect(sources).toEqual([...sources].sort((a, b) => a - b));
      }
    }
  });

  it('leaves the prefix whole when the budget already holds', () => {
    const ledger = ledgerOf(threeRequestSession());
    expect(strategy.run({ ledger, keep: 1 })).toEqual(noneStrategy.run({ ledger, keep: 1 }));
  });
});

describe('oldest-turn', () => {
  it('drops whole turns oldest first, and at keep 0 keeps only the system prompt, first request and latest turn', () => {
    const ledger = ledgerOf(quotingSession(16).slice(0, -1));
    const output = oldestTurnStrategy.run({ ledger, keep: 0.5 });
    const kept = new Set(output.items.map((item) => item.source));
    const dropped = ledger.messages.map((_, index) => index).filter((index) => !kept.has(index));
    expect(dropped.length).toBeGreaterThan(0);
    // A contiguous run right after the first request.
    expect(dropped).toEqual(Array.from({ length: dropped.length }, (_, offset) => 2 + offset));
    expect(ledger.messages[dropped.at(-1)! + 1]?.role).not.toBe('tool');
    expect(changedSources(output.items)).toEqual([]);

    const floor = oldestTurnStrategy.run({ ledger, keep: 0 });
    const latest = latestTurnStart(ledger);
    expect(floor.items.map((item) => item.source)).toEqual([
      0,
      1,
      ...Array.from({ length: ledger.messages.length - latest }, (_, offset) => latest + offset),
    ]);
  });
});

describe('tool-prune and tool-mask-prune', () => {
  it('replace the oldest tool outputs first with a placeholder, keeping every message', () => {
    const ledger = ledgerOf(quotingSession(16).slice(0, -1));
    const output = toolPruneStrategy.run({ ledger, keep: 0.6 });
    const tools = toolIndexes(ledger);
    const changed = changedSources(output.items);
    expect(changed.length).toBeGreaterThan(0);
    expect(changed).toEqual(tools.slice(0, changed.length));
    expect(output.items).toHaveLength(ledger.messages.length);
    for (const item of output.items.filter((entry) => entry.changed))
      expect(resultTexts(item)).toEqual(['[tool output removed]']);
  });

  it('turns every earlier output into a placeholder at keep 0, the latest turn aside', () => {
    const ledger = ledgerOf(parallelLatestStep(4));
    const latest = latestTurnStart(ledger);
    for (const strategy of [toolPruneStrategy, toolMaskPruneStrategy]) {
      const output = strategy.run({ ledger, keep: 0 });
      expect(changedSources(output.items)).toEqual(toolIndexes(ledger).filter((index) => index < latest));
      for (const item of output.items.filter((entry) => entry.changed))
        expect(resultTexts(item)).toEqual(['[tool output removed]']);
    }
  });

  it('masks before pruning: a light budget keeps the head and tail of the oldest outputs', () => {
    const ledger = ledgerOf(longSession({ rounds: 10, lines: 40 }).slice(0, -1));
    const output = toolMaskPruneStrategy.run({ ledger, keep: 0.9 });
    const changed = output.items.filter((item) => item.changed);
    expect(changed.length).toBeGreaterThan(0);
    for (const item of changed) {
      const lines = messageText(ledger.messages[item.source]!).split('\n');
      expect(resultTexts(item)).toEqual([
        [...lines.slice(0, 5), '[… 30 lines masked …]', ...lines.slice(-5)].join('\n'),
      ]);
    }
    expect(output.tokens).toBeLessThanOrEqual(Math.floor(ledger.totalTokens * 0.9));
  });

  // Regression (was a bug): an output too short to mask comes back with the same text but `changed: true`,
  // so the judge and session mode count it as edited, and the cache key of the view changes
  // (`itemKey` in replay-session.ts) though nothing did. Fix: in `rewriteTool`, keep the item
  // unchanged when the rewrite returns the text it was given.
  it('does not mark an output it could not shrink as changed', () => {
    const ledger = ledgerOf(quotingSession(16).slice(0, -1));
    const output = toolMaskPruneStrategy.run({ ledger, keep: 0.9 });
    const changed = output.items.filter((entry) => entry.changed);
    expect(changed.length).toBeGreaterThan(0);
    for (const item of changed)
      expect(resultTexts(item).join('\n')).not.toBe(messageText(ledger.messages[item.source]!));
  });
});

describe('hybrid', () => {
  it('prunes tool outputs first, then drops oldest turns when outputs are not enough', () => {
    const ledger = ledgerOf(quotingSession(16).slice(0, -1));
    const light = hybridStrategy.run({ ledger, keep: 0.8 });
    expect(light.items).toHaveLength(ledger.messages.length);
    const heavy = hybridStrategy.run({ ledger, keep: 0.2 });
    expect(heavy.items.length).toBeLessThan(ledger.messages.length);
    expect(heavy.tokens).toBeLessThanOrEqual(Math.floor(ledger.totalTokens * 0.2));
  });
});

describe('clear-tool-uses and last-5-observations', () => {
  const ledger = ledgerOf(longSession({ rounds: 10 }).slice(0, -1));
  const tools = toolIndexes(ledger);

  it('clear-tool-uses clears every output but the last 3', () => {
    const output = clearToolUsesStrategy.run({ ledger, keep: 'auto' });
    expect(changedSources(output.items)).toEqual(tools.slice(0, -3));
    for (const item of output.items.filter((entry) => entry.changed))
      expect(resultTexts(item)).toEqual(['[cleared]']);
    expect(output.items).toHaveLength(ledger.messages.length);
  });

  it('last-5-observations turns every output but the last 5 into one line that counts its lines', () => {
    const output = lastObservationsStrategy.run({ ledger, keep: 'auto' });
    expect(changedSources(output.items)).toEqual(tools.slice(0, -5));
    for (const item of output.items.filter((entry) => entry.changed)) {
      const lines = messageText(ledger.messages[item.source]!).split('\n').length;
      expect(resultTexts(item)).toEqual([`Old environment output: (${lines} lines omitted)`]);
    }
  });

  it('stop clearing, oldest first, once a numeric budget holds', () => {
    for (const strategy of KEEP_LAST) {
      const output = strategy.run({ ledger, keep: 0.9 });
      const changed = changedSources(output.items);
      expect(changed.length).toBeGreaterThan(0);
      expect(changed).toEqual(tools.slice(0, changed.length));
      expect(output.tokens).toBeLessThanOrEqual(Math.floor(ledger.totalTokens * 0.9));
      expect(output.tokens).toBe(recountViewTokens(ledger, output.items));
    }
  });

  it('keep the system prompt, first request and latest turn of ordinary sessions', () => {
    for (const [name, messages] of PREFIXES.filter(([name]) => name !== 'parallel latest step')) {
      const prefix = ledgerOf(messages);
      for (const strategy of KEEP_LAST)
        for (const keep of KEEPS)
          expect(
            viewProblems(prefix, strategy.run({ ledger: prefix, keep }).items),
            `${name}, ${strategy.name}`,
          ).toEqual([]);
    }
  });

  // Regression (was a bug): both count the last N tool messages of the whole prefix, so when the latest step made
  // more than N parallel calls they clear results of the latest turn, which the model has not
  // even read yet. Fix: take candidates from `toolMessageIndexes(ledger)` (before the latest
  // turn), as the budgeted baselines do, and keep the last N of those.
  it('leave the latest turn alone when it made more parallel calls than they keep', () => {
    const prefix = ledgerOf(parallelLatestStep(6));
    const problems = (strategy: SyncStrategy) =>
      viewProblems(prefix, strategy.run({ ledger: prefix, keep: 'auto' }).items);
    expect(problems(clearToolUsesStrategy)).toEqual([]);
    expect(problems(lastObservationsStrategy)).toEqual([]);
  });
});

describe('none', () => {
  it('is the identity at every keep', () => {
    for (const [, messages] of PREFIXES) {
      const ledger = ledgerOf(messages);
      for (const keep of KEEPS) {
        const output = noneStrategy.run({ ledger, keep });
        expect(output.items.map((item) => item.message)).toEqual(ledger.messages);
        expect(output.items.every((item, index) => !item.changed && item.source === index)).toBe(true);
        expect(output.items.every((item, index) => item.message === ledger.messages[index])).toBe(true);
        expect(output.tokens).toBe(ledger.totalTokens);
      }
    }
  });
});
