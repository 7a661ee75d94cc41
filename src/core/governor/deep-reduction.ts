/**
 * The deep reduction: from a planner's rehearsal down to the target with the fallback, in one
 * plan (one cache break instead of several), through `reduceToTarget`. When nothing is left to
 * fold and the view is still over the window, the indexes of folded work shrink before anything
 * is pruned. Under the window, the names and index entries such a moment took come back into the
 * room the view leaves.
 */
import type { Ledger } from '../ledger.js';
import { typicalStepTokens } from '../ledger-measures.js';
import { isSpanFold, type PlannedOperation, type SpanFoldState, type ViewState } from '../operations.js';
import { planAgain, reduceToTarget } from '../reduce-to-target.js';
import { type Rehearsal, type RehearseOptions, rehearsePlan } from '../rehearse-plan.js';
import { withoutIndex } from '../render-replacement.js';
import { DEEP_REDUCTION } from '../tuning.js';
import { planFallback } from './fallback-plan.js';

/** The numbers one call governs by: the room for the view and what follows from it. */
export interface CallLimits {
  /** Tokens the view may take: the window less what the request needs besides its messages. */
  window: number;
  /** The share of `window` a commit aims for. */
  target: number;
  /** A commit that frees less than this waits for more, unless the view overflows. */
  minBatch: number;
  rehearse: RehearseOptions & { spanAnchorTokens: number };
}

/**
 * Go on from a rehearsal with the fallback, down to the target, in one plan. The first rounds
 * keep the last `keepSteps` steps whole; later ones may take everything before the latest turn,
 * or the next calls would overflow and commit one after another. Prunes come in only when span
 * folds leave the view over the window (then down to the target, so that the next calls do not
 * overflow at once); under the window the target is reached with span folds alone, which stay
 * recoverable.
 */
export function deepen(
  ledger: Ledger,
  limits: CallLimits,
  state: ViewState,
  first: Rehearsal,
  planner: string,
  keepSteps: number,
): Rehearsal {
  const { target, window } = limits;
  let bound = limits.rehearse.spanAnchorTokens;
  const reduced = reduceToTarget(first, {
    target,
    rounds: DEEP_REDUCTION.rounds,
    round(measured, index) {
      const keep = index < DEEP_REDUCTION.roundsKeepingRecent ? keepSteps : 0;
      let start = measured;
      let more = planFallback(ledger, start.stateAfter, start.tokensAfter, target, keep, false);
      if (more.length === 0 && start.tokensAfter > window) {
        // Nothing left to fold and still over the window: the indexes of folded work shrink
        // before anything is pruned (a pruned request takes its whole index with it).
        ({ rehearsal: start, bound } = shrinkIndexes(ledger, limits, state, start, bound));
        if (start.tokensAfter > window)
          more = planFallback(ledger, start.stateAfter, start.tokensAfter, target, keep);
      }
      // A round that kept the recent steps may find more in the next, which does not.
      if (more.length === 0) return { rehearsal: start, done: keep === 0 };
      const options = { ...limits.rehearse, spanAnchorTokens: bound };
      return { rehearsal: planAgain(ledger, state, start, more, planner, options) };
    },
  });
  const shrunk = shrinkIndexes(ledger, limits, state, reduced, bound);
  if (shrunk.rehearsal.tokensAfter > window) return withBareTombstones(ledger, limits, state, shrunk);
  // Under the window: what a moment over it took (names, index entries) comes back into the room
  // left, since this commit breaks the cache anyway; the later plans keep the names given back.
  const roomy = { ...limits, rehearse: { ...limits.rehearse, renameTombstones: true } };
  const named = renameTombstones(ledger, roomy, state, shrunk.rehearsal);
  return regrowIndexes(ledger, roomy, state, named);
}

