/**
 * Self-GC: self-governing context for long-running LLM agents.
 *
 * The main entry holds the core — the canonical transcript, the ledger, operations, projection,
 * rehearsal, commit, the governor and its planners, the agent's GC tools — and the real
 * tokenizers. Edges have their own entries: `self-gc/adapters`, `self-gc/stores`
 * (memory and by URL), `self-gc/stores/sqlite`, `self-gc/stores/redis`, `self-gc/stores/postgres`,
 * `self-gc/llm`, `self-gc/integrations`, `self-gc/proxy`, `self-gc/eval`.
 */
export * from './core/anchors.js';
export * from './core/commit-plan.js';
export * from './core/errors.js';
export * from './core/gc-tools/index.js';
export * from './core/governor/cache-cost.js';
export { createGovernor } from './core/governor/create-governor.js';
export * from './core/governor/governor-types.js';
export { createPinRule, globToRegExp } from './core/governor/pins.js';
export { exceedsJsonDepth, MAX_JSON_DEPTH } from './core/json-depth.js';
export * from './core/ledger.js';
export * from './core/object-payload.js';
export * from './core/operations.js';
export {
  createEmbeddedPlanner,
  type EmbeddedPlannerOptions,
  planEmbedded,
} from './core/planners/embedded-planner.js';
export * from './core/planners/planner.js';
export * from './core/project-view.js';
export * from './core/rehearse-plan.js';
export * from './core/render-replacement.js';
export * from './core/session-state.js';
export * from './core/store.js';
export * from './core/tokens.js';
export * from './core/transcript.js';
export * from './tokenizers/create-token-counter.js';
