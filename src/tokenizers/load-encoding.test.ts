import { describe, expect, it } from 'vitest';
import {
  boundedCount,
  type EncodingModule,
  isEncodingLoaded,
  loadEncoding,
  loadEncodingSync,
  MERGE_CACHE_ENTRIES,
} from './load-encoding.js';

const PLAIN = { disallowedSpecial: new Set<string>() };

describe('loadEncoding', () => {
  it('keeps one table per encoding, whichever way loads it first', async () => {
    expect(isEncodingLoaded('o200k_base')).toBe(false);
    const later = await loadEncoding('o200k_base');
    expect(isEncodingLoaded('o200k_base')).toBe(true);
    expect(loadEncodingSync('o200k_base')).toBe(later);
    expect(later('hello world', PLAIN)).toBe(2);

    expect(isEncodingLoaded('cl100k_base')).toBe(false);
    const now = loadEncodingSync('cl100k_base');
    expect(await loadEncoding('cl100k_base')).toBe(now);
    expect(now('日本語', PLAIN)).toBe(4);
  });

  it('lets two concurrent loads settle on the same table', async () => {
    const [first, second] = await Promise.all([loadEncoding('o200k_base'), loadEncoding('o200k_base')]);
    expect(first).toBe(second);
  });
});

describe('boundedCount', () => {
  it('empties the merge cache before the characters counted could fill it', () => {
    const events: string[] = [];
    const module: EncodingModule = {
      countTokens: (text) => text.length,
      clearMergeCache: () => events.push('clear'),
      setMergeCacheSize: (size) => events.push(`size ${size}`),
    };
    const count = boundedCount(module);
    expect(events).toEqual([`size ${MERGE_CACHE_ENTRIES}`]);
    const third = 'x'.repeat(MERGE_CACHE_ENTRIES / 3);
    for (let index = 0; index < 3; index += 1) expect(count(third, PLAIN)).toBe(third.length);
    expect(events).toEqual([`size ${MERGE_CACHE_ENTRIES}`]);
    // The fourth would take the characters since the last emptying past the cache's size.
    count(third, PLAIN);
    expect(events).toEqual([`size ${MERGE_CACHE_ENTRIES}`, 'clear']);
    count(third, PLAIN);
    count(third, PLAIN);
    expect(events).toHaveLength(2);
  });

  it('counts the same across an emptying as the encoder does', async () => {
    const encoder = await import('gpt-tokenizer/encoding/o200k_base');
    const count = loadEncodingSync('o200k_base');
    const texts = Array.from({ length: 40 }, (_, index) =>
      Array.from({ length: 1_500 }, (_, word) => `name_${index}_${word} = value${word * index};`).join('\n'),
    );
    expect(texts.reduce((sum, text) => sum + text.length, 0)).toBeGreaterThan(MERGE_CACHE_ENTRIES);
    for (const text of texts) expect(count(text, PLAIN)).toBe(encoder.countTokens(text));
  });
});
