/**
 * From per-cut and per-call outcomes to the `EvalSummary`: prune rates, no-impact with Wilson
 * intervals, the sweep, matched-rate comparison, and session-mode cost under cache pricing.
 */
import {
  aggregateCalibration,
  aggregateScorecards,
  auditCommits,
  auditPlans,
  type CommitAuditOutcome,
  type PairOutcome,
  type PlanAuditOutcome,
  type ScorecardOutcome,
} from './aggregate-judge.js';
import type {
  CutModeResult,
  CutPoint,
  EvalParameters,
  EvalSummary,
  FamilyResult,
  MissingAnchorSources,
  PrefixBandResult,
  RareTokenResult,
  SessionModeResult,
} from './eval-summary.js';
import { EVAL_SUMMARY_VERSION } from './eval-summary.js';
import type { MissingSource } from './judges/anchor-judge.js';
import { wilson } from './wilson.js';

/** What aggregation needs of one cut (small enough to pass between worker threads). */
export interface CutOutcome {
  strategy: string;
  upperBound: boolean;
  keep: number | 'auto';
  prefixTokens: number;
  viewTokens: number;
  strict: boolean;
  recoverable: boolean;
  lostFromFoldOrMask: boolean;
  /** The rare-token judge: whether the view passed, and its score. */
  rareTokens: boolean;
  rareTokenScore: number;
  /** Set by strategies that ask a model: whether the LLM planner fell back to the embedded one. */
  plannerFallback?: boolean;
  /** Why it fell back, when it did. */
  plannerFallbackReason?: string;
  /** The LLM judge's scorecard, on sampled cuts at the own budget only; its pass is the judge's no-impact. */
  llmScorecard?: ScorecardOutcome;
  /** The LLM judge was asked here but gave no scorecard. */
  llmJudgeFailed?: boolean;
  /** The judge's A/B comparison, on a sample of those cuts where the view changed the prefix. */
  llmPair?: PairOutcome;
  /** For strategies that plan through the harness: the latest-turn audit of this plan. */
  latestTurn?: PlanAuditOutcome;
}

/** What aggregation needs of one model call in session mode. */
export interface CallOutcome {
  session: string;
  /** The family the session belongs to: the name of the file it came from. */
  family?: string;
  strategy: string;
  /** Everything the session holds at this call; against the window, the call's prefix band. */
  prefixTokens: number;
  viewTokens: number;
  cachedTokens: number;
  committed: boolean;
  changed: boolean;
  /** The judges' verdicts, on the judged calls (the changed ones) only. */
  strict?: boolean;
  recoverable?: boolean;
  rareTokens?: boolean;
  rareTokenScore?: number;
  /** Set for the governor with the LLM planner: whether the planner fell back at this call. */
  plannerFallback?: boolean;
  /** Why it fell back, when it did. */
  plannerFallbackReason?: string;
  /** For the governor: the latest-turn audit of this call's commits. */
  latestTurn?: CommitAuditOutcome;
  /** On a judged call that failed: where each missing anchor last stood. */
  missingFrom?: MissingSource[];
}

function groupBy<T>(values: readonly T[], key: (value: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const value of values) {
    const name = key(value);
    const list = groups.get(name);
    if (list) list.push(value);
    else groups.set(name, [value]);
  }
  return groups;
}

export const PRICING = { cacheWrite: 1.25, cacheRead: 0.1 };

/** The rare-token judge over judged views: its pass rate and mean score. */
function rareTokenResult(verdicts: ReadonlyArray<{ pass: boolean; score: number }>): RareTokenResult {
  const passed = verdicts.filter((verdict) => verdict.pass).length;
  const sum = verdicts.reduce((total, verdict) => total + verdict.score, 0);
  return {
    noImpact: wilson(passed, verdicts.length),
    meanScore: verdicts.length > 0 ? sum / verdicts.length : 0,
  };
}

/** The rare-token judge over those of these calls it judged (the changed ones). */
function rareTokensOfCalls(calls: readonly CallOutcome[]): RareTokenResult {
  return rareTokenResult(
    calls.flatMap((call) =>
      call.rareTokens === undefined ? [] : [{ pass: call.rareTokens, score: call.rareTokenScore ?? 0 }],
    ),
  );
}

