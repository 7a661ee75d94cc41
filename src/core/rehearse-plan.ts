/**
 * Rehearsal: validate a plan against the ledger and the committed state, apply it to a copy,
 * and measure it. Nothing here touches a store or the live session: a rejected plan (or a
 * rehearsal that is never committed) leaves no trace.
 */
import { carriesOutput, isToolOutput, type Ledger, type LedgerObject, turnStartOf } from './ledger.js';
import { liveTokens, rulesOf } from './object-kinds.js';
import {
  type AcceptedOperation,
  isSpanFold,
  type ObjectState,
  type Plan,
  type PlannedOperation,
  type RejectedOperation,
  type RejectionReason,
  type ViewState,
} from './operations.js';
import { coveredByConversation, type ProjectOptions, projectView, removesMessage } from './project-view.js';
import {
  conversationFoldParts,
  createShownTexts,
  type FoldParts,
  foldKey,
  foldParts,
  indexBudgetChars,
  isMaskable,
  joinFoldParts,
  type MaskOptions,
  objectText,
  renderMask,
  renderTombstone,
  type ShownTexts,
  shortenIndex,
  spanFoldParts,
} from './render-replacement.js';
import { CHARS_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS, type TokenCounter, tokensForChars } from './tokens.js';
import { FOLD_INDEX } from './tuning.js';
import { type EntryModel, type EntryScorer, entryScorers } from './valuator/entry-model.js';

export interface RehearseOptions {
  /** Objects whose payload message is at or after this index belong to the latest turn. */
  protectFrom?: number;
  /** Leave a one-line tombstone for pruned objects (default true). */
  tombstones?: boolean;
  /**
   * A pruned request's tombstone names the best entries of its work (default true); false when
   * the view is over the window after every other reduction, and the names go first.
   */
  namedTombstones?: boolean;
  /**
   * A request pruned again whose tombstone was stripped of its names gets them back (default
   * false): the view has room again for what a moment over the window took.
   */
  renameTombstones?: boolean;
  /**
   * Key anchors a fold keeps: a number, or `auto` (the default): about one per 12 tokens of the
   * object, leaving out those the user or the agent already wrote, which stay visible in their
   * own messages. The fold then reads as an index of what the object held.
   */
  foldAnchors?: number | 'auto';
  mask?: MaskOptions;
  /** Passed to projection when measuring. */
  project?: ProjectOptions;
  /** Commit id stamped on the new states (the commit path fills it in). */
  commitId?: string;
  /**
   * With `foldAnchors: 'auto'`, a cap on the budget of the index of folded messages (a span, or a
   * whole conversation), counted in anchors of about six tokens (default: no cap).
   */
  spanAnchors?: number;
  /**
   * And the most tokens such an index may take as counted, its header and pointer aside (default:
   * no cap; the governor sets a share of the window, `GOVERNOR.spanIndexShare`).
   */
  spanAnchorTokens?: number;
  /**
   * The valuator's model: fold indexes list their entries by its future-use score, so their room
   * goes to what later steps will quote (default: none, the extractor's ranking).
   */
  entryModel?: EntryModel;
  /**
   * Verdicts already judged in this reduction (`createVerdictMemo`): operations it rehearses
   * again from the same committed state under the same options are not judged again.
   */
  verdicts?: VerdictMemo;
}

export interface Rehearsal {
  plan: Plan;
  accepted: AcceptedOperation[];
  rejected: RejectedOperation[];
  stateBefore: ViewState;
  stateAfter: ViewState;
  /** View tokens before and after the plan. */
  tokensBefore: number;
  tokensAfter: number;
  /** First message index whose view changes: everything after it is re-sent uncached. */
  earliestEdit: number | undefined;
}

/** Where the latest turn starts in the ledger (`turnStartOf`, text-protocol observations counted as outputs). */
export function latestTurnStart(ledger: Ledger): number {
  return turnStartOf(ledger.messages, (index) => carriesOutput(ledger, index));
}

const STRENGTH: Record<string, number> = { prune: 3, fold: 2, mask: 1, expand: 0, keep: -1 };

/**
 * The first pinned object inside a conversation's span (an output attached to its request too):
 * removing the span would remove it too.
 */
