import { describe, expect, it } from 'vitest';
import { createBpeVocabulary } from './word-vocabulary.js';

describe('createBpeVocabulary', () => {
  const vocabulary = createBpeVocabulary();

  it('takes words of running text as common', () => {
    for (const word of ['probably', 'would', 'existing', 'cache', 'pytest', 'reservation'])
      expect(vocabulary.isCommonWord(word), word).toBe(true);
  });

  it('takes identifiers, compounds and long numbers as rare', () => {
    for (const token of ['evict_entry', 'book_reservation', 'gitignored', 'keyerror', '4096'])
      expect(vocabulary.isCommonWord(token), token).toBe(false);
  });

  it('gives the same answer when asked again', () => {
    expect(vocabulary.isCommonWord('gitignored')).toBe(false);
    expect(vocabulary.isCommonWord('probably')).toBe(true);
  });
});