function cutPoint(keep: number | 'auto', outcomes: readonly CutOutcome[]): CutPoint {
  const count = (predicate: (outcome: CutOutcome) => boolean) => outcomes.filter(predicate).length;
  const pruneRate =
    outcomes.reduce((sum, outcome) => sum + (1 - outcome.viewTokens / Math.max(1, outcome.prefixTokens)), 0) /
    Math.max(1, outcomes.length);
  return {
    keep,
    pruneRate,
    strictNoImpact: wilson(
      count((outcome) => outcome.strict),
      outcomes.length,
    ),
    recoverableNoImpact: wilson(
      count((outcome) => outcome.recoverable),
      outcomes.length,
    ),
    unrecoverableLoss: wilson(
      count((outcome) => outcome.lostFromFoldOrMask),
      outcomes.length,
    ),
    rareTokens: rareTokenResult(
      outcomes.map((outcome) => ({ pass: outcome.rareTokens, score: outcome.rareTokenScore })),
    ),
    cuts: outcomes.length,
  };
}

/** The LLM-only fields of a cut-mode result, and the latest-turn audit: present when some outcome carries them. */
function llmCutFields(
  list: readonly CutOutcome[],
): Pick<
  CutModeResult,
  | 'llmNoImpact'
  | 'llmScorecard'
  | 'llmAgreement'
  | 'llmJudgeFailures'
  | 'llmCalibration'
  | 'llmPlannerFallbacks'
  | 'llmPlannerLastFallback'
  | 'latestTurnAudit'
> {
  const judged = list.flatMap((outcome) =>
    outcome.keep === 'auto' && outcome.llmScorecard ? [{ card: outcome.llmScorecard, outcome }] : [],
  );
  const failures = list.filter((outcome) => outcome.llmJudgeFailed === true).length;
  const pairs = list.flatMap((outcome) =>
    outcome.llmPair
      ? [{ pair: outcome.llmPair, ...(outcome.llmScorecard ? { pass: outcome.llmScorecard.pass } : {}) }]
      : [],
  );
  const planned = list.filter((outcome) => outcome.plannerFallback !== undefined);
  const audited = list.flatMap((outcome) => (outcome.latestTurn ? [outcome.latestTurn] : []));
  return {
    ...(judged.length + failures > 0
      ? {
          llmNoImpact: wilson(judged.filter(({ card }) => card.pass).length, judged.length),
          llmScorecard: aggregateScorecards(judged.map(({ card }) => card)),
          llmAgreement: wilson(
            judged.filter(({ card, outcome }) => card.pass === outcome.strict).length,
            judged.length,
          ),
          llmJudgeFailures: failures,
        }
      : {}),
    ...(pairs.length > 0 ? { llmCalibration: aggregateCalibration(pairs) } : {}),
    ...(planned.length > 0 ? plannerFallbacks(planned) : {}),
    ...(audited.length > 0 ? { latestTurnAudit: auditPlans(audited) } : {}),
  };
}

/** How often the LLM planner fell back, and why the last time (an endpoint down fails them all alike). */
function plannerFallbacks(
  planned: ReadonlyArray<{ plannerFallback?: boolean; plannerFallbackReason?: string }>,
): { llmPlannerFallbacks: number; llmPlannerLastFallback?: string } {
  const failed = planned.filter((outcome) => outcome.plannerFallback);
  const reason = failed.at(-1)?.plannerFallbackReason;
  return {
    llmPlannerFallbacks: failed.length,
    ...(reason === undefined ? {} : { llmPlannerLastFallback: reason }),
  };
}

export function aggregateCuts(outcomes: readonly CutOutcome[]): CutModeResult[] {
  const byStrategy = groupBy(outcomes, (outcome) => outcome.strategy);
  return [...byStrategy.entries()].map(([strategy, list]) => {
    const keeps = [...new Set(list.map((outcome) => outcome.keep))]
      .filter((keep): keep is number => keep !== 'auto')
      .sort((a, b) => b - a);
    return {
      strategy,
      upperBound: list[0]?.upperBound === true,
      own: cutPoint(
        'auto',
        list.filter((outcome) => outcome.keep === 'auto'),
      ),
      sweep: keeps.map((keep) =>
        cutPoint(
          keep,
          list.filter((outcome) => outcome.keep === keep),
        ),
      ),
      ...llmCutFields(list),
    };
  });
}

