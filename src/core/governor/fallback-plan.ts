/**
 * The safest deterministic reduction, for when a planner could not bring the view under the
 * window: prune tool outputs oldest first (tombstones stay), then past conversations, and last,
 * when the agent's own old steps are what overflows, prune outputs with their call shells.
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
  if (projected <= target) return operations;
  projected = dropShells(ledger, state, operations, projected, target, protectFrom);
  if (projected <= target) return operations;
  return foldSpansOfPinnedRequests(ledger, state, operations, projected, target, protectFrom);
}

/**
 * Last of all, when a runaway step inside a pinned request's work overflows the window: fold the
 * work that followed the request, oldest first; the request stays (needs `spansOfPinnedRequests`).
 */
function foldSpansOfPinnedRequests(
  ledger: Ledger,
  state: ViewState,
  operations: PlannedOperation[],
  viewTokens: number,
  target: number,
  protectFrom: number,
): PlannedOperation[] {
  let projected = viewTokens;
  for (const object of ledger.objects) {
    if (projected <= target) break;
    if (object.kind !== 'conversation' || !object.pinned || state[object.id] || object.span.end > protectFrom)
      continue;
    operations.push({
      objectId: object.id,
      operation: 'fold',
      reason: 'fallback: the work after a pinned request overflows the window',
    });
    let span = 0;
    for (let index = object.span.start + 1; index < object.span.end; index += 1)
      span += ledger.messageTokens[index] ?? 0;
    projected -= Math.max(0, span - 1000);
  }
  return operations;
}

/** Oldest first, outputs leave with the assistant step that asked for them. */
function dropShells(
  ledger: Ledger,
  state: ViewState,
  operations: PlannedOperation[],
  viewTokens: number,
  target: number,
  protectFrom: number,
): number {
  let projected = viewTokens;
  const planned = new Map(operations.map((operation) => [operation.objectId, operation]));
  const removedSpans = new Set(
    operations
      .filter((operation) => operation.objectId.startsWith('conversation:'))
      .map((operation) => operation.objectId),
  );
  const shellsSeen = new Set<number>();
  for (const object of ledger.objects) {
    if (projected <= target) break;
    if (object.kind !== 'function' || object.pinned || object.span.end > protectFrom) continue;
    if (state[object.id]?.dropShell || object.callMessageIndex === undefined) continue;
    const conversation = ledger.conversationAt(object.messageIndex);
    if (conversation && (removedSpans.has(conversation.id) || state[conversation.id])) continue;
    const existing = planned.get(object.id);
    if (existing) existing.dropShell = true;
    else
      operations.push({
        objectId: object.id,
        operation: 'prune',
        dropShell: true,
        reason: "fallback: the agent's old steps overflow the window",
      });
    // The shell's tokens leave once per assistant message; the tombstone goes too.
    if (!shellsSeen.has(object.callMessageIndex))
      projected -= ledger.messageTokens[object.callMessageIndex] ?? 0;
    shellsSeen.add(object.callMessageIndex);
    projected -= 20;
  }
  return projected;
}
