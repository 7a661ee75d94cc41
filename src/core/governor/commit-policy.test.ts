import { describe, expect, it } from 'vitest';
import { type CommitCase, commitsNow, PAPER_COMMIT_SHARE } from './commit-policy.js';

const base: CommitCase = {
  policy: 'cost',
  tokensBefore: 10_000,
  freed: 1_000,
  forced: false,
  held: false,
  minBatch: 500,
  pays: true,
};

describe('commitsNow', () => {
  it('never commits a plan that frees nothing, and always one the window forces', () => {
    for (const policy of ['cost', 'paper'] as const) {
      expect(commitsNow({ ...base, policy, freed: 0, forced: true })).toBe(false);
      expect(commitsNow({ ...base, policy, pays: false, forced: true })).toBe(true);
    }
  });

  it('cost: commits when the cost model says it pays and the batch is big enough', () => {
    expect(commitsNow(base)).toBe(true);
    expect(commitsNow({ ...base, pays: false })).toBe(false);
    expect(commitsNow({ ...base, freed: 499 })).toBe(false);
    // A held plan gets no favour: it must pay at its boundary too.
    expect(commitsNow({ ...base, pays: false, held: true })).toBe(false);
  });

  it('paper: commits at once from 0.3 of the view, otherwise at the boundary it was held for', () => {
    const paper = { ...base, policy: 'paper' as const, pays: false, minBatch: 5_000 };
    expect(PAPER_COMMIT_SHARE).toBe(0.3);
    expect(commitsNow({ ...paper, freed: 3_000 })).toBe(true);
    expect(commitsNow({ ...paper, freed: 2_999 })).toBe(false);
    expect(commitsNow({ ...paper, freed: 1, held: true })).toBe(true);
  });
});
