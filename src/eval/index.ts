/** Counterfactual replay: strategies, judges, aggregation, the report. */
export * from './aggregate.js';
export * from './eval-summary.js';
export * from './evaluate-sessions.js';
export * from './judge-anchors.js';
export { judgeWithLlm } from './judge-llm.js';
export * from './llm-endpoint.js';
export * from './load-sessions.js';
export * from './replay-cut.js';
export * from './replay-session.js';
export { renderReport } from './report/render-report.js';
export * from './run-eval.js';
export * from './strategies/baselines.js';
export * from './strategies/registry.js';
export * from './strategies/selfgc-llm-strategy.js';
export * from './strategies/selfgc-strategies.js';
export * from './strategies/strategy.js';
export { wilson } from './wilson.js';
