import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SelfGcError } from '../core/errors.js';
import { memoizeTokenCounter } from '../core/tokens.js';
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

  it('counts as the encoding does, the same in every counter', () => {
    // o200k_base splits "hello world" into "hello" and " world".
    expect(createTokenCounter('o200k_base').count('hello world')).toBe(2);
    const sample = 'src/core/ledger.ts: 120 lines, function indexTranscript(messages, options)';
    expect(createTokenCounter('o200k_base').count(sample)).toBe(
      createTokenCounter('o200k_base').count(sample),
    );
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

/** Texts built to have many tokens for their size: each unit a character of one kind. */
function textOf(units: fc.Arbitrary<string>, maxLength = 300): fc.Arbitrary<string> {
  return fc.array(units, { maxLength }).map((parts) => parts.join(''));
}

const codePoints = (min: number, max: number) =>
  fc.integer({ min, max }).map((point) => String.fromCodePoint(point));

const ADVERSARIAL: Record<string, fc.Arbitrary<string>> = {
  hex: textOf(fc.constantFrom(...'0123456789abcdefABCDEF')),
  cjk: textOf(fc.oneof(codePoints(0x4e00, 0x9fff), codePoints(0x3040, 0x30ff), codePoints(0xac00, 0xd7a3))),
  emoji: textOf(
    fc.oneof(
      codePoints(0x1f300, 0x1faff),
      fc.constantFrom('👩‍👩‍👧‍👦', '🏳️‍🌈', '👍🏽', '🇯🇵', '\u200d', '\ufe0f'),
      codePoints(0x10000, 0x10ffff),
    ),
  ),
  whitespace: textOf(
    fc.constantFrom(' ', '  ', '\n', '\r\n', '\t', '\u00a0', '\u3000', '\u2028', '\v', '\f'),
  ),
  // Lone surrogates are encoded as U+FFFD.
  surrogates: textOf(
    fc.oneof(
      codePoints(0xd800, 0xdfff).map((text) => text),
      fc.constantFrom('a', '\ud83d'),
    ),
  ),
  special: textOf(
    fc.constantFrom('<|endoftext|>', '<|im_start|>', '<|fim_prefix|>', '<|endofprompt|>', '<', '|', '>'),
  ),
  bytes: textOf(codePoints(0x80, 0x7ff)),
  punctuation: textOf(fc.constantFrom(...'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')),
  digits: textOf(fc.constantFrom(...'0123456789'), 2_000),
  mixed: textOf(
    fc.oneof(fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ unit: 'grapheme', maxLength: 8 })),
  ),
};

describe('TokenCounter.bound', () => {
  for (const name of ['o200k_base', 'cl100k_base', 'anthropic'] as const) {
    it(`is never below the count (${name}) on text made to tokenize badly`, () => {
      const counter = createTokenCounter(name);
      for (const [kind, texts] of Object.entries(ADVERSARIAL)) {
        fc.assert(
          fc.property(texts, (text) => {
            const bound = counter.bound!(text);
            const count = counter.count(text);
            if (bound < count)
              throw new Error(`${kind}: bound ${bound} < count ${count} for ${JSON.stringify(text)}`);
          }),
          { numRuns: 150 },
        );
      }
    });
  }

  it('is the count of a text the memo has counted, and the inner bound before', () => {
    const inner = createTokenCounter('o200k_base');
    const counter = memoizeTokenCounter(inner);
    const text = 'src/core/ledger.ts: function indexTranscript(messages, options)';
    expect(counter.bound!(text)).toBe(inner.bound!(text));
    expect(counter.bound!(text)).toBeGreaterThan(inner.count(text));
    counter.count(text);
    expect(counter.bound!(text)).toBe(inner.count(text));
  });
});

describe('tokenCounterForProvider', () => {
  it('picks o200k for OpenAI and the scaled estimate for Anthropic', () => {
    expect(tokenCounterForProvider('openai').name).toBe('o200k_base');
    expect(tokenCounterForProvider('anthropic').name).toBe(createTokenCounter('anthropic').name);
  });
});