/** Each pruned request of a rehearsal, pruned again for `reason` (its tombstone rendered anew). */
function prunedRequestsAgain(ledger: Ledger, rehearsal: Rehearsal, reason: string): PlannedOperation[] {
  return Object.entries(rehearsal.stateAfter).flatMap(([objectId, entry]) =>
    entry.operation === 'prune' && ledger.get(objectId)?.kind === 'conversation'
      ? [{ objectId, operation: 'prune' as const, reason }]
      : [],
  );
}

/** The span folds of a rehearsal, with their states. */
function spanFoldsOf(rehearsal: Rehearsal): Array<[string, SpanFoldState]> {
  return Object.entries(rehearsal.stateAfter).filter((entry): entry is [string, SpanFoldState] =>
    isSpanFold(entry[1]),
  );
}

/** The tokens the indexes of `spans` take (not their headers and pointers). */
function indexTokensOf(ledger: Ledger, spans: ReadonlyArray<[string, SpanFoldState]>): number {
  const counter = ledger.options.tokenCounter;
  return spans.reduce(
    (sum, [, entry]) => sum + (entry.tokens ?? 0) - counter.count(withoutIndex(entry.replacement)),
    0,
  );
}

/**
 * Under the window after the reduction: the indexes of folded work, those committed earlier too,
 * share the room the view leaves (less the shrink's margin) up to one level: an index that needs
 * less than an even share takes what it needs, and the others share the rest evenly. An index
 * cut to fit a moment of pressure (a large latest output) would otherwise stay cut for the rest
 * of the session. The room of a typical step stays free (the median of the latest), so that the
 * next call fits without another commit (each breaks the cache).
 */
function regrowIndexes(ledger: Ledger, limits: CallLimits, state: ViewState, start: Rehearsal): Rehearsal {
  const spans = spanFoldsOf(start);
  if (spans.length === 0) return start;
  const ceiling = Math.min(
    limits.window * DEEP_REDUCTION.shrinkMargin,
    limits.window - typicalStepTokens(ledger, DEEP_REDUCTION.headroomSteps),
  );
  const room = Math.floor(ceiling - start.tokensAfter);
  if (room <= 0) return start;
  const pool = indexTokensOf(ledger, spans) + room;
  // What each index would take with the whole pool to itself: those that need less than an even
  // share leave the rest to the others.
  const unbounded = tighten(ledger, limits, state, start, spans, pool);
  const level = waterLevel(
    spanFoldsOf(unbounded).map((span) => indexTokensOf(ledger, [span])),
    pool,
  );
  // A level at the pool (every index fits whole) is the rehearsal just made.
  let grown = level === pool ? unbounded : tighten(ledger, limits, state, start, spans, level);
  if (grown.tokensAfter > limits.window) grown = shrinkIndexes(ledger, limits, state, grown, level).rehearsal;
  return grown.tokensAfter <= limits.window && grown.tokensAfter > start.tokensAfter ? grown : start;
}

/**
 * The bound that shares `pool` among indexes that need `needs` tokens each: every index gets what
 * it needs up to the bound, and together they take the pool (or all they need, when that is
 * less). Never below an even share.
 */
export function waterLevel(needs: readonly number[], pool: number): number {
  const sorted = [...needs].map((need) => Math.max(0, need)).sort((a, b) => a - b);
  let left = pool;
  for (const [order, need] of sorted.entries()) {
    const share = left / (sorted.length - order);
    if (need >= share) return Math.floor(share);
    left -= need;
  }
  return Math.floor(Math.max(pool, sorted.at(-1) ?? 0));
}

/**
 * Under the window with room below the shrink's margin: the tombstones of pruned requests that a
 * moment over the window stripped of their names (`withBareTombstones`) name their work again.
 */
function renameTombstones(ledger: Ledger, limits: CallLimits, state: ViewState, start: Rehearsal): Rehearsal {
  const more = prunedRequestsAgain(ledger, start, 'fallback: the view has room for the names again');
  if (more.length === 0) return start;
  const named = planAgain(ledger, state, start, more, start.plan.planner, limits.rehearse);
  return named.tokensAfter <= limits.window * DEEP_REDUCTION.shrinkMargin ? named : start;
}

