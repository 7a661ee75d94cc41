import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { BadInputError } from '../core/errors.js';
import type { TokenCounter } from '../core/tokens.js';
import { memoizeTokenCounter } from '../core/tokens.js';

export type TokenizerName = 'o200k_base' | 'cl100k_base' | 'anthropic';

/**
 * Special-token text such as `<|endoftext|>` inside a transcript is plain text to us: it must
 * be counted, never rejected.
 */
const PLAIN = { disallowedSpecial: new Set<string>() } as const;

/**
 * Anthropic does not publish its tokenizer. We count with cl100k_base (the closest public BPE)
 * and scale by `ANTHROPIC_SCALE`: Claude tokenizers produce more tokens than cl100k for the same
 * text, by roughly 10–20% on code and English. Exact counts need Anthropic's count_tokens
 * endpoint, which the proxy can forward; the harness only needs a stable, slightly pessimistic
 * estimate to stay under the window.
 */
export const ANTHROPIC_SCALE = 1.15;

/** A real BPE token counter by encoding name. */
export function createTokenCounter(name: TokenizerName = 'o200k_base'): TokenCounter {
  switch (name) {
    case 'o200k_base':
      return { name, count: (text) => (text.length === 0 ? 0 : countO200k(text, PLAIN)) };
    case 'cl100k_base':
      return { name, count: (text) => (text.length === 0 ? 0 : countCl100k(text, PLAIN)) };
    case 'anthropic':
      return {
        name: 'anthropic (cl100k_base × 1.15)',
        count: (text) => (text.length === 0 ? 0 : Math.ceil(countCl100k(text, PLAIN) * ANTHROPIC_SCALE)),
      };
    default:
      throw new BadInputError(
        `unknown tokenizer "${String(name)}" (use o200k_base, cl100k_base or anthropic)`,
      );
  }
}

/** The counter that fits a provider by default. */
export function tokenCounterForProvider(provider: 'openai' | 'anthropic'): TokenCounter {
  return createTokenCounter(provider === 'anthropic' ? 'anthropic' : 'o200k_base');
}

/**
 * Each provider's counter, memoized and made once: a proxy counts Anthropic requests as Anthropic
 * counts them (conservatively) and OpenAI's with o200k, so a window holds on either side.
 */
export function providerTokenCounters(): (provider: 'openai' | 'anthropic') => TokenCounter {
  const counters = new Map<string, TokenCounter>();
  return (provider) => {
    let counter = counters.get(provider);
    if (counter === undefined) {
      counter = memoizeTokenCounter(tokenCounterForProvider(provider));
      counters.set(provider, counter);
    }
    return counter;
  };
}