/** A strategy's strict no-impact at a prune rate, interpolated on its sweep (null outside it). */
export function interpolate(result: CutModeResult, pruneRate: number): number | null {
  const points = [...result.sweep, ...(result.own.cuts > 0 ? [result.own] : [])].sort(
    (a, b) => a.pruneRate - b.pruneRate,
  );
  for (let index = 1; index < points.length; index += 1) {
    const left = points[index - 1]!;
    const right = points[index]!;
    if (pruneRate < left.pruneRate || pruneRate > right.pruneRate) continue;
    const span = right.pruneRate - left.pruneRate;
    const weight = span === 0 ? 0 : (pruneRate - left.pruneRate) / span;
    return left.strictNoImpact.value + weight * (right.strictNoImpact.value - left.strictNoImpact.value);
  }
  return null;
}

export function matchedComparison(
  results: readonly CutModeResult[],
  rates = [0.2, 0.3, 0.4, 0.45, 0.5, 0.6, 0.7],
) {
  return rates.map((pruneRate) => ({
    pruneRate,
    strictNoImpact: Object.fromEntries(
      results.map((result) => [result.strategy, interpolate(result, pruneRate)]),
    ),
  }));
}

function callCost(call: CallOutcome): number {
  return call.cachedTokens * PRICING.cacheRead + (call.viewTokens - call.cachedTokens) * PRICING.cacheWrite;
}

/** Each strategy's result by family, when the calls come from more than one. */
function familyResults(
  calls: readonly CallOutcome[],
  noneCalls: readonly CallOutcome[],
  window: number,
): FamilyResult[] | undefined {
  const byFamily = groupBy(calls, (call) => call.family ?? '');
  if (byFamily.size < 2) return undefined;
  const noneByFamily = groupBy(noneCalls, (call) => call.family ?? '');
  return [...byFamily.entries()].map(([family, list]) => {
    const changed = list.filter((call) => call.strict !== undefined);
    const cost = list.reduce((sum, call) => sum + callCost(call), 0);
    const noneCost = (noneByFamily.get(family) ?? []).reduce((sum, call) => sum + callCost(call), 0);
    return {
      family,
      sessions: new Set(list.map((call) => call.session)).size,
      calls: list.length,
      overWindowCalls: list.filter((call) => call.viewTokens > window).length,
      costRelative: noneCost > 0 ? cost / noneCost : 1,
      strictNoImpactChanged: wilson(changed.filter((call) => call.strict).length, changed.length),
    };
  });
}

/** Upper bounds of the prefix bands, in windows; the last band is everything over the last bound. */
const PREFIX_BAND_BOUNDS = [2, 4, 8];

/** The judges on a strategy's calls by prefix length in windows; undefined when no call was judged. */
function prefixBands(calls: readonly CallOutcome[], window: number): PrefixBandResult[] | undefined {
  if (!calls.some((call) => call.strict !== undefined)) return undefined;
  const bandOf = (call: CallOutcome) => {
    const index = PREFIX_BAND_BOUNDS.findIndex((bound) => call.prefixTokens <= bound * window);
    return index === -1 ? PREFIX_BAND_BOUNDS.length : index;
  };
  return [0, ...PREFIX_BAND_BOUNDS].map((above, index) => {
    const list = calls.filter((call) => bandOf(call) === index);
    const judged = list.filter((call) => call.strict !== undefined);
    return {
      above,
      upTo: PREFIX_BAND_BOUNDS[index] ?? null,
      calls: list.length,
      strictNoImpactChanged: wilson(judged.filter((call) => call.strict).length, judged.length),
      rareTokensChanged: rareTokensOfCalls(list),
    };
  });
}