function pinnedWithin(ledger: Ledger, conversation: LedgerObject): LedgerObject | undefined {
  for (let index = conversation.span.start; index < conversation.span.end; index += 1) {
    const pinned = ledger.objectsByMessage
      .get(index)
      ?.find((inner) => inner !== conversation && inner.pinned);
    if (pinned) return pinned;
  }
  return undefined;
}

/**
 * An anchor budget proportional to the payload, with a floor, at most `cap` (none by default: a
 * cap loses the names later steps quote from big file reads and long requests; most objects
 * hold fewer anchors than their budget anyway).
 */
export function autoAnchorBudget(tokens: number, cap = Number.POSITIVE_INFINITY): number {
  return Math.max(FOLD_INDEX.minAnchors, Math.min(cap, Math.floor(tokens / FOLD_INDEX.tokensPerAnchor)));
}

type Verdict = { reason: RejectionReason; detail: string } | AcceptedOperation;

/**
 * The verdicts of one reduction, by committed state. A reduction rehearses the whole plan from
 * the committed state round after round, and each round changes a few operations of it; a
 * verdict depends on the ledger, that state, the operation and the options alone, so the others
 * are taken as judged. A memo serves one ledger and one valuator model, and the ledger's size
 * is part of every key: indexing more, or counting what was bounded, judges anew.
 */
export interface VerdictMemo {
  ledger?: Ledger;
  entryModel?: EntryModel | undefined;
  readonly byState: WeakMap<ViewState, Map<string, Verdict>>;
}

export function createVerdictMemo(): VerdictMemo {
  return { byState: new WeakMap() };
}

/** `judgeOperation` for every operation of one rehearsal, through the options' memo if any. */
function judgeFor(
  ledger: Ledger,
  state: ViewState,
  options: RehearseOptions,
  protectFrom: number,
): (operation: PlannedOperation) => Verdict {
  const judge = (operation: PlannedOperation) =>
    judgeOperation(ledger, state, operation, options, protectFrom);
  const memo = options.verdicts;
  if (memo === undefined) return judge;
  if (memo.ledger === undefined) {
    memo.ledger = ledger;
    memo.entryModel = options.entryModel;
  }
  if (memo.ledger !== ledger || memo.entryModel !== options.entryModel) return judge;
  let known = memo.byState.get(state);
  if (known === undefined) {
    known = new Map();
    memo.byState.set(state, known);
  }
  // What judging reads besides the state and the operation (`project` only measures the view).
  const { verdicts: _memo, project: _project, entryModel: _model, ...judged } = options;
  const contextOf = (read: object) =>
    JSON.stringify([ledger.messages.length, ledger.totalTokens, protectFrom, read]);
  // Only a prune reads the tombstone options, and a span fold given its own index bound does not
  // read the shared one: a round that changes those alone finds the other verdicts judged.
  const { tombstones: _t, namedTombstones: _n, renameTombstones: _r, ...notPruning } = judged;
  const { spanAnchorTokens: _s, ...boundOwn } = notPruning;
  const contexts = { prune: contextOf(judged), other: contextOf(notPruning), bounded: contextOf(boundOwn) };
  const contextFor = (operation: PlannedOperation) =>
    operation.operation === 'prune'
      ? contexts.prune
      : operation.operation === 'fold' &&
          operation.spanEnd !== undefined &&
          operation.indexTokens !== undefined
        ? contexts.bounded
        : contexts.other;
  return (operation) => {
    const key = `${contextFor(operation)}\n${JSON.stringify(operation)}`;
    let verdict = known.get(key);
    if (verdict === undefined) {
      verdict = judge(operation);
      known.set(key, verdict);
    }
    return verdict;
  };
}

