/**
 * Token counting is injected into the core: the core never loads a tokenizer itself.
 * `src/tokenizers/` provides real BPE counters (o200k, cl100k) behind this interface.
 */
export interface TokenCounter {
  /** Name of the encoding, e.g. `o200k_base`. */
  readonly name: string;
  /** Tokens of a text under this encoding. Must be deterministic and never throw. */
  count(text: string): number;
  /**
   * A number never below `count(text)`, found without encoding the text: what a counter whose
   * `count` is costly offers, so that a caller who only needs to know the window is not near can
   * decide without counting (the governor then counts after the request is sent).
   */
  bound?(text: string): number;
}

/** Per-message framing tokens (role markers, separators) that chat formats add. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/** Characters a token takes on average (English and code): estimates of text not yet rendered. */
export const CHARS_PER_TOKEN = 4;

/** The tokens `chars` characters take, estimated at `CHARS_PER_TOKEN`. */
export function tokensForChars(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** A crude counter (characters / 4) for tests and for callers who want no tokenizer. */
export const approximateTokenCounter: TokenCounter = {
  name: 'chars/4',
  count: (text) => tokensForChars(text.length),
};

/**
 * Remember counts of texts: replay indexes the same messages at many cut points, and the
 * governor re-counts replacement texts. Short texts are cheaper to count than to look up.
 */
export function memoizeTokenCounter(counter: TokenCounter, maxEntries = 200_000): TokenCounter {
  const cache = new Map<string, number>();
  return {
    name: counter.name,
    // A text counted before is bound by its count.
    ...(counter.bound === undefined
      ? {}
      : {
          bound: (text: string) => (text.length < 16 ? undefined : cache.get(text)) ?? counter.bound!(text),
        }),
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
