/**
 * Token counting is injected into the core: the core never loads a tokenizer itself.
 * `src/tokenizers/` provides real BPE counters (o200k, cl100k) behind this interface.
 */
export interface TokenCounter {
  /** Name of the encoding, e.g. `o200k_base`. */
  readonly name: string;
  /** Tokens of a text under this encoding. Must be deterministic and never throw. */
  count(text: string): number;
}

/** Per-message framing tokens (role markers, separators) that chat formats add. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/** A crude counter (characters / 4) for tests and for callers who want no tokenizer. */
export const approximateTokenCounter: TokenCounter = {
  name: 'chars/4',
  count: (text) => Math.ceil(text.length / 4),
};

/**
 * Remember counts of texts: replay indexes the same messages at many cut points, and the
 * governor re-counts replacement texts. Short texts are cheaper to count than to look up.
 */
export function memoizeTokenCounter(counter: TokenCounter, maxEntries = 200_000): TokenCounter {
  const cache = new Map<string, number>();
  return {
    name: counter.name,
    count(text) {
      if (text.length < 16) return counter.count(text);
      const known = cache.get(text);
      if (known !== undefined) return known;
      const value = counter.count(text);
      if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
      cache.set(text, value);
      return value;
    },
  };
}
