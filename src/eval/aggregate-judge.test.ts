import { describe, expect, it } from 'vitest';
import {
  aggregateCalibration,
  aggregateScorecards,
  auditCommits,
  auditPlans,
  culpritKind,
  type PairOutcome,
  type ScorecardOutcome,
} from './aggregate-judge.js';
import { wilson } from './wilson.js';

function card(
  scores: [number, number, number, number],
  extra: Partial<ScorecardOutcome> = {},
): ScorecardOutcome {
  const [task_progress, information_sufficiency, action_consistency, correctness] = scores;
  return {
    scores: { task_progress, information_sufficiency, action_consistency, correctness },
    pass: scores.every((score) => score >= 4),
    category: 'none',
    culprit: 'none',
    culpritIds: [],
    ...extra,
  };
}

describe('aggregateScorecards', () => {
  it('averages each dimension and counts the failure taxonomy and culprits over failing scorecards only', () => {
    const result = aggregateScorecards([
      card([5, 5, 5, 5]),
      // A pass with a stray category and culprit: not a failure, not counted.
      card([4, 4, 5, 4], { category: 'other', culprit: 'other' }),
      card([2, 1, 2, 3], {
        category: 'missing-file-content',
        culprit: 'objects',
        culpritIds: ['function:read_file:12', 'function:read_file:3'],
      }),
      card([3, 2, 3, 4], {
        category: 'missing-identifier',
        culprit: 'objects',
        culpritIds: ['conversation:user:2'],
      }),
      card([3, 3, 3, 3], { category: 'missing-file-content', culprit: 'unknown' }),
      card([1, 1, 1, 1], { category: 'lost-plan-or-constraint', culprit: 'other' }),
      card([3, 4, 4, 4], { category: 'none', culprit: 'none' }),
    ]);
    expect(result.judged).toBe(7);
    expect(result.means).toEqual({
      task_progress: (5 + 4 + 2 + 3 + 3 + 1 + 3) / 7,
      information_sufficiency: (5 + 4 + 1 + 2 + 3 + 1 + 4) / 7,
      action_consistency: (5 + 5 + 2 + 3 + 3 + 1 + 4) / 7,
      correctness: (5 + 4 + 3 + 4 + 3 + 1 + 4) / 7,
    });
    expect(result.failureCategories).toEqual({
      none: 1,
      'missing-identifier': 1,
      'missing-file-content': 2,
      'lost-plan-or-constraint': 1,
      other: 0,
    });
    expect(result.culprits).toEqual({ objects: 2, other: 1, none: 1, unknown: 1 });
    expect(result.culpritKinds).toEqual({ 'function:read_file': 2, 'conversation:user': 1 });
    expect(Object.keys(result.culpritKinds)).toEqual(['function:read_file', 'conversation:user']);
  });

  it('gives zero means and counts with no scorecards', () => {
    const result = aggregateScorecards([]);
    expect(result.judged).toBe(0);
    expect(Object.values(result.means)).toEqual([0, 0, 0, 0]);
    expect(Object.values(result.failureCategories).every((count) => count === 0)).toBe(true);
  });

  it('reads the kind of a blamed id', () => {
    expect(culpritKind('function:read_file:12')).toBe('function:read_file');
    expect(culpritKind('conversation:user:3@57')).toBe('conversation:user');
    expect(culpritKind('system:1')).toBe('system');
  });
});

describe('aggregateCalibration', () => {
  const pair = (first: 'A' | 'B' | 'tie', second: 'A' | 'B' | 'tie'): PairOutcome => {
    const back = (slot: 'A' | 'B' | 'tie', order: 0 | 1) =>
      slot === 'tie' ? 'tie' : (slot === 'A') === (order === 0) ? 'full' : 'governed';
    return { slots: [first, second], choices: [back(first, 0), back(second, 1)] };
  };

  it('counts flips with the order, slot A picks, consistent verdicts and agreement with the scorecard', () => {
    const result = aggregateCalibration([
      // Consistent: full preferred twice; the scorecard failed → agree.
      { pair: pair('A', 'B'), pass: false },
      // Consistent: governed preferred; scorecard passed → agree.
      { pair: pair('B', 'A'), pass: true },
      // Consistent tie; scorecard failed → disagree (a tie says the view's step is not worse).
      { pair: pair('tie', 'tie'), pass: false },
      // Slot A both times: a flip (full, then governed).
      { pair: pair('A', 'A'), pass: true },
      // Tie then B (= full): a flip.
      { pair: pair('tie', 'B') },
      // Consistent full preferred, without a scorecard: not in agreement's total.
      { pair: pair('A', 'B') },
      { pair: { failed: true }, pass: true },
    ]);
    expect(result.pairs).toBe(7);
    expect(result.failures).toBe(1);
    expect(result.flips).toEqual(wilson(2, 6));
    // Named slots: A,B, B,A, A,A, B, A,B = 9 picks, 5 of them A.
    expect(result.slotA).toEqual(wilson(5, 9));
    expect(result.consistent).toEqual({ full: 2, governed: 1, tie: 1 });
    expect(result.agreement).toEqual(wilson(2, 3));
  });

  it('reports no trials when every pair failed', () => {
    const result = aggregateCalibration([{ pair: { failed: true } }]);
    expect(result).toMatchObject({ pairs: 1, failures: 1, flips: wilson(0, 0), agreement: wilson(0, 0) });
  });
});

describe('latest-turn audits', () => {
  it('sums plans and commits', () => {
    expect(
      auditPlans([
        { operations: 3, refused: 1, applied: 0 },
        { operations: 2, refused: 0, applied: 1 },
      ]),
    ).toEqual({ plans: 2, operations: 5, refused: 1, applied: 1 });
    expect(
      auditCommits([
        { commits: 1, operations: 4, applied: 0, windowRescue: 0 },
        { commits: 0, operations: 0, applied: 0, windowRescue: 0 },
        { commits: 2, operations: 3, applied: 0, windowRescue: 2 },
      ]),
    ).toEqual({ plans: 3, operations: 7, applied: 0, windowRescue: 2 });
  });
});
