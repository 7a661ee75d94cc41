/**
 * The safest deterministic reduction, for when a planner could not bring the view under the
 * window: prune tool outputs oldest first (tombstones stay), then past conversations.
 */
import type { Ledger } from '../ledger.js';
import type { PlannedOperation, ViewState } from '../operations.js';
import { latestTurnStart } from '../rehearse-plan.js';

export function planFallback(ledger: Ledger, state: ViewState, viewTokens: number, target: number): PlannedOperation[] {
  const protectFrom = latestTurnStart(ledger);
  const operations: PlannedOperation[] = [];
  let projected = viewTokens;
  const candidates = ledger.objects.filter((object) => !object.pinned && object.span.end <= protectFrom && state[object.id]?.operation !== 'prune');
  for (const kind of ['function', 'conversation'] as const) {
    for (const object of candidates) {
      if (projected <= target) return operations;
      if (object.kind !== kind) continue;
      operations.push({ objectId: object.id, operation: 'prune', reason: 'fallback: the view must fit the window' });
      projected -= Math.max(0, object.tokens - 20);
    }
  }
  return operations;
}
