import { describe, expect, it } from 'vitest';
import { BadInputError } from '../errors.js';
import { messageEntries } from '../index-entries.js';
import { indexTranscript } from '../ledger.js';
import { type FoldParts, spanFoldParts } from '../render-replacement.js';
import { assistantMessage, toolRound, userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter } from '../tokens.js';
import { ENTRY_FEATURES, entryFeaturizer } from './entry-features.js';
import {
  defaultEntryModel,
  ENTRY_MODEL_FORMAT,
  entryScorer,
  entryScorers,
  parseEntryModel,
  rankInMessage,
} from './entry-model.js';
import { sigmoid } from './logistic.js';

function session() {
  const messages = [userMessage('find why parse_config fails')];
  for (let index = 1; index <= 8; index += 1)
    messages.push(
      ...toolRound(
        `c${index}`,
        'bash',
        { command: `cat src/module_${index}.py` },
        `def handler_${index}(): return ${1000 + index}`,
      ),
    );
  messages.push(assistantMessage('handler_8 in src/module_8.py looks wrong.'));
  return indexTranscript(messages, { tokenCounter: approximateTokenCounter });
}

describe('entry models', () => {
  it('the default model parses and names this version of the features', () => {
    const model = defaultEntryModel();
    expect(model.format).toBe(ENTRY_MODEL_FORMAT);
    expect(model.features).toEqual([...ENTRY_FEATURES]);
    expect(model.weights.some((weight) => weight !== 0)).toBe(true);
    expect(model.withinMessage?.weights.some((weight) => weight !== 0)).toBe(true);
  });

  it('a file that is not a model gets a clear error, not a crash later', () => {
    const model = defaultEntryModel();
    expect(() => parseEntryModel({ format: 'other' }, 'm.json')).toThrow(BadInputError);
    expect(() => parseEntryModel({ ...model, features: ['age'] }, 'm.json')).toThrow(/features must be/);
    expect(() => parseEntryModel({ ...model, scale: model.scale.map(() => 0) }, 'm.json')).toThrow(
      /scale must be positive/,
    );
    expect(() => parseEntryModel({ ...model, weights: [1] }, 'm.json')).toThrow(/weights needs/);
    expect(() =>
      parseEntryModel({ ...model, withinMessage: { scale: model.scale, weights: [1] } }, 'm.json'),
    ).toThrow(/withinMessage.weights needs/);
    // A model without the weights within messages (as `selfgc train` wrote before them) still reads.
    const { withinMessage: _, ...older } = model;
    expect(parseEntryModel(older, 'm.json').withinMessage).toBeUndefined();
  });

  it('orders a message by the weights within messages, and compares messages by the score', () => {
    const ledger = session();
    const holder = 2;
    const anchors = messageEntries(ledger.messages[holder]!).anchors;
    const name = anchors.find((entry) => entry.value === 'handler_1')!;
    const number = anchors.find((entry) => entry.value === '1001')!;
    const column = (feature: string) => ENTRY_FEATURES.map((name) => (name === feature ? 1 : 0));
    const flat = ENTRY_FEATURES.map(() => 1);
    const { withinMessage: _, ...scoreOnly } = defaultEntryModel();
    const pooled = {
      ...scoreOnly,
      mean: ENTRY_FEATURES.map(() => 0),
      scale: flat,
      bias: 0,
      weights: column('isNumber').map((weight) => -weight),
    };
    const scorers = entryScorers(
      { ...pooled, withinMessage: { scale: flat, weights: column('isNumber') } },
      ledger,
    );
    expect(scorers.score(name, holder)).toBeGreaterThan(scorers.score(number, holder));
    expect(scorers.rank(number, holder)).toBeGreaterThan(scorers.rank(name, holder));
    // Without them, the score orders a message too.
    const plain = entryScorers(pooled, ledger);
    expect(plain.rank).toBe(plain.score);
    expect(rankInMessage(pooled, [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0])).toBeCloseTo(sigmoid(-1));
    // An entry that needs no index scores and ranks 0.
    const shown = { kind: 'identifier' as const, value: 'parse_config' };
    expect(scorers.rank(shown, holder)).toBe(0);
    expect(scorers.score(shown, holder)).toBe(0);
  });

  it('an anchor the latest steps or the request still show scores 0: it needs no index', () => {
    const ledger = session();
    const featurizer = entryFeaturizer(ledger);
    expect(featurizer.shownElsewhere({ kind: 'identifier', value: 'parse_config' })).toBe(true);
    expect(featurizer.shownElsewhere({ kind: 'identifier', value: 'handler_8' })).toBe(true);
    expect(featurizer.shownElsewhere({ kind: 'identifier', value: 'handler_1' })).toBe(false);
    const score = entryScorer(defaultEntryModel(), ledger);
    expect(score({ kind: 'identifier', value: 'handler_8' }, 23)).toBe(0);
    expect(score({ kind: 'identifier', value: 'handler_1' }, 2)).toBeGreaterThan(0);
    expect(featurizer.features({ kind: 'identifier', value: 'handler_1' }, 2)).toHaveLength(
      ENTRY_FEATURES.length,
    );
  });

  it("an entry's place among its message's anchors and their number are features", () => {
    const ledger = session();
    const featurizer = entryFeaturizer(ledger);
    const column = (name: string) => ENTRY_FEATURES.indexOf(name as (typeof ENTRY_FEATURES)[number]);
    const holder = 2;
    const [first, second] = messageEntries(ledger.messages[holder]!).anchors;
    const rank = column('rankInMessage');
    const count = column('messageAnchors');
    expect(featurizer.features(first!, holder)[rank]).toBe(0);
    expect(featurizer.features(second!, holder)[rank]).toBeCloseTo(Math.log1p(1));
    expect(featurizer.features(first!, holder)[count]).toBeCloseTo(
      Math.log1p(messageEntries(ledger.messages[holder]!).anchors.length),
    );
    // An entry the message does not hold ranks after all of its own.
    expect(featurizer.features({ kind: 'identifier', value: 'elsewhere' }, holder)[rank]).toBe(
      featurizer.features(first!, holder)[count],
    );
  });

  it("a fold index lists each message's anchors by the score it is given, latest messages first", () => {
    const ledger = session();
    const conversation = ledger.get('conversation:user:1')!;
    const listed = (parts: FoldParts) => parts.anchors;
    // By kind, an output's name comes before its number; a score that prefers numbers turns that.
    // Room for the anchors alone: a line after them would take the place of the names it shows.
    const byKind = listed(spanFoldParts(ledger, conversation, 10, { maxAnchors: 13 }));
    const numbersFirst = (entry: { value: string }) => (/^\d+$/.test(entry.value) ? 1 : 0.1);
    const scored = listed(
      spanFoldParts(ledger, conversation, 10, { rankEntry: numbersFirst, maxAnchors: 13 }),
    );
    expect(byKind.indexOf('handler_4')).toBeLessThan(byKind.indexOf('1004'));
    expect(scored.indexOf('1004')).toBeLessThan(scored.indexOf('handler_4'));
    // The rounds over the messages stay latest first: a score does not pull old work ahead.
    expect(scored.indexOf('1004')).toBeLessThan(scored.indexOf('1001'));
    const oldestFirst = (entry: { value: string }) => (entry.value.includes('_1') ? 1 : 0.1);
    const budgeted = listed(
      spanFoldParts(ledger, conversation, 10, { rankEntry: oldestFirst, maxAnchors: 3 }),
    );
    expect(budgeted).toHaveLength(3);
    expect(budgeted).not.toContain('handler_1');
  });
});