function judgeOperation(
  ledger: Ledger,
  state: ViewState,
  operation: PlannedOperation,
  options: RehearseOptions,
  protectFrom: number,
): Verdict {
  const object = ledger.get(operation.objectId);
  if (!object) return { reason: 'unknown-object', detail: `no object ${operation.objectId} in this session` };
  if (operation.spanEnd !== undefined && operation.operation === 'fold' && object.kind === 'conversation') {
    return judgeSpanFold(ledger, state, operation, object, options, protectFrom);
  }
  const spanFolded = isSpanFold(state[object.id]);
  if (operation.operation === 'expand' && spanFolded) {
    // Undoing a span fold brings the work back; the request never left.
    return {
      operation,
      state: undefined,
      tokensBefore: ledger.options.tokenCounter.count(state[object.id]!.replacement),
      tokensAfter: liveTokens(ledger, object),
    };
  }
  if (object.pinned)
    return { reason: 'pinned', detail: `${object.id} is pinned (${object.pinReason ?? 'pin'})` };
  const pinnedInside = object.kind === 'conversation' ? pinnedWithin(ledger, object) : undefined;
  if (pinnedInside && operation.operation !== 'expand' && operation.operation !== 'keep') {
    return {
      reason: 'pinned',
      detail: `${object.id} holds pinned ${pinnedInside.id} (${pinnedInside.pinReason ?? 'pin'})`,
    };
  }
  if (object.messageIndex >= protectFrom || object.span.end > protectFrom) {
    return { reason: 'latest-turn', detail: `${object.id} belongs to the latest turn` };
  }
  const rules = rulesOf(object);
  const refused = rules.refuses(object, operation.operation);
  if (refused) return { reason: 'not-applicable', detail: refused };
  if (object.kind === 'conversation' && object.span.end >= ledger.messages.length) {
    return { reason: 'open-conversation', detail: `${object.id} is still running` };
  }
  const current = state[object.id];
  const counter = ledger.options.tokenCounter;
  const before = current ? counter.count(current.replacement) : liveTokens(ledger, object);
  const overhead = rules.replacementOverhead;
  const commitId = options.commitId ?? 'pending';
  const accept = (proposed: ObjectState | undefined, tokens?: number): AcceptedOperation => {
    // Counted once here (or by the caller, which passes the count); projection reads it instead
    // of counting again.
    const next = proposed && { ...proposed, tokens: tokens ?? counter.count(proposed.replacement) };
    return {
      operation,
      state: next,
      tokensBefore: before,
      tokensAfter: next ? next.tokens + (next.replacement ? overhead : 0) : liveTokens(ledger, object),
    };
  };
  switch (operation.operation) {
    case 'keep':
      return { reason: 'no-op', detail: 'keep changes nothing' };
    case 'expand':
      if (!current) return { reason: 'no-op', detail: `${object.id} is already live` };
      if (current.operation === 'prune')
        return {
          reason: 'not-applicable',
          detail: 'pruned objects are not promised back; undo the commit instead',
        };
      return accept(undefined);
    case 'fold': {
      if (current?.operation === 'fold' || current?.operation === 'prune')
        return { reason: 'no-op', detail: `${object.id} is already ${current.operation}ed` };
      const auto = (options.foldAnchors ?? 'auto') === 'auto';
      const summary = {
        ...(operation.summary ? { summary: operation.summary } : {}),
        ...ranking(ledger, options),
        shownElsewhere: shownElsewhere(ledger, state, object),
      };
      const { replacement, tokens } =
        object.kind === 'conversation'
          ? foldWithinBound(
              ledger.options.tokenCounter,
              conversationFoldParts(ledger, object, {
                ...summary,
                ...messagesIndexBudget(liveTokens(ledger, object), options),
              }),
              options.spanAnchorTokens,
            )
          : foldWithinBound(
              ledger.options.tokenCounter,
              foldParts(ledger, object, {
                ...summary,
                maxAnchors: auto ? autoAnchorBudget(object.tokens) : (options.foldAnchors as number),
                // A folded conversation takes its own messages with it: only outputs may omit what
                // was said.
                ...(auto ? { omitAnchors: ledger.spokenAnchors } : {}),
              }),
              // Long names (a listing of paths) must not make the index as big as the output.
              auto ? outputIndexTokens(object.tokens) : undefined,
            );
      return accept({ operation: 'fold', replacement, commitId }, tokens);
    }
    case 'mask': {
      if (current) return { reason: 'no-op', detail: `${object.id} is already ${current.operation}ed` };
      const textValue = objectText(ledger, object);
      if (!isMaskable(textValue))
        return { reason: 'not-maskable', detail: 'short, a stack trace, a diff or a sparse table' };
      return accept({
        operation: 'mask',
        replacement: renderMask(object, textValue, options.mask, foldKey(ledger, object.id)),
        commitId,
      });
    }
    case 'prune': {
      const dropShell = operation.dropShell === true && rules.dropsShell;
      const already = { reason: 'no-op', detail: `${object.id} is already pruned` } as const;
      // Pruned again: only to drop the shell, to strip a tombstone of its names (so that a plan
      // naming a pruned request does not rewrite its tombstone, and break the cache, for nothing),
      // or, with `renameTombstones`, to give a tombstone stripped of its names its names back.
      const again = current?.operation === 'prune';
      const named = options.namedTombstones !== false;
      const renaming =
        again &&
        named &&
        !dropShell &&
        options.renameTombstones === true &&
        current.replacement === renderTombstone(ledger, object, { entries: 0 });
      if (again && !renaming && (current.dropShell === true || (!dropShell && named))) return already;
      const replacement =
        dropShell || options.tombstones === false
          ? ''
          : renderTombstone(ledger, object, {
              ...ranking(ledger, options),
              shownElsewhere: shownElsewhere(ledger, state, object),
              ...(named ? {} : { entries: 0 }),
            });
      if (
        again &&
        !dropShell &&
        (renaming
          ? replacement.length <= current.replacement.length
          : replacement.length >= current.replacement.length)
      )
        return already;
      return accept({ operation: 'prune', replacement, commitId, ...(dropShell ? { dropShell: true } : {}) });
    }
  }
}

