import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sameBytes, sharedPrefix, sharedSuffix } from './byte-compare.js';

function naivePrefix(left: Uint8Array, right: Uint8Array): number {
  let shared = 0;
  while (shared < Math.min(left.length, right.length) && left[shared] === right[shared]) shared += 1;
  return shared;
}

/** Bytes with long runs alike, so blocks of every size agree and differ. */
const body = fc
  .array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 9000 })), { maxLength: 6 })
  .map((runs) => Uint8Array.from(runs.flatMap(([value, length]) => Array<number>(length).fill(value))));

describe('byte comparisons', () => {
  it('find where two buffers part, from the start and from the end, as a byte-by-byte walk does', () => {
    fc.assert(
      fc.property(body, body, body, (common, left, right) => {
        const a = Uint8Array.from([...common, ...left]);
        const b = Uint8Array.from([...common, ...right]);
        expect(sharedPrefix(a, b)).toBe(naivePrefix(a, b));
        const limit = Math.min(a.length, b.length);
        const reversed = (bytes: Uint8Array) => Uint8Array.from(bytes).reverse();
        const suffix = Math.min(naivePrefix(reversed(a), reversed(b)), limit);
        expect(sharedSuffix(a, b, limit)).toBe(suffix);
        expect(sharedSuffix(a, b, 0)).toBe(0);
        expect(sameBytes(a, b)).toBe(a.length === b.length && naivePrefix(a, b) === a.length);
      }),
      { numRuns: 200 },
    );
  });

  it('compares views into larger buffers by their own bytes', () => {
    const big = Uint8Array.from([9, 1, 2, 3, 9, 1, 2, 4]);
    expect(sameBytes(big.subarray(1, 4), big.subarray(5, 8))).toBe(false);
    expect(sharedPrefix(big.subarray(1, 4), big.subarray(5, 8))).toBe(2);
    expect(sharedSuffix(big.subarray(0, 3), big.subarray(4, 7), 3)).toBe(3);
  });
});
