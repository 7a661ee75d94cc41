import { describe, expect, it } from 'vitest';
import {
  ANTHROPIC_PRICING,
  ANTHROPIC_PRICING_1H,
  type CommitEconomics,
  DEFAULT_OUTPUT_PRICE,
  defaultPricing,
  OPENAI_PRICING,
  plannerCallCost,
  weighCommit,
} from './cache-cost.js';

const base: CommitEconomics = {
  tokensBefore: 10_000,
  tokensAfter: 6_000,
  cachedPrefixTokens: 2_000,
  futureCalls: 10,
  gc: { inputTokens: 500, outputTokens: 0 },
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
    const cold = { ...base, cacheWarm: false };
    expect(
      weighCommit({ ...cold, gc: { inputTokens: 8_600, outputTokens: 0 } }, ANTHROPIC_PRICING).worthIt,
    ).toBe(false);
    expect(
      weighCommit({ ...cold, gc: { inputTokens: 8_599, outputTokens: 0 } }, ANTHROPIC_PRICING).worthIt,
    ).toBe(true);
    // Read from the cache, the same prompt costs a tenth: the commit goes ahead.
    const cached = { inputTokens: 8_600, outputTokens: 0, cachedInputTokens: 8_600 };
    expect(weighCommit({ ...cold, gc: cached }, ANTHROPIC_PRICING)).toMatchObject({
      gcCost: 860,
      worthIt: true,
    });
  });

  it('saves nothing when the view does not shrink, and never counts a negative suffix', () => {
    const { gc: _gc, ...free } = base;
    const grown = weighCommit({ ...free, tokensAfter: 12_000 }, OPENAI_PRICING);
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

describe('plannerCallCost', () => {
  it('prices cache reads and writes at the cache rates, the rest of the prompt as input, the answer as output', () => {
    const usage = {
      inputTokens: 10_000,
      outputTokens: 200,
      cachedInputTokens: 8_000,
      cacheWriteInputTokens: 1_500,
    };
    // 500 uncached + 8000 × 0.1 + 1500 × 1.25 + 200 × 5.
    expect(plannerCallCost(usage, ANTHROPIC_PRICING)).toBeCloseTo(500 + 800 + 1_875 + 1_000);
    // OpenAI: 2000 uncached (it reports no writes, so none are counted here) + 8000 × 0.5 + 200 × 4.
    expect(
      plannerCallCost({ inputTokens: 10_000, outputTokens: 200, cachedInputTokens: 8_000 }, OPENAI_PRICING),
    ).toBeCloseTo(2_000 + 4_000 + 800);
  });

  it('costs nothing without usage, never counts more cached tokens than the prompt, and prices output at 4× unless told', () => {
    expect(plannerCallCost(undefined, ANTHROPIC_PRICING)).toBe(0);
    expect(
      plannerCallCost(
        { inputTokens: 100, outputTokens: 0, cachedInputTokens: 500, cacheWriteInputTokens: 50 },
        ANTHROPIC_PRICING,
      ),
    ).toBeCloseTo(10);
    const { output: _output, ...unpriced } = OPENAI_PRICING;
    expect(plannerCallCost({ inputTokens: 0, outputTokens: 10 }, unpriced)).toBe(10 * DEFAULT_OUTPUT_PRICE);
  });
});

describe('defaultPricing', () => {
  it('uses Anthropic 5-minute pricing for Anthropic and OpenAI pricing otherwise', () => {
    expect(defaultPricing('anthropic')).toEqual({
      input: 1,
      cacheWrite: 1.25,
      cacheRead: 0.1,
      ttlMs: 300_000,
      output: 5,
    });
    expect(defaultPricing('openai')).toBe(OPENAI_PRICING);
  });
});
