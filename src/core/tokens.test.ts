import { describe, expect, it } from 'vitest';
import { approximateTokenCounter, memoizeTokenCounter, type TokenCounter } from './tokens.js';

describe('approximateTokenCounter', () => {
  it('counts characters divided by four, rounded up', () => {
    expect(approximateTokenCounter.count('')).toBe(0);
    expect(approximateTokenCounter.count('abc')).toBe(1);
    expect(approximateTokenCounter.count('abcd')).toBe(1);
    expect(approximateTokenCounter.count('abcde')).toBe(2);
  });
});

describe('memoizeTokenCounter', () => {
  it('returns the same counts and counts a long text only once', () => {
    const seen: string[] = [];
    const base: TokenCounter = {
      name: 'spy',
      count: (value) => {
        seen.push(value);
        return value.length;
      },
    };
    const memoized = memoizeTokenCounter(base, 2);
    const long = 'x'.repeat(100);
    expect(memoized.name).toBe('spy');
    expect(memoized.count(long)).toBe(100);
    expect(memoized.count(long)).toBe(100);
    expect(seen.filter((value) => value === long)).toHaveLength(1);
    // Short texts go straight to the counter.
    memoized.count('short');
    memoized.count('short');
    expect(seen.filter((value) => value === 'short')).toHaveLength(2);
    // Past the limit, the oldest entry is evicted.
    memoized.count('y'.repeat(100));
    memoized.count('z'.repeat(100));
    memoized.count(long);
    expect(seen.filter((value) => value === long)).toHaveLength(2);
  });
});
