/**
 * The cache-aware commit rule. Editing the view at message i invalidates the provider's prompt
 * cache from i on: every token after the earliest edit is written again at the cache-write
 * price on the next call. A commit pays off when
 *
 *   N_future × (C − C′) × price − cache_break_cost − gc_cost > 0.
 */

import type { PlannerCost } from '../planners/planner.js';

/** Prices relative to one uncached input token (so `input` is the unit price). */
export interface CachePricing {
  /** Price of one uncached input token (any currency unit; only ratios matter). */
  input: number;
  /** Multiplier for writing a token into the cache (Anthropic 1.25 for 5 minutes, 2 for 1 hour; OpenAI 1). */
  cacheWrite: number;
  /** Multiplier for reading a cached token (Anthropic 0.1; OpenAI 0.5 or less, per model). */
  cacheRead: number;
  /** How long a cached prefix lives without use, in milliseconds. */
  ttlMs: number;
  /** Multiplier for an output token (default `DEFAULT_OUTPUT_PRICE`). */
  output?: number;
}

/** An output token's price in input tokens when the pricing names none (OpenAI's ratio). */
export const DEFAULT_OUTPUT_PRICE = 4;

export const ANTHROPIC_PRICING: CachePricing = {
  input: 1,
  cacheWrite: 1.25,
  cacheRead: 0.1,
  ttlMs: 5 * 60_000,
  output: 5,
};
export const ANTHROPIC_PRICING_1H: CachePricing = {
  input: 1,
  cacheWrite: 2,
  cacheRead: 0.1,
  ttlMs: 60 * 60_000,
  output: 5,
};
export const OPENAI_PRICING: CachePricing = {
  input: 1,
  cacheWrite: 1,
  cacheRead: 0.5,
  ttlMs: 5 * 60_000,
  output: 4,
};

export function defaultPricing(provider: 'openai' | 'anthropic'): CachePricing {
  return provider === 'anthropic' ? ANTHROPIC_PRICING : OPENAI_PRICING;
}

export interface CommitEconomics {
  /** View tokens before and after the commit. */
  tokensBefore: number;
  tokensAfter: number;
  /** View tokens before the earliest edit (the prefix that stays cached). */
  cachedPrefixTokens: number;
  /** Model calls expected before the session ends or the next commit. */
  futureCalls: number;
  /** What the planner's call spent (none for the embedded planner, or a plan held pending). */
  gc?: PlannerCost;
  /** Whether the cache is still warm (a call within the TTL). */
  cacheWarm: boolean;
}

/** The numbers of the rule, in units of `pricing.input`. */
export function weighCommit(economics: CommitEconomics, pricing: CachePricing) {
  const freed = Math.max(0, economics.tokensBefore - economics.tokensAfter);
  // What the freed tokens would cost over the future calls: read from a warm cache each time; on
  // a cold cache written once by the next call, then read by the calls after it.
  const calls = economics.futureCalls;
  const perToken = economics.cacheWarm
    ? calls * pricing.cacheRead
    : Math.min(1, calls) * pricing.cacheWrite + Math.max(0, calls - 1) * pricing.cacheRead;
  const saving = freed * pricing.input * perToken;
  // Breaking a warm cache: the suffix after the edit is written again instead of read.
  const suffix = Math.max(0, economics.tokensAfter - economics.cachedPrefixTokens);
  const breakCost = economics.cacheWarm
    ? suffix * pricing.input * (pricing.cacheWrite - pricing.cacheRead)
    : 0;
  const gcCost = plannerCallCost(economics.gc, pricing);
  return { saving, breakCost, gcCost, worthIt: saving - breakCost - gcCost > 0 };
}

/**
 * A planner call's price as its provider reported it: cache reads at the read rate, cache writes
 * at the write rate, the rest of the prompt as uncached input, and the answer as output.
 */
export function plannerCallCost(cost: PlannerCost | undefined, pricing: CachePricing): number {
  if (!cost) return 0;
  const read = Math.min(cost.inputTokens, cost.cachedInputTokens ?? 0);
  const written = Math.min(cost.inputTokens - read, cost.cacheWriteInputTokens ?? 0);
  const uncached = cost.inputTokens - read - written;
  const outputPrice = pricing.output ?? DEFAULT_OUTPUT_PRICE;
  return (
    pricing.input *
    (uncached + read * pricing.cacheRead + written * pricing.cacheWrite + cost.outputTokens * outputPrice)
  );
}
