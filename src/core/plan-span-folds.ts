/**
 * Span folds as a plan: the work after a request folds, oldest first, while the request stays.
 * Shared by the embedded planner (under pressure, keeping the recent steps) and the fallback
 * (down to the latest turn).
 */

import { indexEntryChars } from './index-entries.js';
import { carriesOutput, isToolOutput, type Ledger } from './ledger.js';
import type { PlannedOperation, ViewState } from './operations.js';
import { autoAnchorBudget } from './rehearse-plan.js';
import { tokensForChars } from './tokens.js';
import { EMBEDDED_PLANNER, FOLD_INDEX } from './tuning.js';

/** Tokens message `index` occupies in the view under `state` (objects inside it at their state). */
export function messageViewTokens(ledger: Ledger, state: ViewState, index: number): number {
  let total = ledger.messageTokens[index] ?? 0;
  for (const inner of ledger.objectsByMessage.get(index) ?? []) {
    const innerState = isToolOutput(inner) ? state[inner.id] : undefined;
    if (innerState) total += ledger.options.tokenCounter.count(innerState.replacement) - inner.tokens;
  }
  return total;
}

/**
 * Span folds, oldest conversation first: each folds the work after its request just far enough
 * to reach the target, and never at or past `limit` (the latest turn, or the recent steps a
 * planner keeps). Pushes the operations; returns the projected view size. `counted`: tokens by
 * message index that operations planned earlier already took off `viewTokens` (not freed twice).
 */
export function planSpanFolds(
  ledger: Ledger,
  state: ViewState,
  operations: PlannedOperation[],
  viewTokens: number,
  target: number,
  limit: number,
  reason: string,
  counted: ReadonlyMap<number, number> = new Map(),
): number {
  let projected = viewTokens;
  for (const conversation of ledger.objects) {
    if (projected <= target) break;
    if (conversation.kind !== 'conversation') continue;
    const current = state[conversation.id];
    if (current && current.spanEnd === undefined) continue;
    // A span fold planned earlier goes deeper; a request planned to fold whole is done.
    const planned = operations.find((operation) => operation.objectId === conversation.id);
    if (planned && planned.spanEnd === undefined) continue;
    const from = planned?.spanEnd ?? current?.spanEnd ?? conversation.span.start + 1;
    let end = Math.min(conversation.span.end, limit);
    for (let index = from; index < end; index += 1) {
      if (ledger.objectsByMessage.get(index)?.some((inner) => inner.pinned)) end = index;
    }
    let freed = 0;
    let folded = 0;
    let entryChars = 0;
    let spanEnd: number | undefined;
    for (let index = from; index < end; index += 1) {
      freed += messageViewTokens(ledger, state, index) - (counted.get(index) ?? 0);
      folded += ledger.messageTokens[index] ?? 0;
      entryChars += indexEntryChars(ledger.messages[index]!);
      const boundary = index + 1;
      if (carriesOutput(ledger, boundary)) continue;
      spanEnd = boundary;
      if (projected - (freed - spanIndexTokens(folded, entryChars)) <= target) break;
    }
    if (spanEnd === undefined) continue;
    if (planned) planned.spanEnd = spanEnd;
    else operations.push({ objectId: conversation.id, operation: 'fold', spanEnd, reason });
    projected -= Math.max(0, freed - spanIndexTokens(folded, entryChars));
    projected -= foldAttached(ledger, state, operations, conversation.span.start, reason);
  }
  return projected;
}

/**
 * The request stays when its work folds, and so would the outputs a client attached to it (the
 * files Claude Code sends with a request): they fold too, each on its own, but for those too small
 * to be worth an operation (Cline's environment details are often a line or two). Returns the
 * tokens they free, about.
 */
function foldAttached(
  ledger: Ledger,
  state: ViewState,
  operations: PlannedOperation[],
  request: number,
  reason: string,
): number {
  let freed = 0;
  for (const inner of ledger.objectsByMessage.get(request) ?? []) {
    if (inner.attachedTo === undefined || inner.pinned || state[inner.id]) continue;
    if (inner.tokens < EMBEDDED_PLANNER.minTokens) continue;
    if (operations.some((operation) => operation.objectId === inner.id)) continue;
    operations.push({ objectId: inner.id, operation: 'fold', reason });
    const left = EMBEDDED_PLANNER.foldFrameTokens + 4 * autoAnchorBudget(inner.tokens);
    freed += Math.max(0, inner.tokens - left);
  }
  return freed;
}

/**
 * What a planner counts for the index of folded messages of `folded` tokens whose index entries
 * take `entryChars` characters: header and pointer, and the entries its budget has room for, at
 * about four characters a token.
 */
export function spanIndexTokens(folded: number, entryChars: number): number {
  return (
    EMBEDDED_PLANNER.foldFrameTokens +
    tokensForChars(Math.min(entryChars, FOLD_INDEX.charsPerAnchor * autoAnchorBudget(folded)))
  );
}
