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

export interface PlanResult {
  plan: Plan;
  /** Tokens the planner itself spent (an LLM planner), counted as GC cost. */
  cost?: { inputTokens: number; outputTokens: number };
  warnings?: Warning[];
}

export interface Planner {
  /** `embedded`, `llm`, ... — recorded in commits. */
  readonly name: string;
  plan(input: PlannerInput): Promise<PlanResult>;
}
