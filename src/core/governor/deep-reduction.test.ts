import { describe, expect, it } from 'vitest';
import { indexTranscript, type Ledger } from '../ledger.js';
import type { ViewState } from '../operations.js';
import { rehearsePlan } from '../rehearse-plan.js';
import { longSession } from '../testing/long-session.js';
import { approximateTokenCounter } from '../tokens.js';
import { type CallLimits, reduceWithFallback } from './deep-reduction.js';
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
});
