import { Buffer } from 'node:buffer';
import { BadInputError } from '../core/errors.js';
import type { TokenCounter } from '../core/tokens.js';
import { memoizeTokenCounter } from '../core/tokens.js';
import { type CountTokens, type EncodingName, loadEncoding, loadEncodingSync } from './load-encoding.js';

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

const TOKENIZERS: Readonly<Record<TokenizerName, { label: string; encoding: EncodingName; scale: number }>> =
  {
    o200k_base: { label: 'o200k_base', encoding: 'o200k_base', scale: 1 },
    cl100k_base: { label: 'cl100k_base', encoding: 'cl100k_base', scale: 1 },
    anthropic: { label: 'anthropic (cl100k_base × 1.15)', encoding: 'cl100k_base', scale: ANTHROPIC_SCALE },
  };

function tokenizerOf(name: TokenizerName) {
  const tokenizer = Object.hasOwn(TOKENIZERS, name) ? TOKENIZERS[name] : undefined;
  if (!tokenizer)
    throw new BadInputError(`unknown tokenizer "${String(name)}" (use o200k_base, cl100k_base or anthropic)`);
  return tokenizer;
}

/**
 * A byte-level BPE encodes each piece of text as tokens of one byte or more of its UTF-8 (a
 * lone surrogate is U+FFFD, three bytes, as `Buffer.byteLength` counts it too), and a special
 * token stands for several characters: a text never has more tokens than UTF-8 bytes.
 */
function tokensAtMost(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

function counterOf(name: TokenizerName, load: () => CountTokens): TokenCounter {
  const { label, scale } = tokenizerOf(name);
  let countTokens: CountTokens | undefined;
  const scaled = (tokens: number) => (scale === 1 ? tokens : Math.ceil(tokens * scale));
  return {
    name: label,
    count(text) {
      if (text.length === 0) return 0;
      countTokens ??= load();
      return scaled(countTokens(text, PLAIN));
    },
    bound: (text) => scaled(tokensAtMost(text)),
  };
}

/**
 * A real BPE token counter by encoding name. Its table (megabytes) loads on the first count
 * that is not of an empty text; `loadTokenCounter` loads it ahead of time instead.
 */
export function createTokenCounter(name: TokenizerName = 'o200k_base'): TokenCounter {
  return counterOf(name, () => loadEncodingSync(tokenizerOf(name).encoding));
}

/** A real BPE token counter whose table is loaded before it is returned (for a server's start-up). */
export async function loadTokenCounter(name: TokenizerName = 'o200k_base'): Promise<TokenCounter> {
  const countTokens = await loadEncoding(tokenizerOf(name).encoding);
  return counterOf(name, () => countTokens);
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
