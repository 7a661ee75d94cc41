/**
 * The results of `selfgc eval`: what `--json` writes and what the HTML report draws.
 * Version-stamped; the report refuses a summary of another version. Optional fields (`llm…`,
 * set only when an LLM endpoint was configured with `--llm-url`, `latestTurnAudit` and
 * `parameters`) are additions: readers of version 1 that do not know them can ignore them.
 */

import type { FailureCategory, JudgeDimension } from './judge-llm.js';
import type { HolderRole, Removal } from './judges/anchor-judge.js';

export const EVAL_SUMMARY_VERSION = 1;

/**
 * The rare-token judge's results over a set of judged views: a second definition of no-impact
 * (see `judges/rare-token-judge.ts`), reported beside the anchor judge's.
 */
export interface RareTokenResult {
  /** Views where every rare token the continuation used is still visible. */
  noImpact: Rate;
  /** Mean over those views of the idf-weighted share of such tokens still visible. */
  meanScore: number;
}

/** A rate with its Wilson 95% interval. */
export interface Rate {
  /** Successes and trials. */
  hits: number;
  total: number;
  /** hits / total (0 when total is 0). */
  value: number;
  low: number;
  high: number;
}

/**
 * The LLM judge's scorecards over the sampled cuts of one strategy (see `judge-llm.ts`): each
 * dimension scored 1–5 from the view alone; a scorecard passes when every dimension is 4 or more.
 */
export interface JudgeScorecardResult {
  /** Cuts with a scorecard. */
  judged: number;
  /** Mean score of each dimension. */
  means: Record<JudgeDimension, number>;
  /** Failing scorecards by the category of loss the judge gave (the failure taxonomy). */
  failureCategories: Record<FailureCategory, number>;
  /**
   * Failing scorecards by culprit: ids of objects the view changed (`objects`), `other`, `none`,
   * or only ids the view did not change (`unknown`, a judge naming what it was not shown).
   */
  culprits: { objects: number; other: number; none: number; unknown: number };
  /** Blamed object ids by kind (`function:read_file`, `conversation:user`), over failing scorecards. */
  culpritKinds: Record<string, number>;
}

/**
 * A/B calibration of the LLM judge (see `judge-pairwise.ts`): at sampled cuts, the endpoint's
 * next step from the full prefix and from the view, compared by the judge in both orders.
 */
export interface JudgeCalibration {
  /** Sampled cuts where the view differed from the prefix, so there were two contexts to compare. */
  pairs: number;
  /** Pairs whose verdict, read back to full/governed/tie, changed with the order: position bias. */
  flips: Rate;
  /** Of the judgments that named a winner, the share that named slot A (0.5 without a slot preference). */
  slotA: Rate;
  /** Pairs with the same verdict in both orders, by that verdict. */
  consistent: { governed: number; full: number; tie: number };
  /**
   * Of the consistent pairs with a scorecard: the pairwise verdict (the governed step not worse,
   * that is governed or tie) agrees with the scorecard's pass.
   */
  agreement: Rate;
  /** Pairs with no verdict: a call failed or answered off-format. */
  failures: number;
}

/**
 * The latest-turn audit: the planner must never edit the latest turn (the harness refuses it).
 * Counted from the plans of cut mode and the commits of session mode.
 */
export interface LatestTurnAudit {
  /** Plans read (cut mode: one per cut and budget) or commits made (session mode). */
  plans: number;
  /** Operations in them. */
  operations: number;
  /** Cut mode: operations the planner aimed at the latest turn, which the harness refused. */
  refused?: number;
  /** Operations in effect on objects of the latest turn: should be zero. */
  applied: number;
  /**
   * Session mode: latest-turn folds by the governor's last resort when the latest turn alone is
   * over the window (recoverable with expand), counted apart from `applied`.
   */
  windowRescue?: number;
}

/** One strategy in cut mode, at one budget. */
export interface CutPoint {
  /** The keep fraction asked for (`auto` = the strategy's own choice). */
  keep: number | 'auto';
  /** Mean prune rate over cuts, `1 − |C′|/|C|`. */
  pruneRate: number;
  strictNoImpact: Rate;
  recoverableNoImpact: Rate;
  /** Share of cuts where a needed anchor is neither visible nor recoverable, though a fold or mask removed it. */
  unrecoverableLoss: Rate;
  /** The rare-token judge on the same cuts (absent from summaries written before it existed). */
  rareTokens?: RareTokenResult;
  cuts: number;
}

