/** Counterfactual replay: strategies, judges, aggregation, the report. */
export {
  aggregateCuts,
  aggregateSessions,
  buildSummary,
  type CallOutcome,
  type CutOutcome,
  matchedComparison,
  PRICING,
} from './aggregate.js';
export {
  type CutModeResult,
  type CutPoint,
  EVAL_SUMMARY_VERSION,
  type EvalParameters,
  type EvalSummary,
  type JudgeCalibration,
  type JudgeScorecardResult,
  type LatestTurnAudit,
  type RareTokenResult,
  type Rate,
  type SessionModeResult,
} from './eval-summary.js';
export { DEFAULT_SWEEP, type EvaluateOptions, evaluateSessions } from './evaluate-sessions.js';
export {
  FAILURE_CATEGORIES,
  type FailureCategory,
  JUDGE_DIMENSIONS,
  type JudgeDimension,
  type JudgeScorecard,
  judgeWithLlm,
  type LlmJudgeInput,
  type LlmJudgeVerdict,
  PASS_SCORE,
} from './judge-llm.js';
export {
  comparePairwise,
  type PairChoice,
  type PairwiseInput,
  type PairwiseResult,
} from './judge-pairwise.js';
export {
  type AnchorLocator,
  type AnchorVerdict,
  continuationAnchors,
  type JudgeInput,
  judgeAnchors,
  type NeededAnchors,
  neededAnchors,
} from './judges/anchor-judge.js';
export {
  createTokenIndex,
  judgeRareTokens,
  type NeededRareTokens,
  neededRareTokens,
  RARE_SHARE,
  type RareTokenJudgeInput,
  type RareTokenVerdict,
  type TokenIndex,
} from './judges/rare-token-judge.js';
export { createBpeVocabulary, type WordVocabulary } from './judges/word-vocabulary.js';
export {
  createEndpointClient,
  DEFAULT_KEY_ENV,
  ENDPOINT_FAILURE_LIMIT,
  type Environment,
  type LlmEndpoint,
} from './llm-endpoint.js';
export {
  loadSessions,
  parseRecordedSession,
  type RecordedSession,
  readSessionLines,
} from './load-sessions.js';
export {
  autoCuts,
  CONTINUATION_STEPS,
  type CutRecord,
  type CutReplayOptions,
  continuationAt,
  replayableCuts,
  replayCuts,
} from './replay-cut.js';
export {
  type CallRecord,
  replaySession,
  type SessionPolicy,
  type SessionReplayOptions,
} from './replay-session.js';
export { type MarkdownOptions, renderMarkdown } from './report/render-markdown.js';
export { renderReport } from './report/render-report.js';
export { type RunEvalOptions, runEval } from './run-eval.js';
export {
  clearToolUsesStrategy,
  hybridStrategy,
  lastObservationsStrategy,
  noneStrategy,
  oldestTurnStrategy,
  toolMaskPruneStrategy,
  toolPruneStrategy,
} from './strategies/baselines.js';
export {
  BASELINE_NAMES,
  COMMIT_VARIANT_NAMES,
  LLM_STRATEGY_NAMES,
  STRATEGY_NAMES,
  type StrategyContext,
  strategyByName,
} from './strategies/registry.js';
export { createSelfGcLlmStrategy, type SelfGcLlmStrategyOptions } from './strategies/selfgc-llm-strategy.js';
export {
  createSelfGcStrategy,
  oracleStrategy,
  type SelfGcStrategyOptions,
} from './strategies/selfgc-strategies.js';
export {
  DEFAULT_BASELINE_KEEP,
  type Strategy,
  type StrategyInput,
  type StrategyOutput,
  type SyncStrategy,
} from './strategies/strategy.js';
export {
  collectExamples,
  type ExampleSet,
  type FamilyValidation,
  fitEntryModel,
  leaveOneFamilyOut,
  type TrainingOptions,
} from './train-valuator.js';
export { wilson } from './wilson.js';
