/**
 * The safest deterministic reduction, for when a planner could not bring the view under the
 * window: prune tool outputs oldest first (tombstones stay), then past conversations.
 */
import type { Ledger, LedgerObject } from '../ledger.js';
import type { PlannedOperation, ViewState } from '../operations.js';
import { latestTurnStart } from '../rehearse-plan.js';
import { renderTombstone } from '../render-replacement.js';

/**
 * Tokens the object occupies in the view now: its replacement if it has one, else its payload,
 * or for a conversation its span with the states of the objects inside it applied.
 */
function viewSize(ledger: Ledger, state: ViewState, object: LedgerObject): number {
  const counter = ledger.options.tokenCounter;
  const current = state[object.id];
  if (current) return counter.count(current.replacement);
  if (object.kind !== 'conversation') return object.tokens;
  let total = 0;
  for (let index = object.span.start; index < object.span.end; index += 1) {
    total += ledger.messageTokens[index] ?? 0;
    for (const inner of ledger.objectsByMessage.get(index) ?? []) {
      const innerState = inner === object ? undefined : state[inner.id];
      if (innerState) total += counter.count(innerState.replacement) - inner.tokens;
    }
  }
  return total;
}

export function planFallback(
  ledger: Ledger,
  state: ViewState,
  viewTokens: number,
  target: number,
): PlannedOperation[] {
  const protectFrom = latestTurnStart(ledger);
  const operations: PlannedOperation[] = [];
  let projected = viewTokens;
  // Savings already counted inside each conversation, so that pruning the conversation after its
  // outputs does not count them twice.
  const countedInside = new Map<string, number>();
  const candidates = ledger.objects.filter(
    (object) => !object.pinned && object.span.end <= protectFrom && state[object.id]?.operation !== 'prune',
  );
  for (const kind of ['function', 'conversation'] as const) {
    for (const object of candidates) {
      if (projected <= target) return operations;
      if (object.kind !== kind) continue;
      const tombstone = ledger.options.tokenCounter.count(renderTombstone(ledger, object));
      const saving = viewSize(ledger, state, object) - tombstone - (countedInside.get(object.id) ?? 0);
      // A tombstone bigger than what it replaces would grow the view: leave such objects alone.
      if (saving <= 0) continue;
      operations.push({
        objectId: object.id,
        operation: 'prune',
        reason: 'fallback: the view must fit the window',
      });
      projected -= saving;
      const conversation =
        object.kind === 'function' ? ledger.conversationAt(object.messageIndex) : undefined;
      if (conversation)
        countedInside.set(conversation.id, (countedInside.get(conversation.id) ?? 0) + saving);
    }
  }
  return operations;
}
