import { describe, expect, it } from 'vitest';
import {
  aggregateCuts,
  aggregateSessions,
  buildSummary,
  type CallOutcome,
  type CutOutcome,
  interpolate,
  matchedComparison,
  PRICING,
} from './aggregate.js';
import type { ScorecardOutcome } from './aggregate-judge.js';
import type { CutModeResult, CutPoint } from './eval-summary.js';
import { EVAL_SUMMARY_VERSION } from './eval-summary.js';
import { wilson } from './wilson.js';

function cut(
  strategy: string,
  keep: number | 'auto',
  viewTokens: number,
  overrides: Partial<CutOutcome> = {},
) {
  return {
    strategy,
    upperBound: false,
    keep,
    prefixTokens: 100,
    viewTokens,
    strict: true,
    recoverable: true,
    lostFromFoldOrMask: false,
    rareTokens: true,
    rareTokenScore: 1,
    ...overrides,
  } satisfies CutOutcome;
}

function point(keep: number | 'auto', pruneRate: number, strict: number): CutPoint {
  const rate = { hits: 0, total: 0, value: strict, low: 0, high: 0 };
  return {
    keep,
    pruneRate,
    strictNoImpact: rate,
    recoverableNoImpact: rate,
    unrecoverableLoss: rate,
    cuts: 1,
  };
}

function result(strategy: string, own: CutPoint, sweep: CutPoint[]): CutModeResult {
  return { strategy, upperBound: false, own, sweep };
}

describe('aggregateCuts', () => {
  const outcomes: CutOutcome[] = [
    cut('selfgc', 'auto', 40),
    cut('selfgc', 'auto', 150, {
      prefixTokens: 200,
      strict: false,
      recoverable: true,
      lostFromFoldOrMask: true,
    }),
    cut('selfgc', 0.3, 30, { strict: false, recoverable: false }),
    cut('selfgc', 0.9, 90),
    cut('selfgc', 0.5, 50),
    cut('oracle', 'auto', 10, { upperBound: true }),
    cut('selfgc', 0.5, 70, { strict: false }),
  ];
  const [selfgc, oracle] = aggregateCuts(outcomes);

  it('groups by strategy in order of first appearance, keeping the upper-bound label', () => {
    expect(selfgc?.strategy).toBe('selfgc');
    expect(selfgc?.upperBound).toBe(false);
    expect(oracle).toMatchObject({ strategy: 'oracle', upperBound: true });
  });

  it('splits the own budget (auto) from the sweep, ordered from the largest keep down', () => {
    expect(selfgc?.own.keep).toBe('auto');
    expect(selfgc?.own.cuts).toBe(2);
    expect(selfgc?.sweep.map((entry) => [entry.keep, entry.cuts])).toEqual([
      [0.9, 1],
      [0.5, 2],
      [0.3, 1],
    ]);
  });

  it('averages the prune rate 1 − |C′|/|C| over cuts and counts no-impact with Wilson intervals', () => {
    // (1 − 40/100 + 1 − 150/200) / 2
    expect(selfgc?.own.pruneRate).toBeCloseTo(0.425, 10);
    expect(selfgc?.own.strictNoImpact).toEqual(wilson(1, 2));
    expect(selfgc?.own.recoverableNoImpact).toEqual(wilson(2, 2));
    expect(selfgc?.own.unrecoverableLoss).toEqual(wilson(1, 2));
    const half = selfgc?.sweep.find((entry) => entry.keep === 0.5);
    expect(half?.pruneRate).toBeCloseTo(0.4, 10);
    expect(half?.strictNoImpact).toEqual(wilson(1, 2));
    const low = selfgc?.sweep.find((entry) => entry.keep === 0.3);
    expect(low?.recoverableNoImpact).toEqual(wilson(0, 1));
  });

  it('reports the rare-token judge beside the anchor judge: its pass rate with Wilson intervals and mean score', () => {
    const [judged] = aggregateCuts([
      cut('selfgc', 'auto', 40, { rareTokens: true, rareTokenScore: 1 }),
      cut('selfgc', 'auto', 40, { strict: false, rareTokens: false, rareTokenScore: 0.25 }),
      cut('selfgc', 'auto', 40, { rareTokens: false, rareTokenScore: 0.25 }),
      cut('selfgc', 0.5, 50, { rareTokens: false, rareTokenScore: 0 }),
    ]);
    expect(judged?.own.rareTokens).toEqual({ noImpact: wilson(1, 3), meanScore: 0.5 });
    // The two judges count apart: strict holds where the rare-token judge failed.
    expect(judged?.own.strictNoImpact).toEqual(wilson(2, 3));
    expect(judged?.sweep[0]?.rareTokens).toEqual({ noImpact: wilson(0, 1), meanScore: 0 });
  });

  it('gives an empty own point when a strategy ran on the sweep only', () => {
    const [only] = aggregateCuts([cut('tool-prune', 0.5, 60)]);
    expect(only?.own).toMatchObject({ keep: 'auto', cuts: 0, pruneRate: 0 });
    expect(only?.own.strictNoImpact).toEqual(wilson(0, 0));
    expect(only?.own.rareTokens).toEqual({ noImpact: wilson(0, 0), meanScore: 0 });
    expect(aggregateCuts([])).toEqual([]);
  });
});

