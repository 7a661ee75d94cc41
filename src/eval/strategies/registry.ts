/**
 * Strategies by their command-line names.
 */
import { BadInputError } from '../../core/errors.js';
import type { EntryModel } from '../../core/valuator/entry-model.js';
import type { LlmPlannerMode } from '../../llm/llm-planner.js';
import type { LlmClient } from '../../llm/llm-types.js';
import {
  clearToolUsesStrategy,
  hybridStrategy,
  lastObservationsStrategy,
  noneStrategy,
  oldestTurnStrategy,
  toolMaskPruneStrategy,
  toolPruneStrategy,
} from './baselines.js';
import { createSelfGcHintsStrategy, createSelfGcLlmStrategy } from './selfgc-llm-strategy.js';
import { createSelfGcStrategy, oracleStrategy, SELFGC_COMMIT_VARIANTS } from './selfgc-strategies.js';
import type { Strategy } from './strategy.js';

/** What strategies that ask a model need; `llmClient` is there only when an endpoint is configured. */
export interface StrategyContext {
  llmClient?: LlmClient;
  /** How selfgc-llm's planner reads a session (default `fork`). */
  plannerMode?: LlmPlannerMode;
  /** A valuator model for Self-GC's fold indexes (default none). */
  entryModel?: EntryModel | 'none';
}

const STRATEGIES: Record<string, (context: StrategyContext) => Strategy> = {
  none: () => noneStrategy,
  'oldest-turn': () => oldestTurnStrategy,
  'tool-prune': () => toolPruneStrategy,
  'tool-mask-prune': () => toolMaskPruneStrategy,
  hybrid: () => hybridStrategy,
  'clear-tool-uses': () => clearToolUsesStrategy,
  'last-5-observations': () => lastObservationsStrategy,
  selfgc: (context) =>
    createSelfGcStrategy(context.entryModel === undefined ? {} : { entryModel: context.entryModel }),
  oracle: () => oracleStrategy,
};

/** Strategies that ask a model: available when an endpoint is configured, never run by default. */
const LLM_STRATEGIES: Record<string, (client: LlmClient, context: StrategyContext) => Strategy> = {
  'selfgc-llm': (client, context) =>
    createSelfGcLlmStrategy({ client, ...(context.plannerMode ? { mode: context.plannerMode } : {}) }),
  'selfgc-hints': (client) => createSelfGcHintsStrategy(client),
};

/** The strategies every evaluation can run (and runs by default). */
export const STRATEGY_NAMES = Object.keys(STRATEGIES);

export const LLM_STRATEGY_NAMES = Object.keys(LLM_STRATEGIES);

/** Self-GC under another commit policy (`selfgc-paper`): session mode only, run when named. */
export const COMMIT_VARIANT_NAMES = Object.keys(SELFGC_COMMIT_VARIANTS);

/** The baselines (everything but Self-GC and the oracle). */
export const BASELINE_NAMES = STRATEGY_NAMES.filter(
  (name) => name !== 'selfgc' && name !== 'oracle' && name !== 'none',
);

export function strategyByName(name: string, context: StrategyContext = {}): Strategy {
  const makeWithModel = Object.hasOwn(LLM_STRATEGIES, name) ? LLM_STRATEGIES[name] : undefined;
  if (makeWithModel) {
    if (!context.llmClient) {
      throw new BadInputError(
        `strategy "${name}" needs an LLM endpoint: pass --llm-url URL and --llm-model NAME (with --llm-provider anthropic for an Anthropic endpoint)`,
      );
    }
    return makeWithModel(context.llmClient, context);
  }
  // A commit variant plans as selfgc does: in cut mode it is selfgc under its own name.
  const make = Object.hasOwn(STRATEGIES, name)
    ? STRATEGIES[name]
    : Object.hasOwn(SELFGC_COMMIT_VARIANTS, name)
      ? (context: StrategyContext) => ({ ...STRATEGIES.selfgc!(context), name })
      : undefined;
  if (!make) {
    throw new BadInputError(
      `unknown strategy "${name}" (choose from ${[...STRATEGY_NAMES, ...COMMIT_VARIANT_NAMES].join(', ')}; selfgc-llm needs --llm-url)`,
    );
  }
  return make(context);
}
