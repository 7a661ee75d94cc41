/**
 * A strategy turns a prefix into a view under a budget. Strategies see the prefix only; the
 * oracle alone is handed the continuation and is labelled an upper bound.
 */
import type { Ledger } from '../../core/ledger.js';
import type { RejectedOperation, ViewState } from '../../core/operations.js';
import type { ViewItem } from '../../core/project-view.js';
import type { Message, Warning } from '../../core/transcript.js';

export interface StrategyInput {
  /** The prefix, indexed. `ledger.messages` is the prefix itself. */
  ledger: Ledger;
  /** Keep at most this share of the prefix tokens; `auto` lets the strategy choose. */
  keep: number | 'auto';
  /** The next assistant messages after the cut: for the oracle only. */
  continuation?: readonly Message[];
}

export interface StrategyOutput {
  items: ViewItem[];
  tokens: number;
  /** Object states when the strategy works through the harness (for recoverability). */
  state?: ViewState;
  /** What the strategy wants known, such as an LLM planner that fell back to the embedded one. */
  warnings?: Warning[];
  /** When the strategy plans through the harness: the operations its plan asked for and those refused. */
  rehearsal?: { operations: number; rejected: readonly RejectedOperation[] };
}

export interface Strategy {
  name: string;
  /** True for strategies that peek at the future (the oracle). */
  upperBound?: boolean;
  /** Cut mode awaits the view: a strategy that asks a model answers later. */
  run(input: StrategyInput): StrategyOutput | Promise<StrategyOutput>;
}

/** A strategy that answers at once: every one but `selfgc-llm`. */
export interface SyncStrategy extends Strategy {
  run(input: StrategyInput): StrategyOutput;
}

/** Budget-driven baselines use this keep share when asked for `auto`: the paper's Self-GC rate. */
export const DEFAULT_BASELINE_KEEP = 0.55;