/** A scorecard: every dimension at `score`; a pass at 4 or more. */
const card = (score: number, extra: Partial<ScorecardOutcome> = {}): ScorecardOutcome => ({
  scores: {
    task_progress: score,
    information_sufficiency: score,
    action_consistency: score,
    correctness: score,
  },
  pass: score >= 4,
  category: score >= 4 ? 'none' : 'missing-identifier',
  culprit: score >= 4 ? 'none' : 'other',
  culpritIds: [],
  ...extra,
});

describe('aggregateCuts with an LLM endpoint', () => {
  it('adds the LLM judge at the own budget, its agreement with the strict verdict, and its failures', () => {
    const [baseline, llm] = aggregateCuts([
      cut('tool-prune', 'auto', 50, { llmScorecard: card(5) }),
      cut('tool-prune', 'auto', 50, { strict: false, llmScorecard: card(4) }),
      cut('tool-prune', 'auto', 50, { strict: false, llmScorecard: card(2) }),
      cut('tool-prune', 'auto', 50, { llmJudgeFailed: true }),
      cut('tool-prune', 'auto', 50),
      // The sweep is never judged by the model: a stray verdict there is not counted.
      cut('tool-prune', 0.5, 40, { llmScorecard: card(1) }),
      cut('selfgc-llm', 'auto', 60, { plannerFallback: false }),
      cut('selfgc-llm', 0.5, 50, { plannerFallback: true, plannerFallbackReason: 'endpoint down' }),
      cut('selfgc-llm', 0.3, 30, { plannerFallback: true, plannerFallbackReason: 'answer off format' }),
    ]);
    expect(baseline).toMatchObject({
      llmNoImpact: wilson(2, 3),
      llmAgreement: wilson(2, 3),
      llmJudgeFailures: 1,
    });
    expect(baseline?.llmScorecard?.judged).toBe(3);
    expect(baseline?.llmScorecard?.means.correctness).toBeCloseTo(11 / 3, 10);
    expect(baseline?.llmScorecard?.failureCategories['missing-identifier']).toBe(1);
    expect(baseline?.llmPlannerFallbacks).toBeUndefined();
    expect(llm?.llmPlannerFallbacks).toBe(2);
    expect(llm?.llmPlannerLastFallback).toBe('answer off format');
    expect(baseline?.llmPlannerLastFallback).toBeUndefined();
    expect(llm?.llmNoImpact).toBeUndefined();
  });

  it('adds nothing when no outcome carries LLM fields', () => {
    const [only] = aggregateCuts([cut('selfgc', 'auto', 40)]);
    expect(Object.keys(only!).sort()).toEqual(['own', 'strategy', 'sweep', 'upperBound']);
  });
});