/**
 * A span fold: the work after a request, up to `spanEnd`, leaves the view with its anchors and
 * a pointer; the request stays, and so do the later steps. The end moves back to a step
 * boundary (never between a call and its result) and may not reach the latest turn.
 */
function judgeSpanFold(
  ledger: Ledger,
  state: ViewState,
  operation: PlannedOperation,
  object: LedgerObject,
  options: RehearseOptions,
  protectFrom: number,
): Verdict {
  let spanEnd = Math.min(operation.spanEnd ?? object.span.end, object.span.end, protectFrom);
  while (spanEnd > object.span.start + 1 && carriesOutput(ledger, spanEnd)) spanEnd -= 1;
  if (spanEnd <= object.span.start + 1) {
    return { reason: 'latest-turn', detail: `${object.id} has no finished work before the latest turn` };
  }
  for (let index = object.span.start + 1; index < spanEnd; index += 1) {
    const pinned = ledger.objectsByMessage.get(index)?.find((inner) => inner.pinned);
    if (pinned) return { reason: 'pinned', detail: `the work after ${object.id} holds pinned ${pinned.id}` };
  }
  const current = state[object.id];
  const alreadyFolded = { reason: 'no-op' as const, detail: `${object.id} is already folded that far` };
  // The same span again is a change only with a smaller index (the fallback's tighter budget),
  // or with another size the reduction gave it (`indexTokens`: an index cut to fit grows back).
  const again = current?.operation === 'fold' && current.spanEnd === spanEnd;
  if (current && !again && (current.operation === 'prune' || (current.spanEnd ?? object.span.end) >= spanEnd))
    return alreadyFolded;
  let before = 0;
  for (let index = object.span.start + 1; index < spanEnd; index += 1)
    before += ledger.messageTokens[index] ?? 0;
  const bound = operation.indexTokens ?? options.spanAnchorTokens;
  const { replacement, tokens } = foldWithinBound(
    ledger.options.tokenCounter,
    spanFoldParts(ledger, object, spanEnd, {
      ...(operation.summary ? { summary: operation.summary } : {}),
      ...messagesIndexBudget(before, bound === undefined ? options : { ...options, spanAnchorTokens: bound }),
      ...ranking(ledger, options),
      shownElsewhere: shownElsewhere(ledger, state, object),
    }),
    bound,
  );
  const shown = again ? (current.tokens ?? ledger.options.tokenCounter.count(current.replacement)) : 0;
  if (again && (operation.indexTokens === undefined ? tokens >= shown : tokens === shown))
    return alreadyFolded;
  const next: ObjectState = {
    operation: 'fold',
    replacement,
    tokens,
    commitId: options.commitId ?? 'pending',
    keepRequest: true,
    spanEnd,
  };
  return {
    operation: { ...operation, spanEnd },
    state: next,
    tokensBefore: again ? shown + MESSAGE_OVERHEAD_TOKENS : before,
    tokensAfter: tokens + MESSAGE_OVERHEAD_TOKENS,
  };
}

/**
 * The budget of the index of folded messages (a span, or a whole conversation) of `tokens`
 * tokens. The automatic budget is one of characters, since a line of code takes the room of a few
 * names, and at most `spanAnchorTokens`.
 */
