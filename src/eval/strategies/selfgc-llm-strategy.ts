/**
 * `selfgc-llm` in cut mode: the harness of `selfgc` (rehearsal, projection) with the plan asked
 * of a model through the LLM planner. On any failure the planner falls back to the embedded one
 * and says so in a warning, which the output carries so the evaluation can count fallbacks.
 */
import { createEmbeddedPlanner } from '../../core/planners/embedded-planner.js';
import type { RehearseOptions } from '../../core/rehearse-plan.js';
import type { Warning } from '../../core/transcript.js';
import { askHints } from '../../llm/hint-planner.js';
import { createLlmPlanner, type LlmPlannerOptions } from '../../llm/llm-planner.js';
import type { LlmClient } from '../../llm/llm-types.js';
import {
  applyPlan,
  CUT_PLANNER_OPTIONS,
  createSelfGcStrategy,
  cutPlannerInput,
  cutRehearseOptions,
} from './selfgc-strategies.js';
import type { Strategy } from './strategy.js';

export interface SelfGcLlmStrategyOptions extends LlmPlannerOptions {
  foldAnchors?: RehearseOptions['foldAnchors'];
}

export function createSelfGcLlmStrategy(options: SelfGcLlmStrategyOptions, name = 'selfgc-llm'): Strategy {
  const { foldAnchors, ...plannerOptions } = options;
  const planner = createLlmPlanner({
    fallback: createEmbeddedPlanner(CUT_PLANNER_OPTIONS),
    ...plannerOptions,
  });
  return {
    name,
    async run(input) {
      const result = await planner.plan(cutPlannerInput(input));
      const output = applyPlan(input.ledger, result.plan, cutRehearseOptions(input, foldAnchors));
      return { ...output, warnings: result.warnings ?? [] };
    },
  };
}

/**
 * `selfgc-hints` in cut mode: `selfgc` itself (the embedded planner, the same replanning loop),
 * with the LLM tier's hints for the objects its rules leave uncertain.
 */
export function createSelfGcHintsStrategy(client: LlmClient, name = 'selfgc-hints'): Strategy {
  return {
    name,
    async run(input) {
      const { hints, warnings } = await askHints({ client }, cutPlannerInput(input));
      const output = createSelfGcStrategy({ hints }, name).run(input);
      return { ...output, warnings };
    },
  };
}

/** Warning codes that say a model's plan or hints were not used: the planner's own fallback, or the governor's. */
const FALLBACK_CODES = new Set(['llm-planner-fallback', 'planner-failed', 'llm-hints-failed']);

/** The warning that says the LLM planner fell back, if any. */
export function plannerFallbackOf(warnings: readonly Warning[] | undefined): Warning | undefined {
  return warnings?.find((warning) => FALLBACK_CODES.has(warning.code));
}
