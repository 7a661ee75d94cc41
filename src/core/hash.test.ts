import { describe, expect, it } from 'vitest';
import { hashText } from './hash.js';

describe('hashText', () => {
  it('is FNV-1a 64 as 16 hex digits', () => {
    // Reference values of 64-bit FNV-1a.
    expect(hashText('')).toBe('cbf29ce484222325');
    expect(hashText('a')).toBe('af63dc4c8601ec8c');
    expect(hashText('foobar')).toBe('85944171f73967e8');
  });

  it('tells different texts apart', () => {
    expect(hashText('ab')).not.toBe(hashText('ba'));
    expect(hashText('日本')).toMatch(/^[0-9a-f]{16}$/);
  });
});