/** Where the missing anchors of these calls last stood; undefined when no call was judged. */
export function missingAnchorSources(calls: readonly CallOutcome[]): MissingAnchorSources | undefined {
  if (!calls.some((call) => call.strict !== undefined)) return undefined;
  const sources: MissingAnchorSources = {
    total: 0,
    byRole: { agent: 0, tool: 0, user: 0, system: 0 },
    bySteps: { latest: 0, middle: 0, old: 0 },
    byRemoval: { pruned: 0, folded: 0, masked: 0, removed: 0 },
    inLatestFold: 0,
  };
  for (const source of calls.flatMap((call) => call.missingFrom ?? [])) {
    sources.total += 1;
    sources.byRole[source.role] += 1;
    sources.bySteps[source.stepsBack <= 3 ? 'latest' : source.stepsBack <= 12 ? 'middle' : 'old'] += 1;
    sources.byRemoval[source.removedBy] += 1;
    if (source.inLatestFold) sources.inLatestFold += 1;
  }
  return sources;
}

export function aggregateSessions(outcomes: readonly CallOutcome[], window: number): SessionModeResult[] {
  const byStrategy = groupBy(outcomes, (outcome) => outcome.strategy);
  const noneCalls = byStrategy.get('none') ?? [];
  const noneCost = noneCalls.reduce((sum, call) => sum + callCost(call), 0);
  return [...byStrategy.entries()].map(([strategy, calls]) => {
    const changed = calls.filter((call) => call.strict !== undefined);
    const inputTokens = calls.reduce((sum, call) => sum + call.viewTokens, 0);
    const cost = calls.reduce((sum, call) => sum + callCost(call), 0);
    const sessions = groupBy(calls, (call) => call.session);
    const planned = calls.filter((call) => call.plannerFallback !== undefined);
    const audited = calls.flatMap((call) => (call.latestTurn ? [call.latestTurn] : []));
    const families = familyResults(calls, noneCalls, window);
    const missingAnchors = missingAnchorSources(calls);
    const bands = prefixBands(calls, window);
    return {
      strategy,
      window,
      calls: calls.length,
      inputTokens,
      baselineInputTokens: calls.reduce((sum, call) => sum + call.prefixTokens, 0),
      overWindowCalls: calls.filter((call) => call.viewTokens > window).length,
      cacheHitRate: calls.reduce((sum, call) => sum + call.cachedTokens, 0) / Math.max(1, inputTokens),
      cost,
      costRelative: noneCost > 0 ? cost / noneCost : 1,
      commits: calls.filter((call) => call.committed).length,
      strictNoImpactChanged: wilson(changed.filter((call) => call.strict).length, changed.length),
      recoverableNoImpactChanged: wilson(changed.filter((call) => call.recoverable).length, changed.length),
      rareTokensChanged: rareTokensOfCalls(calls),
      ...(planned.length > 0 ? plannerFallbacks(planned) : {}),
      ...(audited.length > 0 ? { latestTurnAudit: auditCommits(audited) } : {}),
      ...(missingAnchors ? { missingAnchors } : {}),
      ...(families ? { families } : {}),
      ...(bands ? { prefixBands: bands } : {}),
      timelines: [...sessions.entries()]
        .sort((a, b) => b[1].length - a[1].length)
        .slice(0, 12)
        .map(([session, list]) => ({
          session,
          viewTokens: list.map((call) => call.viewTokens),
          transcriptTokens: list.map((call) => call.prefixTokens),
          commitCalls: list.flatMap((call, index) => (call.committed ? [index] : [])),
        })),
    };
  });
}

export function buildSummary(input: {
  inputs: string[];
  command: string;
  sessions: number;
  cuts: readonly CutOutcome[];
  calls: readonly CallOutcome[];
  window: number;
  now: Date;
  llm?: EvalSummary['llm'];
  parameters?: EvalParameters;
}): EvalSummary {
  const cutMode = aggregateCuts(input.cuts);
  return {
    version: EVAL_SUMMARY_VERSION,
    createdAt: input.now.toISOString(),
    inputs: input.inputs,
    command: input.command,
    sessions: input.sessions,
    cutMode,
    sessionMode: aggregateSessions(input.calls, input.window),
    matched: matchedComparison(cutMode),
    pricing: PRICING,
    ...(input.llm ? { llm: input.llm } : {}),
    ...(input.parameters ? { parameters: input.parameters } : {}),
  };
}
