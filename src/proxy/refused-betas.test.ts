import { describe, expect, it } from 'vitest';
import { createRefusedBetas, unlessRefused } from './refused-betas.js';

const opus = (beta: string) => ({ model: 'claude-opus-5-5', beta });

describe('createRefusedBetas', () => {
  it('keeps refused betas per namespace and model, each once, until one is taken back', () => {
    const refused = createRefusedBetas();
    refused.note('key-a', opus('beta-1'));
    refused.note('key-a', opus('beta-1'));
    refused.note('key-a', opus('beta-2'));
    refused.note('key-a', { model: 'claude-fable-5-1', beta: 'beta-1' });
    expect(refused.of('key-a')).toEqual([
      opus('beta-1'),
      opus('beta-2'),
      { model: 'claude-fable-5-1', beta: 'beta-1' },
    ]);
    expect(refused.of('key-b')).toEqual([]);
    refused.forget('key-a', opus('beta-1'));
    expect(refused.of('key-a')).toEqual([opus('beta-2'), { model: 'claude-fable-5-1', beta: 'beta-1' }]);
    refused.forget('key-b', opus('beta-1'));
    expect(refused.of('key-b')).toEqual([]);
  });

  it('keeps the latest namespaces up to its limit', () => {
    const refused = createRefusedBetas(2);
    refused.note('key-a', opus('beta'));
    refused.note('key-b', opus('beta'));
    refused.note('key-a', opus('other'));
    refused.note('key-c', opus('beta'));
    expect(['key-a', 'key-b', 'key-c'].map((scope) => refused.of(scope).length)).toEqual([2, 0, 1]);
  });
});

describe('unlessRefused', () => {
  it("drops a change whose beta was refused for the body's model, and only then", () => {
    const change = { body: {}, beta: 'beta-1' };
    const refused = [opus('beta-1')];
    expect(unlessRefused(change, refused, { model: 'claude-opus-5-5' })).toBeUndefined();
    expect(unlessRefused(change, refused, { model: 'claude-fable-5-1' })).toBe(change);
    expect(unlessRefused({ body: {}, beta: 'beta-2' }, refused, { model: 'claude-opus-5-5' })).toBeDefined();
    expect(unlessRefused(undefined, refused, { model: 'claude-opus-5-5' })).toBeUndefined();
  });
});
