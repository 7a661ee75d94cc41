import { describe, expect, it } from 'vitest';
import { indexTranscript, type Ledger } from '../ledger.js';
import { typicalStepTokens } from '../ledger-measures.js';
import type { ViewState } from '../operations.js';
import { rehearsePlan } from '../rehearse-plan.js';
import { withoutIndex } from '../render-replacement.js';
import { longSession } from '../testing/long-session.js';
import { assistantMessage, systemMessage, toolRound, userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter } from '../tokens.js';
import type { Message } from '../transcript.js';
import { DEEP_REDUCTION } from '../tuning.js';
import { ENTRY_FEATURES } from '../valuator/entry-features.js';
import { ENTRY_MODEL_FORMAT, type EntryModel } from '../valuator/entry-model.js';
import { type CallLimits, reduceWithFallback, shrinkIndexes, waterLevel } from './deep-reduction.js';
import { createPinRule } from './pins.js';

function ledgerOf(): Ledger {
  return indexTranscript(longSession({ rounds: 24, requestEvery: 4 }), {
    tokenCounter: approximateTokenCounter,
    pin: createPinRule(),
  });
}

function limitsOf(window: number): CallLimits {
  return {
    window,
    target: Math.floor(window * 0.4),
    minBatch: 0,
    rehearse: { spanAnchorTokens: Math.floor(window / 3) },
  };
}

/** A committed state with the old requests pruned, each tombstone naming its work. */
function prunedRequests(ledger: Ledger): ViewState {
  const requests = ledger.objects.filter((object) => object.kind === 'conversation' && !object.pinned);
  const operations = requests
    .slice(0, -1)
    .map((object) => ({ objectId: object.id, operation: 'prune' as const, reason: 'test' }));
  const rehearsal = rehearsePlan(ledger, {}, { planner: 'test', operations });
  expect(rehearsal.accepted).toHaveLength(operations.length);
  return rehearsal.stateAfter;
}

const tombstones = (state: ViewState) =>
  Object.entries(state)
    .filter(([id, entry]) => id.startsWith('conversation:') && entry.operation === 'prune')
    .map(([, entry]) => entry.replacement);

