import { describe, expect, it } from 'vitest';
import { chooseArm, splitPoint } from './ab-split.js';

const keys = Array.from({ length: 2000 }, (_, index) => `key-hash-${index}`);

describe('chooseArm', () => {
  it('is deterministic: the same key always lands in the same arm', () => {
    for (const key of keys.slice(0, 50)) {
      expect(chooseArm(key, { share: 0.5 })).toBe(chooseArm(key, { share: 0.5 }));
    }
  });

  it('governs everyone without a split, no one at share 0, everyone at share 1', () => {
    expect(keys.every((key) => chooseArm(key, undefined) === 'governed')).toBe(true);
    expect(keys.every((key) => chooseArm(key, { share: 0 }) === 'control')).toBe(true);
    expect(keys.every((key) => chooseArm(key, { share: 1 }) === 'governed')).toBe(true);
  });

  it('puts about `share` of accounts in the governed arm', () => {
    const governed = keys.filter((key) => chooseArm(key, { share: 0.3 }) === 'governed').length;
    expect(governed / keys.length).toBeGreaterThan(0.26);
    expect(governed / keys.length).toBeLessThan(0.34);
  });

  it('keeps governed accounts governed when the share grows, and reshuffles with a new salt', () => {
    for (const key of keys) {
      if (chooseArm(key, { share: 0.2 }) === 'governed')
        expect(chooseArm(key, { share: 0.6 })).toBe('governed');
    }
    const moved = keys.filter(
      (key) => chooseArm(key, { share: 0.5 }) !== chooseArm(key, { share: 0.5, salt: 'b' }),
    );
    expect(moved.length).toBeGreaterThan(keys.length / 4);
    expect(splitPoint('k')).toBeGreaterThanOrEqual(0);
    expect(splitPoint('k')).toBeLessThan(1);
  });
});
