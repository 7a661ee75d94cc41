/**
 * The planner contract: anything that turns a ledger (plus pressure) into a plan. Planners are
 * untrusted: the harness validates every operation they propose.
 */
import type { Ledger } from '../ledger.js';
import type { Plan, ViewState } from '../operations.js';
import type { Warning } from '../transcript.js';

export interface PlannerInput {
  /** The session's objects. Planners must only read it (they see a fork of the prefix). */
  ledger: Ledger;
  /** Committed object states. */
  state: ViewState;
  /** Messages from this index on are the latest turn: planners should leave them alone. */
  protectFrom: number;
  /** Current view tokens and the tokens the view should come down to. */
  viewTokens: number;
  targetTokens: number;
  /** The context window. */
  window: number;
  /**
   * The agent's view shows ids as metadata (the governor's `showIds`): a planner that reads a
   * fork of the view projects it the same way, so that its prefix is the agent's own.
   */
  showIds?: boolean;
  signal?: AbortSignal;
}

/**
 * Tokens one planning spent (an LLM planner), as its provider reported them: the commit rule
 * prices them as GC cost, the prompt at the cache's read and write rates where it says which.
 */
export interface PlannerCost {
  /** Every prompt token, cached or not. */
  inputTokens: number;
  outputTokens: number;
  /** Prompt tokens read from the provider's cache (absent: none). */
  cachedInputTokens?: number;
  /** Prompt tokens written to the provider's cache (absent: none). */
  cacheWriteInputTokens?: number;
}

/** What two plannings spent together (a planner's call and its fallback's). */
export function addPlannerCosts(first: PlannerCost, second: PlannerCost): PlannerCost {
  return {
    inputTokens: first.inputTokens + second.inputTokens,
    outputTokens: first.outputTokens + second.outputTokens,
    cachedInputTokens: (first.cachedInputTokens ?? 0) + (second.cachedInputTokens ?? 0),
    cacheWriteInputTokens: (first.cacheWriteInputTokens ?? 0) + (second.cacheWriteInputTokens ?? 0),
  };
}

export interface PlanResult {
  plan: Plan;
  /** Tokens the planner itself spent (an LLM planner), counted as GC cost. */
  cost?: PlannerCost;
  warnings?: Warning[];
}

export interface Planner {
  /** `embedded`, `llm`, ... — recorded in commits. */
  readonly name: string;
  plan(input: PlannerInput): Promise<PlanResult>;
}
