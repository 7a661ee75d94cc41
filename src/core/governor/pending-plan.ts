/**
 * Pending plans. A plan the commit rule defers is held with the session state and taken up at
 * the next governance run — the next safe turn boundary — instead of asking the planner again.
 * There it is re-validated against the current ledger: the content it was planned on must still
 * be there, and rehearsal drops the operations that no longer apply (objects gone, pinned,
 * already folded by another commit). What is left is committed there, or the plan is dropped.
 */
import type { Ledger } from '../ledger.js';
import type { Plan, RejectedOperation, ViewState } from '../operations.js';
import type { PlannerCost } from '../planners/planner.js';
import { bindingAt, holds } from '../reconcile-state.js';
import type { Rehearsal, RehearseOptions } from '../rehearse-plan.js';
import { rehearsePlan } from '../rehearse-plan.js';
import type { PendingPlan } from '../session-state.js';
import type { CommitPolicy } from './governor-types.js';

/** What re-validation made of a pending plan. */
export type PendingCheck =
  /** The operations that still apply, and those that no longer do. */
  | { status: 'valid'; plan: Plan; dropped: RejectedOperation[] }
  /** Nothing of it applies any more, and why. */
  | { status: 'dropped'; reason: string };

/** Re-validate `pending` against the transcript `ledger` holds now and the committed `state`. */
export function revalidatePendingPlan(
  ledger: Ledger,
  state: ViewState,
  pending: PendingPlan,
  options: RehearseOptions,
): PendingCheck {
  if (!holds(ledger, pending.binding)) {
    return {
      status: 'dropped',
      reason: `the transcript it was planned on (${pending.binding.end} messages) changed`,
    };
  }
  const rehearsal = rehearsePlan(ledger, state, pending.plan, options);
  if (rehearsal.accepted.length === 0) {
    return {
      status: 'dropped',
      reason:
        rehearsal.rejected.length === 0
          ? 'it holds no operations'
          : `none of its operations applies any more (${describeRejected(rehearsal.rejected)})`,
    };
  }
  return {
    status: 'valid',
    plan: { planner: pending.plan.planner, operations: rehearsal.accepted.map((entry) => entry.operation) },
    dropped: rehearsal.rejected,
  };
}

/** `function:bash:3 (no-op), …`, the first few. */
export function describeRejected(rejected: readonly RejectedOperation[]): string {
  const shown = rejected.slice(0, 4).map((entry) => `${entry.operation.objectId} (${entry.reason})`);
  return rejected.length > shown.length ? `${shown.join(', ')}, …` : shown.join(', ');
}

/**
 * The plan to hold when the commit rule defers `rehearsal`, or undefined when none is worth
 * holding. The paper's policy holds every deferred plan until the boundary. The cost model holds
 * only a plan that cost a model call, so the call is not repeated; a plan that cost nothing (the
 * embedded planner's) is made again on the longer transcript, which it sees whole.
 */
export function planToHold(
  ledger: Ledger,
  rehearsal: Rehearsal,
  cost: PlannerCost | undefined,
  policy: CommitPolicy,
): PendingPlan | undefined {
  const spent = (cost?.inputTokens ?? 0) + (cost?.outputTokens ?? 0);
  if (policy === 'cost' && spent === 0) return undefined;
  if (rehearsal.accepted.length === 0 || ledger.messages.length === 0) return undefined;
  return {
    plan: { planner: rehearsal.plan.planner, operations: rehearsal.accepted.map((entry) => entry.operation) },
    binding: bindingAt(ledger, ledger.messages.length),
  };
}
