import { describe, expect, it } from 'vitest';
import { fitLogistic, predictLogistic, rocAuc, sigmoid } from './logistic.js';

/** A deterministic pseudo-random stream (xorshift), so the data is the same on every run. */
function random(seed: number) {
  let state = seed;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

/** Rows drawn from a known model: y ~ Bernoulli(sigmoid(2·x0 − 1.5·x1 + 0·x2 + 0.5)). */
function drawn(count: number) {
  const next = random(42);
  const rows: number[][] = [];
  const labels: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const row = [next() * 4 - 2, next() * 4 - 2, next() * 10];
    rows.push(row);
    labels.push(next() < sigmoid(2 * row[0]! - 1.5 * row[1]! + 0.5) ? 1 : 0);
  }
  return { rows, labels };
}

describe('fitLogistic', () => {
  it('recovers the weights of the model that drew the data', () => {
    const { rows, labels } = drawn(4000);
    const fit = fitLogistic(rows, labels);
    // Weights are of standardized features: back on the raw scale they are weight / scale.
    const raw = fit.weights.map((weight, column) => weight / fit.scale[column]!);
    expect(raw[0]).toBeCloseTo(2, 0);
    expect(raw[1]).toBeCloseTo(-1.5, 0);
    expect(Math.abs(raw[2]!)).toBeLessThan(0.1);
    expect(predictLogistic(fit, [2, -2, 5])).toBeGreaterThan(0.95);
    expect(predictLogistic(fit, [-2, 2, 5])).toBeLessThan(0.05);
  });

  it('is deterministic, and a weight counts as that many copies of its row', () => {
    const { rows, labels } = drawn(600);
    expect(fitLogistic(rows, labels)).toEqual(fitLogistic(rows, labels));
    const doubled = fitLogistic([...rows, ...rows.slice(0, 100)], [...labels, ...labels.slice(0, 100)]);
    const weighted = fitLogistic(
      rows,
      labels,
      rows.map((_, index) => (index < 100 ? 2 : 1)),
    );
    weighted.weights.forEach((weight, column) => {
      expect(weight).toBeCloseTo(doubled.weights[column]!, 6);
    });
    expect(weighted.bias).toBeCloseTo(doubled.bias, 6);
  });

  it('keeps a constant feature at weight 0 and stops on separable data', () => {
    const rows = [
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
    ];
    const fit = fitLogistic(rows, [0, 0, 1, 1]);
    expect(fit.weights[1]).toBe(0);
    expect(fit.weights.every(Number.isFinite)).toBe(true);
    expect(predictLogistic(fit, [3, 1])).toBeGreaterThan(predictLogistic(fit, [0, 1]));
  });

  it('refuses rows without labels', () => {
    expect(() => fitLogistic([], [])).toThrow(/at least one/);
    expect(() => fitLogistic([[1]], [1, 0])).toThrow(/as many labels/);
  });
});

describe('rocAuc', () => {
  it('is 1 for a perfect ranking, 0 for a reversed one and 0.5 for ties', () => {
    expect(rocAuc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1])).toBe(1);
    expect(rocAuc([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1])).toBe(0);
    expect(rocAuc([0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1])).toBe(0.5);
    // One of the four positive-negative pairs is misordered.
    expect(rocAuc([0.1, 0.6, 0.5, 0.9], [0, 0, 1, 1])).toBe(0.75);
    expect(rocAuc([0.1, 0.2], [1, 1])).toBeNaN();
  });
});