describe('the deep reduction and named tombstones', () => {
  it('keeps the names of pruned requests while the view fits the window', () => {
    const ledger = ledgerOf();
    const state = prunedRequests(ledger);
    expect(tombstones(state).every((text) => text.includes('; its work named '))).toBe(true);
    const rehearsal = reduceWithFallback(ledger, limitsOf(ledger.totalTokens), state);
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(ledger.totalTokens);
    expect(tombstones(rehearsal.stateAfter).every((text) => text.includes('; its work named '))).toBe(true);
  });

  it('drops the names, those committed before too, when nothing else brings the view under the window', () => {
    const ledger = ledgerOf();
    const state = prunedRequests(ledger);
    const named = reduceWithFallback(ledger, limitsOf(ledger.totalTokens), state);
    // A window smaller than the pinned request and the latest turn: nothing can fit it.
    const rehearsal = reduceWithFallback(ledger, limitsOf(200), state);
    const bare = tombstones(rehearsal.stateAfter);
    expect(bare.length).toBeGreaterThanOrEqual(tombstones(state).length);
    for (const text of bare) expect(text).toMatch(/^\[pruned conversation:user:\d+: "[^"]*"\]$/);
    expect(rehearsal.tokensAfter).toBeLessThan(named.tokensAfter);
  });

  it('names the work again at the next commit with room, and leaves named tombstones as they are', () => {
    const ledger = ledgerOf();
    const state = prunedRequests(ledger);
    const bare = reduceWithFallback(ledger, limitsOf(200), state).stateAfter;
    const window = ledger.totalTokens;
    const again = reduceWithFallback(ledger, limitsOf(window), bare);
    expect(again.tokensAfter).toBeLessThanOrEqual(window);
    const named = tombstones(again.stateAfter);
    expect(named.length).toBe(tombstones(bare).length);
    expect(named.every((text) => text.includes('; its work named '))).toBe(true);
    // A tombstone that still names its work is not rendered again (its commit's cache stays).
    const kept = reduceWithFallback(ledger, limitsOf(window), again.stateAfter);
    expect(tombstones(kept.stateAfter)).toEqual(named);
    expect(kept.accepted.filter((accepted) => accepted.operation.operation === 'prune')).toEqual([]);
  });
});

/** A model that scores paths far above every other entry. */
const pathsModel: EntryModel = {
  format: ENTRY_MODEL_FORMAT,
  version: 1,
  features: [...ENTRY_FEATURES],
  mean: ENTRY_FEATURES.map(() => 0),
  scale: ENTRY_FEATURES.map(() => 1),
  weights: ENTRY_FEATURES.map((name) => (name === 'isPath' ? 6 : 0)),
  bias: -3,
};

/** Work of `rounds` steps whose outputs hold `names(step)` and nothing else worth naming. */
function work(label: string, rounds: number, names: (step: number) => string[]): Message[] {
  return Array.from({ length: rounds }, (_, step) =>
    toolRound(`${label}${step}`, 'bash', { command: `step ${step}` }, names(step).join('\n')),
  ).flat();
}

/**
 * Two requests and their work: the first's `paths.steps` steps name `paths.each` paths each, the
 * second's `names.steps` steps as many identifiers; then the latest turn.
 */
function twoRequests(
  paths: { steps: number; each: number },
  names: { steps: number; each: number },
  latestSteps: Message[] = [],
): Ledger {
  return indexTranscript(
    [
      systemMessage('You are a coding agent.'),
      userMessage('set up the project'),
      assistantMessage('Done.'),
      userMessage('look at the sources'),
      ...work('a', paths.steps, (step) =>
        Array.from({ length: paths.each }, (_, n) => `src/module_${step}/file_${n}.py`),
      ),
      userMessage('look at the names'),
      ...work('b', names.steps, (step) =>
        Array.from({ length: names.each }, (_, n) => `parse_value_${step}_${n}`),
      ),
      userMessage('now fix it'),
      assistantMessage('On it.'),
      ...latestSteps,
    ],
    { tokenCounter: approximateTokenCounter, pin: createPinRule() },
  );
}

/** Two requests whose work is folded: the first's names paths, the second's only identifiers. */
function foldedSpans(entryModel?: EntryModel, latestSteps: Message[] = []) {
  const ledger = twoRequests({ steps: 8, each: 12 }, { steps: 8, each: 12 }, latestSteps);
  const spans = ledger.objects.filter(
    (object) => object.kind === 'conversation' && !object.pinned && object.span.end < ledger.messages.length,
  );
  const rehearse = { spanAnchorTokens: 4_000, ...(entryModel ? { entryModel } : {}) };
  const folded = rehearsePlan(
    ledger,
    {},
    {
      planner: 'test',
      operations: spans.map((object) => ({
        objectId: object.id,
        operation: 'fold' as const,
        spanEnd: object.span.end,
        reason: 'test',
      })),
    },
    rehearse,
  );
  expect(folded.rejected).toEqual([]);
  expect(folded.accepted).toHaveLength(2);
  // Over the window by a third of what the two indexes hold.
  const window = folded.tokensAfter - 300;
  const limits: CallLimits = { window, target: window, minBatch: 0, rehearse };
  const { rehearsal } = shrinkIndexes(ledger, limits, {}, folded, rehearse.spanAnchorTokens);
  const indexOf = (id: string) => rehearsal.stateAfter[id]?.replacement ?? '';
  return {
    ledger,
    rehearse,
    window,
    tokensAfter: rehearsal.tokensAfter,
    shrunk: rehearsal.stateAfter,
    paths: indexOf(spans[0]!.id),
    names: indexOf(spans[1]!.id),
    spanIds: [spans[0]!.id, spans[1]!.id] as const,
  };
}

const listed = (index: string, pattern: RegExp) => index.match(pattern)?.length ?? 0;

describe('shrinking the indexes to the window', () => {
  it('shares the bound evenly, whatever the valuator scores: a span whose entries score low keeps its share', () => {
    const even = foldedSpans();
    const byValue = foldedSpans(pathsModel);
    for (const outcome of [even, byValue]) expect(outcome.tokensAfter).toBeLessThanOrEqual(outcome.window);
    const paths = /src\/module_\d+\/file_\d+\.py/g;
    const names = /parse_value_\d+_\d+/g;
    // Both indexes were cut, and both still list some of their work.
    expect(listed(even.paths, paths)).toBeGreaterThan(0);
    expect(listed(even.names, names)).toBeGreaterThan(0);
    expect(listed(even.names, names)).toBeLessThan(8 * 12);
    // A model that scores paths far above identifiers does not take the identifiers' room.
    expect(listed(byValue.paths, paths)).toBe(listed(even.paths, paths));
    expect(listed(byValue.names, names)).toBe(listed(even.names, names));
  });
});

describe('indexes cut to a window regrow at the next commit with room', () => {
  const paths = /src\/module_\d+\/file_\d+\.py/g;
  const names = /parse_value_\d+_\d+/g;

  it('lists again what the cut left out, inside the window, the indexes committed earlier too', () => {
    const { ledger, rehearse, tokensAfter, shrunk, spanIds } = foldedSpans();
    // The pressure has passed: the same committed state, and a window with room beside it.
    const window = tokensAfter + 2_000;
    const limits: CallLimits = { window, target: Math.floor(window * 0.4), minBatch: 0, rehearse };
    const rehearsal = reduceWithFallback(ledger, limits, shrunk);
    expect(rehearsal.tokensAfter).toBeGreaterThan(tokensAfter);
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(window);
    const [pathsId, namesId] = spanIds;
    const before = { paths: shrunk[pathsId]!.replacement, names: shrunk[namesId]!.replacement };
    const after = {
      paths: rehearsal.stateAfter[pathsId]!.replacement,
      names: rehearsal.stateAfter[namesId]!.replacement,
    };
    expect(listed(after.paths, paths)).toBeGreaterThan(listed(before.paths, paths));
    expect(listed(after.names, names)).toBeGreaterThan(listed(before.names, names));
  });

  const bigSteps = (count: number) =>
    Array.from({ length: count }, (_, step) =>
      toolRound(`big${step}`, 'bash', { command: `cat big${step}.log` }, `log line ${step}\n`.repeat(400)),
    ).flat();

  it('leaves the room of a typical step free, so that the next call fits without a commit', () => {
    const { ledger, rehearse, shrunk } = foldedSpans(undefined, bigSteps(3));
    const step = typicalStepTokens(ledger, DEEP_REDUCTION.headroomSteps);
    expect(step).toBeGreaterThan(500);
    const window = Math.round(step * 2.5);
    const limits: CallLimits = { window, target: Math.floor(window * 0.4), minBatch: 0, rehearse };
    const rehearsal = reduceWithFallback(ledger, limits, shrunk);
    // The indexes grow back below the shrink's margin, and here below the room the next step
    // needs, which is the lower bound of the two.
    expect(window * DEEP_REDUCTION.shrinkMargin).toBeGreaterThan(window - step);
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(window - step);
  });

  it('takes a typical step as the median of the latest: one large output does not set it', () => {
    const one = foldedSpans(undefined, bigSteps(1)).ledger;
    const three = foldedSpans(undefined, bigSteps(3)).ledger;
    const big = typicalStepTokens(three, DEEP_REDUCTION.headroomSteps);
    expect(typicalStepTokens(one, DEEP_REDUCTION.headroomSteps)).toBeLessThan(big / 4);
  });

  it('gives the room a small index leaves to the others: a short span lists all, a long one more than an even share', () => {
    const ledger = twoRequests({ steps: 2, each: 3 }, { steps: 10, each: 20 });
    const [small, big] = ledger.objects.filter(
      (object) =>
        object.kind === 'conversation' && !object.pinned && object.span.end < ledger.messages.length,
    );
    const operations = [small!, big!].map((object) => ({
      objectId: object.id,
      operation: 'fold' as const,
      spanEnd: object.span.end,
      indexTokens: 40,
      reason: 'test',
    }));
    const rehearse = { spanAnchorTokens: 40 };
    const cut = rehearsePlan(ledger, {}, { planner: 'test', operations }, rehearse);
    expect(cut.accepted).toHaveLength(2);
    const indexTokens = (state: ViewState, id: string) =>
      (state[id]!.tokens ?? 0) - approximateTokenCounter.count(withoutIndex(state[id]!.replacement));
    const window = cut.tokensAfter + 450;
    const limits: CallLimits = { window, target: Math.floor(window * 0.4), minBatch: 0, rehearse };
    const rehearsal = reduceWithFallback(ledger, limits, cut.stateAfter);
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(window);
    const after = rehearsal.stateAfter;
    // The short span's index lists all its paths, with room to spare.
    expect(listed(after[small!.id]!.replacement, /src\/module_\d+\/file_\d+\.py/g)).toBe(6);
    // An even share of the room would have bound each index to half of what both hold now at most.
    const ceiling = Math.min(
      window * DEEP_REDUCTION.shrinkMargin,
      window - typicalStepTokens(ledger, DEEP_REDUCTION.headroomSteps),
    );
    const pool =
      indexTokens(cut.stateAfter, small!.id) +
      indexTokens(cut.stateAfter, big!.id) +
      ceiling -
      cut.tokensAfter;
    expect(indexTokens(after, small!.id)).toBeLessThan(pool / 4);
    expect(indexTokens(after, big!.id)).toBeGreaterThan(pool / 2);
  });

  it('leaves them as they are when the view has no room below the margin', () => {
    const { ledger, rehearse, tokensAfter, shrunk, spanIds } = foldedSpans();
    const window = tokensAfter + 100;
    const limits: CallLimits = { window, target: Math.floor(window * 0.4), minBatch: 0, rehearse };
    const rehearsal = reduceWithFallback(ledger, limits, shrunk);
    for (const id of spanIds) expect(rehearsal.stateAfter[id]?.replacement).toBe(shrunk[id]!.replacement);
  });
});

describe('the water level of the indexes', () => {
  it('gives each index what it needs up to a level, the level taking up the pool', () => {
    expect(waterLevel([100, 100, 1_000], 900)).toBe(700);
    expect(waterLevel([500, 500], 600)).toBe(300);
    expect(waterLevel([0, 50, 400, 400], 650)).toBe(300);
  });

  it('is never below an even share, and lets every index grow whole when they all fit', () => {
    expect(waterLevel([1_000, 1_000, 1_000], 900)).toBe(300);
    expect(waterLevel([10, 20], 100)).toBe(100);
    expect(waterLevel([], 100)).toBe(100);
  });
});
