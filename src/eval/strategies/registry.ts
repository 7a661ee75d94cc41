/**
 * Strategies by their command-line names.
 */
import { BadInputError } from '../../core/errors.js';
import {
  clearToolUsesStrategy,
  hybridStrategy,
  lastObservationsStrategy,
  noneStrategy,
  oldestTurnStrategy,
  toolMaskPruneStrategy,
  toolPruneStrategy,
} from './baselines.js';
import { createSelfGcStrategy, oracleStrategy } from './selfgc-strategies.js';
import type { Strategy } from './strategy.js';

const STRATEGIES: Record<string, () => Strategy> = {
  none: () => noneStrategy,
  'oldest-turn': () => oldestTurnStrategy,
  'tool-prune': () => toolPruneStrategy,
  'tool-mask-prune': () => toolMaskPruneStrategy,
  hybrid: () => hybridStrategy,
  'clear-tool-uses': () => clearToolUsesStrategy,
  'last-5-observations': () => lastObservationsStrategy,
  selfgc: () => createSelfGcStrategy(),
  oracle: () => oracleStrategy,
};

export const STRATEGY_NAMES = Object.keys(STRATEGIES);

/** The baselines (everything but Self-GC and the oracle). */
export const BASELINE_NAMES = STRATEGY_NAMES.filter(
  (name) => name !== 'selfgc' && name !== 'oracle' && name !== 'none',
);

export function strategyByName(name: string): Strategy {
  const make = Object.hasOwn(STRATEGIES, name) ? STRATEGIES[name] : undefined;
  if (!make) {
    throw new BadInputError(
      `unknown strategy "${name}" (choose from ${STRATEGY_NAMES.join(', ')}; selfgc-llm needs --llm-url)`,
    );
  }
  return make();
}
