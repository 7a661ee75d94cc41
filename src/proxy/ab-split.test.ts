import { describe, expect, it } from 'vitest';
import { chooseArm, splitPoint } from './ab-split.js';

const keys = Array.from({ length: 2000 }, (_, index) => `key-hash-${index}`);

describe('chooseArm', () => {
  it('is a pure function of the key and the salt, the same in every process', () => {
    // Reference points from Python's hashlib: the first 4 bytes of sha256(salt + NUL + key) / 2^32.
    expect(splitPoint('key-hash-0')).toBeCloseTo(0.9319530157372355, 12);
    expect(splitPoint('key-hash-1')).toBeCloseTo(0.33168613095767796, 12);
    expect(splitPoint('key-hash-2')).toBeCloseTo(0.05697637517005205, 12);
    expect(splitPoint('key-hash-0', 'v2')).toBeCloseTo(0.02514145546592772, 12);
    expect(chooseArm('key-hash-0', { share: 0.5 })).toBe('control');
    expect(chooseArm('key-hash-1', { share: 0.5 })).toBe('governed');
    expect(chooseArm('key-hash-0', { share: 0.5, salt: 'v2' })).toBe('governed');
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