export interface CutModeResult {
  strategy: string;
  /** Labelled upper bounds (the oracle) are drawn apart. */
  upperBound: boolean;
  /** At the strategy's own budget. */
  own: CutPoint;
  /** The budget sweep, one point per keep fraction. */
  sweep: CutPoint[];
  /**
   * With `--judge llm`: the LLM judge's no-impact (its scorecard's pass: could the agent have
   * written its real continuation from the view alone?) at the own budget, over the sampled cuts
   * that got a scorecard. The same cuts are sampled for every strategy.
   */
  llmNoImpact?: Rate;
  /** With `--judge llm`: the scorecards behind `llmNoImpact`: means, failure taxonomy, culprits. */
  llmScorecard?: JudgeScorecardResult;
  /** With `--judge llm` and `--judge-pairs` above 0: the judge's A/B calibration. */
  llmCalibration?: JudgeCalibration;
  /** With `--judge llm`: share of those cuts where the LLM judge and the anchor judge's strict verdict agree. */
  llmAgreement?: Rate;
  /** With `--judge llm`: sampled cuts the LLM judge gave no verdict for (endpoint failure, off-format answer). */
  llmJudgeFailures?: number;
  /**
   * For strategies that ask a model (`selfgc-llm`): plans, over the own budget and the sweep,
   * for which the LLM planner failed and the embedded planner stood in.
   */
  llmPlannerFallbacks?: number;
  /** Why the LLM planner fell back the last time it did. */
  llmPlannerLastFallback?: string;
  /** For strategies that plan through the harness (`selfgc`, `selfgc-llm`): the latest-turn audit. */
  latestTurnAudit?: LatestTurnAudit;
}

/** One strategy in session mode (the governor through whole sessions under a window). */
export interface SessionModeResult {
  strategy: string;
  window: number;
  calls: number;
  /** Input tokens summed over all model calls. */
  inputTokens: number;
  /** The same with no governance, for the ratio. */
  baselineInputTokens: number;
  overWindowCalls: number;
  /** Share of input tokens that were cache reads. */
  cacheHitRate: number;
  /** Cost under cache pricing, and relative to `none`. */
  cost: number;
  costRelative: number;
  commits: number;
  /** No-impact over the calls whose view differs from the full prefix. */
  strictNoImpactChanged: Rate;
  recoverableNoImpactChanged: Rate;
  /** The rare-token judge on the same calls (absent from summaries written before it existed). */
  rareTokensChanged?: RareTokenResult;
  /** For `selfgc-llm`: calls at which the LLM planner failed and the embedded planner stood in. */
  llmPlannerFallbacks?: number;
  /** Why the LLM planner fell back the last time it did. */
  llmPlannerLastFallback?: string;
  /** For the governor: the latest-turn audit of its commits. */
  latestTurnAudit?: LatestTurnAudit;
  /** Where the anchors its views missed last stood (absent from summaries written before it existed). */
  missingAnchors?: MissingAnchorSources;
  /**
   * The same by family (the input file a session came from), when the sessions came from more
   * than one: a strategy can do well on average and badly on one kind of agent.
   */
  families?: FamilyResult[];
  /**
   * The judges by how long the prefix was against the window, when the strategy had judged calls
   * (absent from summaries written before it existed): whether no-impact holds as a session grows
   * past the window.
   */
  prefixBands?: PrefixBandResult[];
  /** Per session token timelines for the report: view tokens per call, and the calls that committed. */
  timelines: Array<{
    session: string;
    viewTokens: number[];
    transcriptTokens: number[];
    commitCalls: number[];
  }>;
}

/**
 * The anchors a strategy's views missed, one count per anchor per failing call, by where each last
 * stood: who wrote the message that held it, how many assistant steps back, and what the strategy
 * had done to that message. It says whether a failure is one of room or of prediction.
 */