function messagesIndexBudget(tokens: number, options: RehearseOptions) {
  const auto = (options.foldAnchors ?? 'auto') === 'auto';
  const budget = auto ? autoAnchorBudget(tokens, options.spanAnchors) : (options.foldAnchors as number);
  return {
    maxAnchors: auto ? Number.POSITIVE_INFINITY : budget,
    maxAnchorChars: Math.min(
      CHARS_PER_TOKEN * (options.spanAnchorTokens ?? Number.POSITIVE_INFINITY),
      FOLD_INDEX.charsPerAnchor * budget,
    ),
  };
}

/** The tokens an output's automatic index may take: its anchor budget at about six tokens each. */
function outputIndexTokens(tokens: number): number {
  return tokensForChars(FOLD_INDEX.charsPerAnchor * autoAnchorBudget(tokens));
}

/** The pinned objects' texts of each ledger, indexed as it grows (objects are only appended). */
const pinnedTexts = new WeakMap<Ledger, { seen: number; shown: ShownTexts }>();

function pinnedShown(ledger: Ledger): ShownTexts {
  let entry = pinnedTexts.get(ledger);
  if (entry === undefined) {
    entry = { seen: 0, shown: createShownTexts() };
    pinnedTexts.set(ledger, entry);
  }
  for (; entry.seen < ledger.objects.length; entry.seen += 1) {
    const object = ledger.objects[entry.seen]!;
    if (object.pinned) entry.shown.add(objectText(ledger, object));
  }
  return entry.shown;
}

/** The indexes of a state's folds that are in its view, each at where its object starts. */
const foldIndexes = new WeakMap<ViewState, ShownTexts>();

function foldIndexesOf(ledger: Ledger, state: ViewState): ShownTexts {
  let shown = foldIndexes.get(state);
  if (shown !== undefined) return shown;
  shown = createShownTexts();
  for (const [id, current] of Object.entries(state)) {
    const object = ledger.get(id);
    // An output inside a folded span of its request is out of the view, and its index with it.
    if (current.operation !== 'fold' || object === undefined || coveredByConversation(ledger, state, object))
      continue;
    shown.add(current.replacement, object.span.start);
  }
  foldIndexes.set(state, shown);
  return shown;
}

/**
 * What a new fold index of `object` need not repeat: what stays in every view (the pinned
 * objects) and the indexes of the folds before it. Never a later fold's: two indexes that each
 * left a name to the other would both lose it.
 */
function shownElsewhere(
  ledger: Ledger,
  state: ViewState,
  object: LedgerObject,
): Pick<ShownTexts, 'contains'> {
  const pinned = pinnedShown(ledger);
  const folds = foldIndexesOf(ledger, state);
  return { contains: (value) => pinned.contains(value) || folds.contains(value, object.span.start) };
}

/** The order of entries within a message under the valuator's model, for the ledger as it stands. */
function ranking(ledger: Ledger, options: RehearseOptions): { rankEntry?: EntryScorer } {
  return options.entryModel ? { rankEntry: entryScorers(options.entryModel, ledger).rank } : {};
}

/**
 * A fold of messages, its index within `bound` tokens as counted (its header and pointer aside).
 * The index budget is one of characters, at about four a token; text that takes more tokens a
 * character (hashes, ids, dense code) would overrun the bound by as much, so such an index is cut
 * by the share it overran.
 */
export function foldWithinBound(
  counter: TokenCounter,
  parts: FoldParts,
  bound: number | undefined,
): { replacement: string; tokens: number } {
  const replacement = joinFoldParts(parts);
  const tokens = counter.count(replacement);
  if (bound === undefined || tokens <= bound) return { replacement, tokens };
  const frame = joinFoldParts({ ...parts, anchors: [] });
  const frameTokens = counter.count(frame);
  const indexTokens = tokens - frameTokens;
  if (indexTokens <= bound) return { replacement, tokens };
  // Tokens per character as `shortenIndex` counts characters, so the cut keeps what the bound holds.
  const indexChars = indexBudgetChars(parts.anchors);
  let kept = shortenIndex(parts, Math.floor((indexChars * bound * FOLD_INDEX.cutShare) / indexTokens));
  let cut = joinFoldParts(kept);
  let cutTokens = counter.count(cut);
  // The ratio is the whole index's: a kept part denser than the whole (short names after long
  // entries take a blank each where the count allows two) can still overrun, by a few entries.
  while (cutTokens - frameTokens > bound && kept.anchors.length > 0) {
    kept = { ...kept, anchors: kept.anchors.slice(0, -1) };
    cut = joinFoldParts(kept);
    cutTokens = counter.count(cut);
  }
  return { replacement: cut, tokens: cutTokens };
}

