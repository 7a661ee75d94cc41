import { describe, expect, it } from 'vitest';
import { SelfGcError } from '../core/errors.js';
import {
  ANTHROPIC_SCALE,
  createTokenCounter,
  type TokenizerName,
  tokenCounterForProvider,
} from './create-token-counter.js';

describe('createTokenCounter', () => {
  it('counts o200k_base tokens of known strings', () => {
    const counter = createTokenCounter('o200k_base');
    expect(counter.name).toBe('o200k_base');
    expect(counter.count('hello world')).toBe(2);
    expect(counter.count('Hello, world!')).toBe(4);
    expect(counter.count('The quick brown fox jumps over the lazy dog.')).toBe(10);
    // o200k has whole-word tokens for common CJK text where cl100k splits bytes.
    expect(counter.count('日本語')).toBe(2);
  });

  it('uses o200k_base by default', () => {
    expect(createTokenCounter().name).toBe('o200k_base');
    expect(createTokenCounter().count('hello world')).toBe(2);
  });

  it('counts cl100k_base tokens of known strings', () => {
    const counter = createTokenCounter('cl100k_base');
    expect(counter.count('hello world')).toBe(2);
    expect(counter.count('日本語')).toBe(4);
  });

  it('counts the empty string as zero tokens', () => {
    for (const name of ['o200k_base', 'cl100k_base', 'anthropic'] as const) {
      expect(createTokenCounter(name).count('')).toBe(0);
    }
  });

  it('counts special-token text as plain text instead of throwing', () => {
    for (const name of ['o200k_base', 'cl100k_base', 'anthropic'] as const) {
      const counter = createTokenCounter(name);
      expect(() => counter.count('<|endoftext|>')).not.toThrow();
      expect(counter.count('<|endoftext|>')).toBeGreaterThan(1);
      expect(counter.count('before <|im_start|>user<|im_end|> after')).toBeGreaterThan(3);
    }
  });

  it('approximates Anthropic as cl100k scaled up, rounded up', () => {
    const anthropic = createTokenCounter('anthropic');
    const cl100k = createTokenCounter('cl100k_base');
    const sample = 'def add(a, b):\n    return a + b\n';
    expect(anthropic.name).toContain('cl100k_base');
    expect(anthropic.count(sample)).toBe(Math.ceil(cl100k.count(sample) * ANTHROPIC_SCALE));
    expect(anthropic.count(sample)).toBeGreaterThan(cl100k.count(sample));
  });

  it('is deterministic', () => {
    const counter = createTokenCounter('o200k_base');
    const sample = 'src/core/ledger.ts: 120 lines, function indexTranscript(messages, options)';
    expect(counter.count(sample)).toBe(counter.count(sample));
  });

  it('rejects an unknown encoding with a bad-input error', () => {
    expect(() => createTokenCounter('p50k_base' as TokenizerName)).toThrow(SelfGcError);
    try {
      createTokenCounter('p50k_base' as TokenizerName);
    } catch (error) {
      expect((error as SelfGcError).code).toBe('bad-input');
      expect((error as Error).message).toContain('p50k_base');
    }
  });
});

describe('tokenCounterForProvider', () => {
  it('picks o200k for OpenAI and the scaled estimate for Anthropic', () => {
    expect(tokenCounterForProvider('openai').name).toBe('o200k_base');
    expect(tokenCounterForProvider('anthropic').name).toBe(createTokenCounter('anthropic').name);
  });
});