export interface MissingAnchorSources {
  total: number;
  byRole: Record<HolderRole, number>;
  /** Assistant steps between the holder and the call: 0–3 (the latest work), 4–12, 13 or more. */
  bySteps: { latest: number; middle: number; old: number };
  byRemoval: Record<Removal, number>;
  /** Those that sat in the fold of the latest work (`MissingSource.inLatestFold`). */
  inLatestFold: number;
}

/** One strategy's session-mode result on the sessions of one family. */
export interface FamilyResult {
  family: string;
  sessions: number;
  calls: number;
  overWindowCalls: number;
  /** Cost relative to no governance on the same family's calls. */
  costRelative: number;
  strictNoImpactChanged: Rate;
}

/**
 * One strategy's session-mode judges on the calls whose prefix, in windows (prefix tokens over the
 * session-mode window), is over `above` and at most `upTo` (no upper bound when null).
 */
export interface PrefixBandResult {
  above: number;
  upTo: number | null;
  /** The strategy's calls in the band, judged or not. */
  calls: number;
  /** No-impact over the judged calls in the band (those whose view differs from the full prefix). */
  strictNoImpactChanged: Rate;
  rareTokensChanged: RareTokenResult;
}

/** ` (last: why)` after a count of planner fallbacks, or nothing. */
export function lastFallbackNote(result: { llmPlannerLastFallback?: string }): string {
  return result.llmPlannerLastFallback === undefined ? '' : ` (last: ${result.llmPlannerLastFallback})`;
}

/** A prefix band by its bounds in windows, as the reports name it: `up to 2×`, `2–4×`, `over 8×`. */
export function prefixBandLabel(band: PrefixBandResult): string {
  if (band.upTo === null) return `over ${band.above}×`;
  return band.above === 0 ? `up to ${band.upTo}×` : `${band.above}–${band.upTo}×`;
}

/**
 * One family held out (`--leave-one-family-out`): the valuator fitted without it, the shipped one,
 * and no model at all (the extractor's kind order), which shows what a model changes.
 */
export interface FamilyHoldOut {
  family: string;
  /** Training examples of the model fitted without this family. */
  trainingExamples: number;
  /** Whether the shipped model was fitted with this family (its `trainedOn.families`). */
  shippedModelSawFamily: boolean;
  /** `selfgc` in session mode on this family with the model fitted without it. */
  heldOut: FamilyResult;
  /** The same with the shipped model. */
  shipped: FamilyResult;
  /** The same without a model (`--model none`). */
  withoutModel: FamilyResult;
}

export interface EvalSummary {
  version: number;
  createdAt: string;
  /** The files and command that produced it. */
  inputs: string[];
  command: string;
  sessions: number;
  cutMode: CutModeResult[];
  sessionMode: SessionModeResult[];
  /** Comparison at matched prune rates: no-impact of each strategy interpolated at each rate. */
  matched: Array<{ pruneRate: number; strictNoImpact: Record<string, number | null> }>;
  /** Pricing used for costs. */
  pricing: { cacheWrite: number; cacheRead: number };
  /**
   * The endpoint behind `selfgc-llm` and the LLM judge, when one was configured (never its URL
   * or key); `plannerMode` is set when selfgc-llm ran: how its planner read the sessions;
   * `judgeSample` is set with `--judge llm`: cuts per strategy the judge was to read;
   * `judgePairs`: of those, cuts per strategy for the A/B calibration.
   */
  llm?: { provider: string; model: string; plannerMode?: string; judgeSample?: number; judgePairs?: number };
  /** The evaluation's own settings (absent from summaries written before they were recorded). */
  parameters?: EvalParameters;
  /** With `--leave-one-family-out`: each family replayed with a valuator that never saw it. */
  leaveOneFamilyOut?: FamilyHoldOut[];
}

export interface EvalParameters {
  strategies: string[];
  modes: Array<'cut' | 'session'>;
  /** Session mode's context window, in tokens. */
  window: number;
  /** Automatic cut points per session in cut mode (explicit cuts replace them). */
  cutsPerSession: number;
  /** Keep shares of the cut-mode budget sweep, besides each strategy's own budget. */
  sweep: number[];
  /** Assistant messages after a cut whose anchors the judge looks for. */
  continuationSteps: number;
}
