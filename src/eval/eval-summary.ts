/**
 * The results of `selfgc eval`: what `--json` writes and what the HTML report draws.
 * Version-stamped; the report refuses a summary of another version. Optional fields (`llm…`,
 * set only when an LLM endpoint was configured with `--llm-url`, and `parameters`) are
 * additions: readers of version 1 that do not know them can ignore them.
 */

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
   * With `--judge llm`: the LLM judge's no-impact (a G-Eval verdict: could the agent have written
   * its real continuation from the view alone?) at the own budget, over the sampled cuts that
   * got a verdict. The same cuts are sampled for every strategy.
   */
  llmNoImpact?: Rate;
  /** With `--judge llm`: share of those cuts where the LLM judge and the anchor judge's strict verdict agree. */
  llmAgreement?: Rate;
  /** With `--judge llm`: sampled cuts the LLM judge gave no verdict for (endpoint failure, off-format answer). */
  llmJudgeFailures?: number;
  /**
   * For strategies that ask a model (`selfgc-llm`): plans, over the own budget and the sweep,
   * for which the LLM planner failed and the embedded planner stood in.
   */
  llmPlannerFallbacks?: number;
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
  /** Per session token timelines for the report: view tokens per call, and the calls that committed. */
  timelines: Array<{
    session: string;
    viewTokens: number[];
    transcriptTokens: number[];
    commitCalls: number[];
  }>;
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
   * `judgeSample` is set with `--judge llm`: cuts per strategy the judge was to read.
   */
  llm?: { provider: string; model: string; plannerMode?: string; judgeSample?: number };
  /** The evaluation's own settings (absent from summaries written before they were recorded). */
  parameters?: EvalParameters;
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