describe('interpolate', () => {
  const curve = result('selfgc', point('auto', 0.4, 0.7), [point(0.9, 0.2, 0.9), point(0.5, 0.6, 0.5)]);

  it('interpolates linearly between the neighbouring points, own budget included', () => {
    expect(interpolate(curve, 0.3)).toBeCloseTo(0.8, 10);
    expect(interpolate(curve, 0.5)).toBeCloseTo(0.6, 10);
    expect(interpolate(curve, 0.4)).toBeCloseTo(0.7, 10);
    expect(interpolate(curve, 0.2)).toBeCloseTo(0.9, 10);
    expect(interpolate(curve, 0.6)).toBeCloseTo(0.5, 10);
  });

  it('is null outside the prune rates the sweep reached', () => {
    expect(interpolate(curve, 0.1)).toBeNull();
    expect(interpolate(curve, 0.65)).toBeNull();
    expect(interpolate(result('none', point('auto', 0, 1), []), 0)).toBeNull();
  });

  // Regression (was a bug): an own point without cuts has prune rate 0
  // and no-impact 0, and still joins the curve, so a sweep-only strategy reads as breaking every
  // continuation at low prune rates. Fix: leave `own` out of the points when `own.cuts === 0`.
  it('ignores an own point that has no cuts', () => {
    const [sweepOnly] = aggregateCuts([cut('tool-prune', 0.9, 80), cut('tool-prune', 0.5, 40)]);
    expect(sweepOnly?.own.cuts).toBe(0);
    expect(interpolate(sweepOnly!, 0.1)).toBeNull();
  });

  it('takes the left value where two points share a prune rate', () => {
    const flat = result('x', point('auto', 0.3, 0.2), [point(0.5, 0.3, 0.8)]);
    expect(interpolate(flat, 0.3)).not.toBeNull();
    expect([0.2, 0.8]).toContain(interpolate(flat, 0.3));
  });
});

describe('matchedComparison', () => {
  it('gives every strategy its interpolated no-impact at each matched rate', () => {
    const results = [
      result('selfgc', point('auto', 0.45, 0.9), [point(0.9, 0.2, 1), point(0.3, 0.7, 0.8)]),
      result('oldest-turn', point('auto', 0.45, 0.6), [point(0.5, 0.5, 0.5)]),
    ];
    const rows = matchedComparison(results, [0.2, 0.45, 0.5, 0.8]);
    expect(rows.map((row) => row.pruneRate)).toEqual([0.2, 0.45, 0.5, 0.8]);
    expect(rows[0]?.strictNoImpact).toEqual({ selfgc: 1, 'oldest-turn': null });
    expect(rows[1]?.strictNoImpact.selfgc).toBeCloseTo(0.9, 10);
    expect(rows[1]?.strictNoImpact['oldest-turn']).toBeCloseTo(0.6, 10);
    expect(rows[2]?.strictNoImpact.selfgc).toBeCloseTo(0.9 - (0.05 / 0.25) * 0.1, 10);
    expect(rows[2]?.strictNoImpact['oldest-turn']).toBeCloseTo(0.5, 10);
    expect(rows[3]?.strictNoImpact).toEqual({ selfgc: null, 'oldest-turn': null });
  });

  it('uses the default rates around the paper bar', () => {
    expect(matchedComparison([]).map((row) => row.pruneRate)).toEqual([0.2, 0.3, 0.4, 0.45, 0.5, 0.6, 0.7]);
  });
});

