/**
 * Measures over a ledger that planners, rehearsal and ledger rows share.
 */
import { isToolOutput, type Ledger, type LedgerObject } from './ledger.js';

/** Tokens of the messages of an object's span, as the transcript holds them. */
export function spanTokens(ledger: Ledger, object: LedgerObject): number {
  let total = 0;
  for (let index = object.span.start; index < object.span.end; index += 1)
    total += ledger.messageTokens[index] ?? 0;
  return total;
}

/**
 * Tokens of what no reduction removes: the pinned objects (instructions, pinned requests and
 * outputs), as the transcript holds them. The outputs a client attached to a pinned request fold
 * apart from it: they count only when pinned themselves.
 */
export function pinnedTokens(ledger: Ledger): number {
  let total = 0;
  for (const object of ledger.objects) {
    if (!object.pinned) continue;
    if (isToolOutput(object)) {
      total += object.tokens;
      continue;
    }
    total += ledger.messageTokens[object.messageIndex] ?? 0;
    for (const inner of ledger.objectsByMessage.get(object.messageIndex) ?? [])
      if (inner.attachedTo === object.id) total -= inner.tokens;
  }
  return total;
}

/** `stepsAfter[i]`: assistant messages at index `i` or later. */
export function assistantStepsAfter(ledger: Ledger): number[] {
  const steps = new Array<number>(ledger.messages.length + 1).fill(0);
  for (let index = ledger.messages.length - 1; index >= 0; index -= 1) {
    steps[index] = (steps[index + 1] ?? 0) + (ledger.messages[index]?.role === 'assistant' ? 1 : 0);
  }
  return steps;
}

/** Where the last `steps` assistant steps before `end` begin: work from there on stays whole. */
export function recentStepsStart(ledger: Ledger, end: number, steps: number): number {
  let seen = 0;
  for (let index = end - 1; index >= 0; index -= 1) {
    if (ledger.messages[index]?.role === 'assistant') seen += 1;
    if (seen >= steps) return index;
  }
  return 0;
}

/**
 * The median tokens of the latest `steps` assistant steps (each its message and what followed it,
 * the outputs of its calls): about what the next call adds to the view, which one large output
 * does not set.
 */
export function typicalStepTokens(ledger: Ledger, steps: number): number {
  const sizes: number[] = [];
  let end = ledger.messages.length;
  while (sizes.length < steps && end > 0) {
    const start = recentStepsStart(ledger, end, 1);
    let total = 0;
    for (let index = start; index < end; index += 1) total += ledger.messageTokens[index] ?? 0;
    sizes.push(total);
    end = start;
  }
  sizes.sort((a, b) => a - b);
  return sizes[Math.floor(sizes.length / 2)] ?? 0;
}
