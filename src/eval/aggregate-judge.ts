/**
 * Aggregation of the paper's judge protocol: the LLM judge's scorecards (means, failure
 * taxonomy, culprits), its A/B calibration (position bias, agreement with the scorecard), and
 * the latest-turn audit of plans and commits.
 */
import type { JudgeCalibration, JudgeScorecardResult, LatestTurnAudit } from './eval-summary.js';
import {
  FAILURE_CATEGORIES,
  type FailureCategory,
  JUDGE_DIMENSIONS,
  type JudgeDimension,
} from './judge-llm.js';
import { type PairChoice, type PairSlot, pairFlipped } from './judge-pairwise.js';
import { wilson } from './wilson.js';

/** One scorecard as aggregation needs it (small enough to pass between worker threads). */
export interface ScorecardOutcome {
  scores: Record<JudgeDimension, number>;
  pass: boolean;
  category: FailureCategory;
  /** `objects` when the judge blamed ids the view changed; `unknown` when it blamed only others. */
  culprit: 'none' | 'other' | 'objects' | 'unknown';
  /** The blamed ids the view changed. */
  culpritIds: string[];
}

/** One A/B comparison: the two orders' judgments, or a failure. */
export type PairOutcome =
  | { choices: [PairChoice, PairChoice]; slots: [PairSlot, PairSlot] }
  | { failed: true };

/** The latest-turn audit of one plan in cut mode. */
export interface PlanAuditOutcome {
  operations: number;
  /** Operations the harness refused because they aimed at the latest turn. */
  refused: number;
  /** Operations in effect on latest-turn objects in the rehearsed state. */
  applied: number;
}

/** The latest-turn audit of one model call's commits in session mode. */
export interface CommitAuditOutcome {
  commits: number;
  operations: number;
  /** Committed operations on objects of that call's latest turn, outside the window rescue. */
  applied: number;
  /** The same, in a call where the governor's last-resort window rescue folded the latest turn. */
  windowRescue: number;
}

/** `function:read_file:12` → `function:read_file`: what kind of object the judge blamed. */
export function culpritKind(id: string): string {
  return id.replace(/:\d+(@\d+)?$/, '');
}

function countBy<T extends string>(keys: readonly T[], values: readonly T[]): Record<T, number> {
  const counts = Object.fromEntries(keys.map((key) => [key, 0])) as Record<T, number>;
  for (const value of values) counts[value] += 1;
  return counts;
}

export function aggregateScorecards(cards: readonly ScorecardOutcome[]): JudgeScorecardResult {
  const failing = cards.filter((card) => !card.pass);
  const kinds: Record<string, number> = {};
  for (const id of failing.flatMap((card) => card.culpritIds)) {
    const kind = culpritKind(id);
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  return {
    judged: cards.length,
    means: Object.fromEntries(
      JUDGE_DIMENSIONS.map((dimension) => [
        dimension,
        cards.length === 0 ? 0 : cards.reduce((sum, card) => sum + card.scores[dimension], 0) / cards.length,
      ]),
    ) as Record<JudgeDimension, number>,
    failureCategories: countBy(
      FAILURE_CATEGORIES,
      failing.map((card) => card.category),
    ),
    culprits: countBy(
      ['objects', 'other', 'none', 'unknown'] as const,
      failing.map((card) => card.culprit),
    ),
    culpritKinds: Object.fromEntries(
      Object.entries(kinds).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)),
    ),
  };
}

/**
 * Position bias and agreement over A/B comparisons. `pass` is the scorecard of the same view,
 * when it has one: a consistent pairwise verdict agrees with it when "the governed step is not
 * worse" (governed or tie) goes with a pass.
 */
export function aggregateCalibration(
  pairs: ReadonlyArray<{ pair: PairOutcome; pass?: boolean }>,
): JudgeCalibration {
  const judged = pairs.flatMap(({ pair, pass }) => ('failed' in pair ? [] : [{ ...pair, pass }]));
  const flipped = judged.filter((pair) => pairFlipped(pair.choices));
  const consistent = judged.filter((pair) => !pairFlipped(pair.choices));
  const named = judged.flatMap((pair) => pair.slots.filter((slot) => slot !== 'tie'));
  const withCard = consistent.filter((pair) => pair.pass !== undefined);
  return {
    pairs: pairs.length,
    flips: wilson(flipped.length, judged.length),
    slotA: wilson(named.filter((slot) => slot === 'A').length, named.length),
    consistent: countBy(
      ['governed', 'full', 'tie'] as const,
      consistent.map((pair) => pair.choices[0]),
    ),
    agreement: wilson(
      withCard.filter((pair) => (pair.choices[0] !== 'full') === pair.pass).length,
      withCard.length,
    ),
    failures: pairs.length - judged.length,
  };
}

export function auditPlans(plans: readonly PlanAuditOutcome[]): LatestTurnAudit {
  return {
    plans: plans.length,
    operations: plans.reduce((sum, plan) => sum + plan.operations, 0),
    refused: plans.reduce((sum, plan) => sum + plan.refused, 0),
    applied: plans.reduce((sum, plan) => sum + plan.applied, 0),
  };
}

export function auditCommits(calls: readonly CommitAuditOutcome[]): LatestTurnAudit {
  return {
    plans: calls.reduce((sum, call) => sum + call.commits, 0),
    operations: calls.reduce((sum, call) => sum + call.operations, 0),
    applied: calls.reduce((sum, call) => sum + call.applied, 0),
    windowRescue: calls.reduce((sum, call) => sum + call.windowRescue, 0),
  };
}