/** Keep one operation per object: the strongest. */
function mergeOperations(operations: readonly PlannedOperation[]) {
  const chosen = new Map<string, PlannedOperation>();
  const rejected: RejectedOperation[] = [];
  for (const operation of operations) {
    const previous = chosen.get(operation.objectId);
    if (!previous) {
      chosen.set(operation.objectId, operation);
      continue;
    }
    const [keep, drop] =
      (STRENGTH[operation.operation] ?? 0) > (STRENGTH[previous.operation] ?? 0)
        ? [operation, previous]
        : [previous, operation];
    chosen.set(operation.objectId, keep);
    rejected.push({
      operation: drop,
      reason: 'duplicate',
      detail: `${keep.operation} on the same object wins`,
    });
  }
  return { merged: [...chosen.values()], rejected };
}

/**
 * Drop accepted operations inside a conversation that an accepted fold or prune removes whole.
 * Only accepted conversation operations cover: a refused one (pinned, latest turn) removes nothing.
 */
function dropCovered(ledger: Ledger, verdicts: readonly AcceptedOperation[], rejected: RejectedOperation[]) {
  // The conversations the plan removes, whole or (a span fold) up to where.
  const covering = new Map<string, number | undefined>();
  for (const verdict of verdicts) {
    const object = ledger.get(verdict.operation.objectId);
    if (object?.kind === 'conversation' && verdict.state) covering.set(object.id, verdict.state.spanEnd);
  }
  const accepted: AcceptedOperation[] = [];
  for (const verdict of verdicts) {
    const object = ledger.get(verdict.operation.objectId);
    const conversation =
      object !== undefined && isToolOutput(object) ? ledger.conversationAt(object.messageIndex) : undefined;
    if (
      object &&
      conversation &&
      covering.has(conversation.id) &&
      removesMessage(conversation, covering.get(conversation.id), object.messageIndex)
    ) {
      rejected.push({
        operation: verdict.operation,
        reason: 'covered',
        detail: `inside ${conversation.id}, which the plan also removes`,
      });
    } else {
      accepted.push(verdict);
    }
  }
  return accepted;
}

/** Validate, merge, apply to a copy of the state, and measure. */
export function rehearsePlan(
  ledger: Ledger,
  state: ViewState,
  plan: Plan,
  options: RehearseOptions = {},
): Rehearsal {
  const protectFrom = options.protectFrom ?? latestTurnStart(ledger);
  const { merged, rejected } = mergeOperations(plan.operations);
  const verdicts: AcceptedOperation[] = [];
  const judge = judgeFor(ledger, state, options, protectFrom);
  for (const operation of merged) {
    const verdict = judge(operation);
    if ('reason' in verdict) rejected.push({ operation, ...verdict });
    else verdicts.push(verdict);
  }
  const accepted = dropCovered(ledger, verdicts, rejected);
  const next: Record<string, ObjectState> = { ...state };
  let earliestEdit: number | undefined;
  for (const verdict of accepted) {
    const { operation } = verdict;
    if (verdict.state) next[operation.objectId] = verdict.state;
    else delete next[operation.objectId];
    const object = ledger.get(operation.objectId)!;
    // Only a prune without tombstone reaches back to the call's message; the rest edit the result.
    const dropsCall = verdict.state?.operation === 'prune' && verdict.state.replacement === '';
    const editAt =
      object.kind !== 'conversation'
        ? dropsCall
          ? Math.min(object.messageIndex, object.callMessageIndex ?? object.messageIndex)
          : object.messageIndex
        : object.span.start;
    earliestEdit = earliestEdit === undefined ? editAt : Math.min(earliestEdit, editAt);
  }
  const tokensBefore = projectView(ledger, state, options.project).tokens;
  const tokensAfter =
    accepted.length === 0 ? tokensBefore : projectView(ledger, next, options.project).tokens;
  return {
    plan,
    accepted,
    rejected,
    stateBefore: state,
    stateAfter: next,
    tokensBefore,
    tokensAfter,
    earliestEdit,
  };
}
