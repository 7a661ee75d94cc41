import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { wilson } from './wilson.js';

describe('wilson', () => {
  // Reference values of the Wilson score interval at z = 1.96.
  it.each([
    [0, 10, 0, 0.2775],
    [5, 10, 0.2366, 0.7634],
    [10, 10, 0.7225, 1],
    [84, 100, 0.7558, 0.899],
    [1, 3, 0.0615, 0.7923],
    [17, 20, 0.6396, 0.9476],
  ])('%i/%i gives [%f, %f]', (hits, total, low, high) => {
    const rate = wilson(hits, total);
    expect(rate.hits).toBe(hits);
    expect(rate.total).toBe(total);
    expect(rate.value).toBeCloseTo(hits / total, 10);
    expect(rate.low).toBeCloseTo(low, 3);
    expect(rate.high).toBeCloseTo(high, 3);
  });

  it('is all zeros without trials', () => {
    expect(wilson(0, 0)).toEqual({ hits: 0, total: 0, value: 0, low: 0, high: 0 });
  });

  it('brackets the observed rate inside [0, 1], symmetric under hits ↔ misses', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2000 }), fc.nat(), (total, seed) => {
        const hits = seed % (total + 1);
        const rate = wilson(hits, total);
        expect(rate.low).toBeGreaterThanOrEqual(0);
        expect(rate.high).toBeLessThanOrEqual(1);
        expect(rate.low).toBeLessThanOrEqual(rate.value + 1e-12);
        expect(rate.high).toBeGreaterThanOrEqual(rate.value - 1e-12);
        const mirror = wilson(total - hits, total);
        expect(mirror.low).toBeCloseTo(1 - rate.high, 9);
        expect(mirror.high).toBeCloseTo(1 - rate.low, 9);
      }),
    );
  });

  it('narrows as trials grow at the same rate', () => {
    const width = (hits: number, total: number) => {
      const rate = wilson(hits, total);
      return rate.high - rate.low;
    };
    expect(width(80, 100)).toBeLessThan(width(8, 10));
    expect(width(800, 1000)).toBeLessThan(width(80, 100));
  });
});
