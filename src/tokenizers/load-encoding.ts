/**
 * The BPE rank tables behind the real token counters. Each is megabytes of JavaScript (o200k
 * has 200k ranks) that take longer to load than the rest of the package together, so nothing
 * loads one at import: a table loads on the first count that needs it, or ahead of time through
 * `loadEncoding`. Either way, once per process.
 */
import { createRequire } from 'node:module';

export type EncodingName = 'o200k_base' | 'cl100k_base';

/** Counts tokens of a text; the options carry which special tokens to reject (none, for us). */
export type CountTokens = (text: string, options: { disallowedSpecial: Set<string> }) => number;

export interface EncodingModule {
  countTokens: CountTokens;
  clearMergeCache(): void;
  setMergeCacheSize(size: number): void;
}

/**
 * Pieces the encoder's merge cache may hold. Once full, the cache evicts its oldest piece by
 * scanning past the holes its deletions leave in a `Map`, and every count of new text becomes
 * several times slower: a long-running process (the proxy, an evaluation) reaches that state
 * soon. So the cache is emptied before it can fill: every piece it keeps takes at least one
 * character of the text counted, and it is emptied after this many characters (only one text
 * longer than that can fill it alone).
 */
export const MERGE_CACHE_ENTRIES = 200_000;

/** The module's count, its merge cache emptied before it can fill (see `MERGE_CACHE_ENTRIES`). */
export function boundedCount(module: EncodingModule): CountTokens {
  module.setMergeCacheSize(MERGE_CACHE_ENTRIES);
  let counted = 0;
  return (text, options) => {
    counted += text.length;
    if (counted > MERGE_CACHE_ENTRIES) {
      module.clearMergeCache();
      counted = text.length;
    }
    return module.countTokens(text, options);
  };
}

const require = createRequire(import.meta.url);

/**
 * Each encoding's two ways in, spelled out so bundlers and readers see which files load: `count`
 * is synchronous, so a first count loads the CommonJS build; `loadEncoding` imports the ESM one.
 */
const LOADERS: Readonly<Record<EncodingName, { now(): EncodingModule; later(): Promise<EncodingModule> }>> = {
  o200k_base: {
    now: () => require('gpt-tokenizer/encoding/o200k_base') as EncodingModule,
    later: () => import('gpt-tokenizer/encoding/o200k_base'),
  },
  cl100k_base: {
    now: () => require('gpt-tokenizer/encoding/cl100k_base') as EncodingModule,
    later: () => import('gpt-tokenizer/encoding/cl100k_base'),
  },
};

const loaded = new Map<EncodingName, CountTokens>();

/** The table of an encoding, loaded now if it is not yet. */
export function loadEncodingSync(name: EncodingName): CountTokens {
  const known = loaded.get(name);
  if (known) return known;
  const count = boundedCount(LOADERS[name].now());
  loaded.set(name, count);
  return count;
}

/** Load an encoding's table ahead of its first count, without blocking on file reads. */
export async function loadEncoding(name: EncodingName): Promise<CountTokens> {
  const known = loaded.get(name);
  if (known) return known;
  const module = await LOADERS[name].later();
  // A synchronous load may have finished while this one read its files: keep one table.
  const count = loaded.get(name) ?? boundedCount(module);
  loaded.set(name, count);
  return count;
}

/** Whether an encoding's table is in memory (for tests and the benchmark). */
export function isEncodingLoaded(name: EncodingName): boolean {
  return loaded.has(name);
}
