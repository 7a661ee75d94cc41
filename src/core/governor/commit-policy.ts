/**
 * Whether a rehearsed plan commits now, by the governor's commit policy (`CommitPolicy`). A
 * plan that frees nothing never commits; one the window forces (or a cache-blind governor's)
 * always does.
 */
import type { CommitPolicy } from './governor-types.js';

/** The paper's rule: a plan that frees at least this share of the view commits at once. */
export const PAPER_COMMIT_SHARE = 0.3;

export interface CommitCase {
  policy: CommitPolicy;
  /** View tokens before the plan, and the tokens it frees. */
  tokensBefore: number;
  freed: number;
  /** The view overflows the window, or the cache rule is off: commit whatever frees tokens. */
  forced: boolean;
  /** The plan was held pending and this run is its boundary. */
  held: boolean;
  /** The smallest commit worth a cache break (`triggers.minBatch`). */
  minBatch: number;
  /** The cost model's verdict (`weighCommit`). */
  pays: boolean;
}

export function commitsNow(entry: CommitCase): boolean {
  if (entry.freed <= 0) return false;
  if (entry.forced) return true;
  if (entry.policy === 'paper') return entry.held || entry.freed >= PAPER_COMMIT_SHARE * entry.tokensBefore;
  // Small edits wait until together they are worth breaking the cache for.
  return entry.freed >= entry.minBatch && entry.pays;
}

/**
 * How many more tokens a plan the cost rule deferred would have had to free to commit: the saving
 * it lacked against the cache break (and the planner's call), at the saving per token it had, or
 * what it lacked of the smallest batch, whichever is more. The view must grow by about as much
 * before a plan on it can pay: new work frees about its own tokens at most, and the latest turn,
 * out of that plan's reach, counts as grown (`TriggerBookkeeping.deferral`).
 */
export function breakEvenGrowth(
  economics: { saving: number; breakCost: number; gcCost: number },
  freed: number,
  minBatch: number,
): number {
  const batch = Math.max(0, minBatch - freed);
  if (freed <= 0 || economics.saving <= 0) return batch;
  const lacking = Math.max(0, economics.breakCost + economics.gcCost - economics.saving);
  return Math.max(batch, Math.ceil((lacking * freed) / economics.saving));
}
