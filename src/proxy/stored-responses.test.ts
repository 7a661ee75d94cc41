import { describe, expect, it } from 'vitest';
import { createStoredResponses } from './stored-responses.js';

describe('stored responses of merged answers', () => {
  it('gives the stored id for the shown one, apart per scope', () => {
    const stored = createStoredResponses();
    stored.note('key-a', 'resp_1', 'resp_2');
    expect(stored.storedFor('key-a', 'resp_1')).toBe('resp_2');
    expect(stored.storedFor('key-b', 'resp_1')).toBeUndefined();
    expect(stored.storedFor('key-a', 'resp_2')).toBeUndefined();
  });

  it('keeps nothing for an answer stored as shown, and only the latest answers', () => {
    const stored = createStoredResponses(2);
    stored.note('k', 'resp_same', 'resp_same');
    stored.note('k', 'resp_1', 'resp_1b');
    stored.note('k', 'resp_2', 'resp_2b');
    stored.note('k', 'resp_1', 'resp_1c');
    stored.note('k', 'resp_3', 'resp_3b');
    expect(['resp_same', 'resp_1', 'resp_2', 'resp_3'].map((id) => stored.storedFor('k', id))).toEqual([
      undefined,
      'resp_1c',
      undefined,
      'resp_3b',
    ]);
  });
});
