import { describe, expect, it } from 'vitest';
import { createRefusedBetas } from './refused-betas.js';

describe('createRefusedBetas', () => {
  it('keeps refused betas per namespace, each once, until one is taken back', () => {
    const refused = createRefusedBetas();
    refused.note('key-a', 'beta-1');
    refused.note('key-a', 'beta-1');
    refused.note('key-a', 'beta-2');
    expect(refused.of('key-a')).toEqual(['beta-1', 'beta-2']);
    expect(refused.of('key-b')).toEqual([]);
    refused.forget('key-a', 'beta-1');
    expect(refused.of('key-a')).toEqual(['beta-2']);
    refused.forget('key-b', 'beta-1');
    expect(refused.of('key-b')).toEqual([]);
  });

  it('keeps the latest namespaces up to its limit', () => {
    const refused = createRefusedBetas(2);
    refused.note('key-a', 'beta');
    refused.note('key-b', 'beta');
    refused.note('key-a', 'other');
    refused.note('key-c', 'beta');
    expect(['key-a', 'key-b', 'key-c'].map((scope) => refused.of(scope).length)).toEqual([2, 0, 1]);
  });
});
