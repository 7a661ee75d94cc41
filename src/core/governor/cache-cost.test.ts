import { describe, expect, it } from 'vitest';
import {
  ANTHROPIC_PRICING,
  ANTHROPIC_PRICING_1H,
  type CommitEconomics,
  defaultPricing,
  OPENAI_PRICING,
  weighCommit,
} from './cache-cost.js';

const base: CommitEconomics = {
  tokensBefore: 10_000,
  tokensAfter: 6_000,
  cachedPrefixTokens: 2_000,
  futureCalls: 10,
  gcTokens: 500,
  cacheWarm: true,
};

describe('weighCommit', () => {
  it('defers when a warm Anthropic cache costs more to rewrite than the saving', () => {
    const result = weighCommit(base, ANTHROPIC_PRICING);
    // 10 calls × 4000 freed tokens × 0.1 (cache read) = 4000.
    expect(result.saving).toBeCloseTo(4_000);
    // 4000 tokens after the edit × (1.25 − 0.1) = 4600.
    expect(result.breakCost).toBeCloseTo(4_600);
    expect(result.gcCost).toBe(500);
    expect(result.worthIt).toBe(false);
  });

  it('commits when the cache is cold: nothing is left to break; the freed tokens would be written once, then read', () => {
    const result = weighCommit({ ...base, cacheWarm: false }, ANTHROPIC_PRICING);
    // 4000 freed tokens × (1.25 for the next call's write + 9 × 0.1 for the reads after it) = 8600.
    expect(result.saving).toBeCloseTo(8_600);
    expect(result.breakCost).toBe(0);
    expect(result.worthIt).toBe(true);
  });

  it('commits on a warm OpenAI cache, where writes cost no more than input', () => {
    const result = weighCommit(base, OPENAI_PRICING);
    expect(result.saving).toBeCloseTo(20_000);
    expect(result.breakCost).toBeCloseTo(2_000);
    expect(result.worthIt).toBe(true);
  });

  it('prices the one-hour Anthropic cache write higher', () => {
    expect(weighCommit(base, ANTHROPIC_PRICING_1H).breakCost).toBeCloseTo(4_000 * 1.9);
  });

  it('becomes worth it with more future calls', () => {
    expect(weighCommit({ ...base, futureCalls: 20 }, ANTHROPIC_PRICING).worthIt).toBe(true);
  });

  it('charges the planner tokens', () => {
    expect(weighCommit({ ...base, cacheWarm: false, gcTokens: 8_600 }, ANTHROPIC_PRICING).worthIt).toBe(
      false,
    );
    expect(weighCommit({ ...base, cacheWarm: false, gcTokens: 8_599 }, ANTHROPIC_PRICING).worthIt).toBe(true);
  });

  it('saves nothing when the view does not shrink, and never counts a negative suffix', () => {
    const grown = weighCommit({ ...base, tokensAfter: 12_000, gcTokens: 0 }, OPENAI_PRICING);
    expect(grown.saving).toBe(0);
    expect(grown.worthIt).toBe(false);
    const early = weighCommit({ ...base, cachedPrefixTokens: 9_000 }, ANTHROPIC_PRICING);
    expect(early.breakCost).toBe(0);
  });

  it('scales with the unit price', () => {
    const doubled = weighCommit(base, { ...ANTHROPIC_PRICING, input: 2 });
    const single = weighCommit(base, ANTHROPIC_PRICING);
    expect(doubled.saving).toBeCloseTo(single.saving * 2);
    expect(doubled.breakCost).toBeCloseTo(single.breakCost * 2);
    expect(doubled.gcCost).toBe(single.gcCost * 2);
  });
});

describe('defaultPricing', () => {
  it('uses Anthropic 5-minute pricing for Anthropic and OpenAI pricing otherwise', () => {
    expect(defaultPricing('anthropic')).toEqual({
      input: 1,
      cacheWrite: 1.25,
      cacheRead: 0.1,
      ttlMs: 300_000,
    });
    expect(defaultPricing('openai')).toBe(OPENAI_PRICING);
  });
});
