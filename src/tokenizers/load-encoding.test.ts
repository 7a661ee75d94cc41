import { describe, expect, it } from 'vitest';
import { isEncodingLoaded, loadEncoding, loadEncodingSync } from './load-encoding.js';

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
