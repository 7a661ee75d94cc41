/**
 * The safest deterministic reduction, for when a planner could not bring the view under the
 * window. First the oldest work leaves through span folds (requests stay; the steps after them
 * fold into their anchors and a recovery pointer), then outputs are pruned oldest first
 * (tombstones stay), then past conversations, and last outputs leave with their call shells.
 */
import { isToolOutput, type Ledger, type LedgerObject } from '../ledger.js';
import { recentStepsStart } from '../ledger-measures.js';
import type { PlannedOperation, ViewState } from '../operations.js';
import { messageViewTokens, planSpanFolds } from '../plan-span-folds.js';
import { removesMessage } from '../project-view.js';
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
  for (let index = object.span.start; index < object.span.end; index += 1)
    total += messageViewTokens(ledger, state, index);
  return total;
}

/**
 * `keepSteps`: the latest assistant steps that stay whole (0: everything before the latest turn
 * may go, as the window guarantee needs; more when the reduction only aims at a target).
 * `prune`: false stops after the span folds.
 */
export function planFallback(
  ledger: Ledger,
  state: ViewState,
  viewTokens: number,
  target: number,
  keepSteps = 0,
  prune = true,
): PlannedOperation[] {
  const latest = latestTurnStart(ledger);
  const protectFrom = keepSteps > 0 ? Math.min(latest, recentStepsStart(ledger, latest, keepSteps)) : latest;
  const operations: PlannedOperation[] = [];
  let projected = planSpanFolds(
    ledger,
    state,
    operations,
    viewTokens,
    target,
    protectFrom,
    'fallback: the oldest work leaves the view, its request stays',
  );
  if (projected <= target || !prune) return operations;
  // Objects inside work folded above are out of the view already.
  const foldedUpTo = new Map(operations.map((operation) => [operation.objectId, operation.spanEnd ?? 0]));
  const insideFold = (object: LedgerObject) => {
    // A request is not inside the fold of its own work.
    if (!isToolOutput(object)) return false;
    const conversation = ledger.conversationAt(object.messageIndex);
    const end = conversation
      ? (foldedUpTo.get(conversation.id) ?? state[conversation.id]?.spanEnd)
      : undefined;
    return end !== undefined && removesMessage(conversation!, end, object.messageIndex);
  };
  // Savings already counted inside each conversation, so that pruning the conversation after its
  // outputs does not count them twice.
  const countedInside = new Map<string, number>();
  const candidates = ledger.objects.filter(
    (object) =>
      !object.pinned &&
      object.span.end <= protectFrom &&
      state[object.id]?.operation !== 'prune' &&
      !foldedUpTo.has(object.id) &&
      !insideFold(object),
  );
  for (const kind of ['function', 'conversation'] as const) {
    for (const object of candidates) {
      if (projected <= target) return operations;
      if (object.kind !== kind) continue;
      // What pruning saves is judged on the bare tombstone: the names a request's tombstone adds
      // go first when the view is still over the window (see the deep reduction).
      const tombstone = ledger.options.tokenCounter.count(renderTombstone(ledger, object, { entries: 0 }));
      const saving = viewSize(ledger, state, object) - tombstone - (countedInside.get(object.id) ?? 0);
      // A tombstone bigger than what it replaces would grow the view: leave such objects alone.
      if (saving <= 0) continue;
      operations.push({
        objectId: object.id,
        operation: 'prune',
        reason: 'fallback: the view must fit the window',
      });
      projected -= saving;
      const conversation = isToolOutput(object) ? ledger.conversationAt(object.messageIndex) : undefined;
      if (conversation)
        countedInside.set(conversation.id, (countedInside.get(conversation.id) ?? 0) + saving);
    }
  }
  if (projected <= target) return operations;
  dropShells(ledger, state, operations, projected, target, protectFrom, insideFold);
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
  insideFold: (object: LedgerObject) => boolean,
): number {
  let projected = viewTokens;
  const planned = new Map(operations.map((operation) => [operation.objectId, operation]));
  // Conversations removed whole (a span fold removes only the work `insideFold` knows about).
  const removedSpans = new Set(
    operations
      .filter(
        (operation) => operation.objectId.startsWith('conversation:') && operation.spanEnd === undefined,
      )
      .map((operation) => operation.objectId),
  );
  const shellsSeen = new Set<number>();
  for (const object of ledger.objects) {
    if (projected <= target) break;
    if (!isToolOutput(object) || object.pinned || object.span.end > protectFrom || insideFold(object))
      continue;
    if (state[object.id]?.dropShell || object.callMessageIndex === undefined) continue;
    const conversation = ledger.conversationAt(object.messageIndex);
    const whole = conversation ? state[conversation.id] : undefined;
    if (conversation && (removedSpans.has(conversation.id) || (whole && whole.spanEnd === undefined)))
      continue;
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
