/**
 * Plan, rehearse, plan again on what was measured. A planner estimates what each operation
 * frees; only rehearsal knows (a fold's index is measured once it is rendered). While the
 * measured view is over the target, each round plans on the measured state, and its operations
 * take the place of earlier ones on the same objects. The governor's deep reduction, its window
 * fallback and cut-mode replay all reduce through this one loop, so evaluation measures the code
 * that ships.
 */
import type { Ledger } from './ledger.js';
import { type PlannedOperation, supersedeOperations, type ViewState } from './operations.js';
import { type Rehearsal, type RehearseOptions, rehearsePlan } from './rehearse-plan.js';

/** What one round leaves: the rehearsal the next round starts from. */
export interface ReductionRound {
  rehearsal: Rehearsal;
  /** No later round can take more: the reduction ends here. */
  done?: boolean;
}

export interface ReduceToTargetOptions {
  /** The view size a reduction aims for. */
  target: number;
  /** Rounds at most after the first rehearsal. */
  rounds: number;
  /** One round, on what the last one measured (`index` counts from 0). */
  round(measured: Rehearsal, index: number): ReductionRound;
}

export function reduceToTarget(first: Rehearsal, options: ReduceToTargetOptions): Rehearsal {
  let measured = first;
  for (let index = 0; index < options.rounds && measured.tokensAfter > options.target; index += 1) {
    const next = options.round(measured, index);
    measured = next.rehearsal;
    if (next.done) break;
  }
  return measured;
}

/**
 * The plan `measured` rehearsed, with `more` in the place of earlier operations on the same
 * objects, rehearsed again from the committed `state` under `planner`'s name.
 */
export function planAgain(
  ledger: Ledger,
  state: ViewState,
  measured: Rehearsal,
  more: readonly PlannedOperation[],
  planner: string,
  options: RehearseOptions,
): Rehearsal {
  const operations = supersedeOperations(measured.plan.operations, more);
  return rehearsePlan(ledger, state, { planner, operations }, options);
}