/**
 * Still over the window after the indexes shrank: the tombstones of pruned requests stop naming
 * their work (those committed earlier too), before the window's last resorts.
 */
function withBareTombstones(
  ledger: Ledger,
  limits: CallLimits,
  state: ViewState,
  { rehearsal, bound }: { rehearsal: Rehearsal; bound: number },
): Rehearsal {
  const more = prunedRequestsAgain(
    ledger,
    rehearsal,
    'fallback: tombstones stop naming work to fit the window',
  );
  if (more.length === 0) return rehearsal;
  const bare = planAgain(ledger, state, rehearsal, more, rehearsal.plan.planner, {
    ...limits.rehearse,
    spanAnchorTokens: bound,
    namedTombstones: false,
  });
  return bare.tokensAfter < rehearsal.tokensAfter ? bare : rehearsal;
}

/**
 * While the view is over the window: the indexes of folded work share the bound of one evenly,
 * and each pass takes from that bound the share of the indexes the overflow needs (and a tenth
 * more), since what an index holds under a bound is known only once it is rendered. Returns the
 * rehearsal and the bound it ended with, which later plans of the same reduction keep.
 *
 * Evenly, not by the valuator's score: a call's next steps often need names from several
 * stretches of work, and only a view that keeps some of each has all of them.
 */
export function shrinkIndexes(
  ledger: Ledger,
  limits: CallLimits,
  state: ViewState,
  start: Rehearsal,
  startBound: number,
): { rehearsal: Rehearsal; bound: number } {
  const { window } = limits;
  const fullBound = limits.rehearse.spanAnchorTokens;
  let rehearsal = start;
  let bound = startBound;
  for (let pass = 0; pass < DEEP_REDUCTION.shrinkPasses && rehearsal.tokensAfter > window; pass += 1) {
    const spans = spanFoldsOf(rehearsal);
    if (spans.length === 0) break;
    // What a bound can take: the indexes, not their headers and pointers.
    const indexTokens = indexTokensOf(ledger, spans);
    const kept = 1 - (rehearsal.tokensAfter - window) / Math.max(1, indexTokens);
    // From what the indexes hold now: a bound above that would change nothing.
    const shared = Math.min(bound, fullBound / spans.length, Math.max(0, indexTokens) / spans.length);
    const next = Math.floor(shared * Math.max(0, Math.min(DEEP_REDUCTION.shrinkMargin, kept)));
    const tightened = tighten(ledger, limits, state, rehearsal, spans, next);
    if (tightened.tokensAfter >= rehearsal.tokensAfter) break;
    rehearsal = tightened;
    bound = next;
  }
  return { rehearsal, bound };
}

/**
 * Fold the work of the requests `spans` names (those folded in `rehearsal`) again, their indexes
 * bound to `bound` tokens each: for when nothing else is left to fold or prune and the view is
 * still over the window (requests that state rules are pinned, each keeping the index of its
 * work; a latest step that fills most of the window), and to regrow them when it has room.
 */
function tighten(
  ledger: Ledger,
  limits: CallLimits,
  state: ViewState,
  rehearsal: Rehearsal,
  spans: ReadonlyArray<[string, SpanFoldState]>,
  bound: number,
): Rehearsal {
  const more = spans.map(([objectId, entry]) => ({
    objectId,
    operation: 'fold' as const,
    spanEnd: entry.spanEnd,
    indexTokens: bound,
    reason: 'fallback: the indexes of folded work shrink to fit the window',
  }));
  return planAgain(ledger, state, rehearsal, more, rehearsal.plan.planner, {
    ...limits.rehearse,
    spanAnchorTokens: bound,
  });
}

/** The fallback on its own, from the committed state: down to the target, everything before the latest turn may go. */
export function reduceWithFallback(ledger: Ledger, limits: CallLimits, state: ViewState): Rehearsal {
  const start = rehearsePlan(ledger, state, { planner: 'fallback', operations: [] }, limits.rehearse);
  return deepen(ledger, limits, state, start, 'fallback', 0);
}