describe('aggregateSessions', () => {
  const call = (
    strategy: string,
    session: string,
    prefixTokens: number,
    viewTokens: number,
    cachedTokens: number,
    extra: Partial<CallOutcome> = {},
  ): CallOutcome => ({
    session,
    strategy,
    prefixTokens,
    viewTokens,
    cachedTokens,
    committed: false,
    changed: viewTokens !== prefixTokens,
    ...extra,
  });

  const calls: CallOutcome[] = [
    call('none', 's1', 100, 100, 0),
    call('none', 's1', 200, 200, 100),
    call('none', 's1', 300, 300, 200),
    call('selfgc', 's2', 50, 50, 0),
    call('selfgc', 's1', 100, 100, 0),
    call('selfgc', 's1', 200, 120, 0, {
      committed: true,
      strict: true,
      recoverable: true,
      rareTokens: false,
      rareTokenScore: 0.6,
    }),
    call('selfgc', 's1', 300, 220, 120, {
      strict: false,
      recoverable: true,
      rareTokens: true,
      rareTokenScore: 1,
      missingFrom: [
        { role: 'agent', stepsBack: 14, removedBy: 'pruned', inLatestFold: false },
        { role: 'tool', stepsBack: 4, removedBy: 'folded', inLatestFold: true },
        { role: 'tool', stepsBack: 3, removedBy: 'folded', inLatestFold: true },
        { role: 'tool', stepsBack: 12, removedBy: 'masked', inLatestFold: false },
      ],
    }),
    // Changed, but with nothing left to judge: not counted in no-impact.
    call('selfgc', 's2', 80, 60, 50, { committed: true }),
  ];
  const [none, selfgc] = aggregateSessions(calls, 150);

  it('prices cache reads at 0.1 and writes at 1.25 of input, relative to none', () => {
    expect(PRICING).toEqual({ cacheWrite: 1.25, cacheRead: 0.1 });
    // none: 100·1.25 + (100·0.1 + 100·1.25) + (200·0.1 + 100·1.25)
    expect(none?.cost).toBeCloseTo(405, 10);
    expect(none?.costRelative).toBe(1);
    // selfgc: 62.5 + 125 + 150 + (12 + 125) + (5 + 12.5)
    expect(selfgc?.cost).toBeCloseTo(492, 10);
    expect(selfgc?.costRelative).toBeCloseTo(492 / 405, 10);
  });

  it('counts calls, tokens, over-window calls, cache hit rate and commits', () => {
    expect(selfgc).toMatchObject({
      strategy: 'selfgc',
      window: 150,
      calls: 5,
      inputTokens: 550,
      baselineInputTokens: 730,
      overWindowCalls: 1,
      commits: 2,
    });
    expect(selfgc?.cacheHitRate).toBeCloseTo(170 / 550, 10);
    expect(none).toMatchObject({
      overWindowCalls: 2,
      commits: 0,
      inputTokens: 600,
      baselineInputTokens: 600,
    });
    expect(none?.cacheHitRate).toBeCloseTo(300 / 600, 10);
  });

  it('judges no-impact over the changed calls that were judged only', () => {
    expect(selfgc?.strictNoImpactChanged).toEqual(wilson(1, 2));
    expect(selfgc?.recoverableNoImpactChanged).toEqual(wilson(2, 2));
    expect(none?.strictNoImpactChanged).toEqual(wilson(0, 0));
  });

  it('reports the rare-token judge over the same judged calls', () => {
    expect(selfgc?.rareTokensChanged?.noImpact).toEqual(wilson(1, 2));
    expect(selfgc?.rareTokensChanged?.meanScore).toBeCloseTo(0.8, 10);
    expect(none?.rareTokensChanged).toEqual({ noImpact: wilson(0, 0), meanScore: 0 });
  });

  it('counts where the missed anchors last stood, by role, steps back, removal and fold', () => {
    expect(selfgc?.missingAnchors).toEqual({
      total: 4,
      byRole: { agent: 1, tool: 3, user: 0, system: 0 },
      bySteps: { latest: 1, middle: 2, old: 1 },
      byRemoval: { pruned: 1, folded: 2, masked: 1, removed: 0 },
      inLatestFold: 2,
    });
    // No call of none was judged: nothing to break down.
    expect(none?.missingAnchors).toBeUndefined();
  });

  it('draws a timeline per session, longest first, marking the calls that committed', () => {
    expect(selfgc?.timelines).toEqual([
      { session: 's1', viewTokens: [100, 120, 220], transcriptTokens: [100, 200, 300], commitCalls: [1] },
      { session: 's2', viewTokens: [50, 60], transcriptTokens: [50, 80], commitCalls: [1] },
    ]);
  });

  it('keeps the twelve longest timelines', () => {
    const many = Array.from({ length: 14 }, (_, session) =>
      Array.from({ length: session + 1 }, () => call('selfgc', `s${session}`, 10, 10, 0)),
    ).flat();
    const [only] = aggregateSessions(many, 100);
    expect(only?.timelines.map((timeline) => timeline.session)).toEqual(
      Array.from({ length: 12 }, (_, index) => `s${13 - index}`),
    );
  });

  it('gives no families when the sessions came from one file', () => {
    expect(selfgc?.families).toBeUndefined();
  });

  it('breaks each strategy down by family, its cost against none on the same family', () => {
    const tagged = [
      call('none', 'a1', 100, 100, 0, { family: 'agent-a' }),
      call('none', 'b1', 300, 300, 0, { family: 'agent-b' }),
      call('none', 'b1', 400, 400, 300, { family: 'agent-b' }),
      call('selfgc', 'a1', 100, 50, 0, { family: 'agent-a', strict: true }),
      call('selfgc', 'b1', 300, 300, 0, { family: 'agent-b' }),
      call('selfgc', 'b1', 400, 200, 0, { family: 'agent-b', strict: false }),
    ];
    const [, governed] = aggregateSessions(tagged, 250);
    expect(governed?.families).toEqual([
      {
        family: 'agent-a',
        sessions: 1,
        calls: 1,
        overWindowCalls: 0,
        costRelative: 0.5,
        strictNoImpactChanged: wilson(1, 1),
      },
      {
        family: 'agent-b',
        sessions: 1,
        calls: 2,
        overWindowCalls: 1,
        // (300 + 200)·1.25 against 300·1.25 + 300·0.1 + 100·1.25
        costRelative: (500 * 1.25) / (300 * 1.25 + 30 + 125),
        strictNoImpactChanged: wilson(0, 1),
      },
    ]);
  });

  it('breaks the judged calls down by prefix length in windows: up to 2, 2–4, 4–8, over 8', () => {
    const judged = (pass: boolean, rare: boolean) => ({
      strict: pass,
      recoverable: pass,
      rareTokens: rare,
      rareTokenScore: rare ? 1 : 0.5,
    });
    const banded = [
      call('selfgc', 's1', 150, 150, 0),
      call('selfgc', 's1', 180, 90, 0, judged(true, true)),
      // Exactly twice the window is still up to 2×.
      call('selfgc', 's1', 200, 90, 0, judged(false, true)),
      call('selfgc', 's1', 201, 90, 0, judged(true, false)),
      // Changed, with nothing left to judge: a call of its band, not a judged one.
      call('selfgc', 's1', 400, 90, 0, { committed: true }),
      call('selfgc', 's2', 801, 90, 0, judged(true, true)),
      call('selfgc', 's2', 5000, 90, 0, judged(false, false)),
    ];
    const [governed] = aggregateSessions(banded, 100);
    expect(governed?.prefixBands).toEqual([
      {
        above: 0,
        upTo: 2,
        calls: 3,
        strictNoImpactChanged: wilson(1, 2),
        rareTokensChanged: { noImpact: wilson(2, 2), meanScore: 1 },
      },
      {
        above: 2,
        upTo: 4,
        calls: 2,
        strictNoImpactChanged: wilson(1, 1),
        rareTokensChanged: { noImpact: wilson(0, 1), meanScore: 0.5 },
      },
      {
        above: 4,
        upTo: 8,
        calls: 0,
        strictNoImpactChanged: wilson(0, 0),
        rareTokensChanged: { noImpact: wilson(0, 0), meanScore: 0 },
      },
      {
        above: 8,
        upTo: null,
        calls: 2,
        strictNoImpactChanged: wilson(1, 2),
        rareTokensChanged: { noImpact: wilson(1, 2), meanScore: 0.75 },
      },
    ]);
    // The bands split the strategy's judged calls, no more and no fewer.
    expect(governed?.prefixBands?.reduce((sum, band) => sum + band.strictNoImpactChanged.total, 0)).toBe(
      governed?.strictNoImpactChanged.total,
    );
  });

  it('gives no prefix bands to a strategy none of whose calls was judged', () => {
    expect(none?.prefixBands).toBeUndefined();
    expect(selfgc?.prefixBands?.map((band) => band.calls)).toEqual([5, 0, 0, 0]);
  });

  it('gives a relative cost of 1 when none was not replayed', () => {
    const [only] = aggregateSessions([call('selfgc', 's1', 100, 80, 0)], 100);
    expect(only?.cost).toBeCloseTo(100, 10);
    expect(only?.costRelative).toBe(1);
  });
});

describe('buildSummary', () => {
  it('stamps the version, the time and the pricing, and compares the cut-mode results at matched rates', () => {
    const cuts = [cut('selfgc', 'auto', 50), cut('selfgc', 0.9, 80), cut('selfgc', 0.3, 30)];
    const summary = buildSummary({
      inputs: ['a.jsonl'],
      command: 'selfgc eval a.jsonl',
      sessions: 1,
      cuts,
      calls: [],
      window: 32000,
      now: new Date('2026-01-02T03:04:05Z'),
    });
    expect(summary).toMatchObject({
      version: EVAL_SUMMARY_VERSION,
      createdAt: '2026-01-02T03:04:05.000Z',
      inputs: ['a.jsonl'],
      command: 'selfgc eval a.jsonl',
      sessions: 1,
      sessionMode: [],
      pricing: PRICING,
    });
    expect(summary.cutMode).toEqual(aggregateCuts(cuts));
    expect(summary.matched).toEqual(matchedComparison(summary.cutMode));
    expect(summary.matched.find((row) => row.pruneRate === 0.5)?.strictNoImpact.selfgc).toBe(1);
  });
});
