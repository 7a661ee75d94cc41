/**
 * The embedded offline planner: deterministic, no network. It scores each object's future
 * dependency from what the transcript itself shows — recency of reference, supersession,
 * duplicates, resolved failures, size — and proposes prune for what is provably stale, fold
 * (or mask) for what is old and unreferenced, and keep for the rest. Under pressure it goes
 * further, least-needed first, until the target is reached.
 */

import { indexEntryChars } from '../index-entries.js';
import { argumentValuesText, isToolOutput, type Ledger, type LedgerObject } from '../ledger.js';
import { assistantStepsAfter, recentStepsStart } from '../ledger-measures.js';
import { liveTokens } from '../object-kinds.js';
import type { PlannedOperation, ViewState } from '../operations.js';
import { planSpanFolds, spanIndexTokens } from '../plan-span-folds.js';
import { coveredByConversation, removesMessage } from '../project-view.js';
import { autoAnchorBudget } from '../rehearse-plan.js';
import { isMaskable, objectText } from '../render-replacement.js';
import { tokensForChars } from '../tokens.js';
import { EMBEDDED_PLANNER } from '../tuning.js';
import type { Planner, PlannerInput, PlanResult } from './planner.js';

/**
 * What a model says of an object the rules leave uncertain (the valuator's LLM tier):
 * `retain` keeps it out of the planner's own folds and prunes, and its request out of whole
 * folds (a span fold of old work, the fallback and the window may still take it);
 * `can_summarize` folds it; `can_discard` prunes it.
 */
export type ObjectHint = 'retain' | 'can_summarize' | 'can_discard';

export interface EmbeddedPlannerOptions {
  /** Hints for objects of the uncertain band (`hintCandidates`), by id. */
  hints?: ReadonlyMap<string, ObjectHint>;
  /**
   * The most recent tool outputs always kept whole (default 1). Older ones fold into an index of
   * their anchors with a recovery pointer, which keeps what later steps quote visible.
   */
  keepRecentOutputs?: number;
  /** Outputs the agent referred to within this many of its steps stay whole (default 0). */
  recentUseSteps?: number;
  /** Outputs smaller than this are not worth an operation (default 60 tokens). */
  minTokens?: number;
  /**
   * Without pressure, also fold outputs older than this many steps that nothing refers to
   * any more (default 0). Set to Infinity to act only on pressure and proven staleness.
   */
  idleFoldSteps?: number;
  /**
   * Prune outputs and past requests when folds cannot reach the target (default false:
   * pruning what span folds left breaks more continuations at the same prune rate than stopping
   * there; the governor's fallback prunes only to fit the window).
   */
  pruneLastResort?: boolean;
  /** Fold idle outputs even when a finite target is already met (default false). */
  idleWithBudget?: boolean;
  /** Under pressure, fold the work after requests (span folds) too (default true). */
  spanFolds?: boolean;
  /**
   * When span folds that keep the recent steps cannot reach the target, fold the recent work too,
   * down to the latest turn (default false: under soft pressure an agent keeps its latest steps,
   * which tell it where it is in its task; the governor's window fallback goes further only when
   * the window forces it). Cut-mode replay, whose budget is a hard target, turns it on.
   */
  foldRecentWork?: boolean;
  /** Under pressure, the latest steps that stay out of span folds at first (default 6). */
  keepRecentSteps?: number;
  /** What happens to an output superseded by a later run of the same call (default fold). */
  supersededOperation?: 'fold' | 'prune';
  /**
   * An idle output, or one folded under pressure, folds on its own only when its fold frees at
   * least this share of it (default 0.9); otherwise it stays whole until the span fold of its
   * step takes it, whose one index serves the whole span: a fold that keeps half an output as
   * anchors loses the verbatim lines later steps quote, for little room.
   */
  minFoldShare?: number;
}

/** Per-object evidence the planner decides on. */
interface Evidence {
  object: LedgerObject;
  /** Assistant steps since the object, and since its last use by the agent or user. */
  stepsSince: number;
  stepsSinceUse: number;
  supersededBy?: string;
  duplicateOf?: string;
  /** Recent outputs (by tool-result order) are protected. */
  recentRank: number;
}

/** The supersession key of a tool call: the same tool on the same target. */
function supersessionKey(object: LedgerObject): string | undefined {
  if (!object.callArguments || !object.toolName) return undefined;
  const values = argumentValuesText(object.callArguments).trim();
  if (values.length === 0) return undefined;
  return `${object.toolName}\n${values}`;
}

/**
 * What a tool's output holds, to tell copies apart: its text, and each image it shows by its
 * reference (its text reads every image alike).
 */
function outputContent(ledger: Ledger, object: LedgerObject): string {
  const parts = ledger.messages[object.messageIndex]?.parts ?? [];
  const own = object.partIndex === undefined ? parts : parts.slice(object.partIndex, object.partIndex + 1);
  const images = own.flatMap((part) => {
    const inner = part.type === 'tool-result' && typeof part.content !== 'string' ? part.content : [part];
    return inner.flatMap((each) => (each.type === 'image' ? [each.ref] : []));
  });
  return [objectText(ledger, object), ...images].join('\0');
}

function collectEvidence(ledger: Ledger, protectFrom: number): Evidence[] {
  const stepsAfter = assistantStepsAfter(ledger);
  const functions = ledger.objects.filter((object) => isToolOutput(object));
  const rankOf = new Map(functions.map((object, order) => [object, functions.length - order]));
  const latestByKey = new Map<string, LedgerObject>();
  const latestByOutput = new Map<string, LedgerObject>();
  for (const object of functions) {
    const key = supersessionKey(object);
    if (key) latestByKey.set(key, object);
    if (object.tokens >= EMBEDDED_PLANNER.duplicateMinTokens)
      latestByOutput.set(outputContent(ledger, object), object);
  }
  const evidence: Evidence[] = [];
  const candidates = ledger.objects.filter(
    (object) => !object.pinned && object.kind !== 'system' && object.span.end <= protectFrom,
  );
  for (const object of candidates) {
    const lastUse = object.references.at(-1) ?? object.messageIndex;
    const entry: Evidence = {
      object,
      stepsSince: stepsAfter[object.span.end] ?? 0,
      stepsSinceUse: stepsAfter[lastUse + 1] ?? 0,
      recentRank: rankOf.get(object) ?? Number.POSITIVE_INFINITY,
    };
    const key = supersessionKey(object);
    const later = key ? latestByKey.get(key) : undefined;
    if (later && later !== object && !object.isError === !later.isError) entry.supersededBy = later.id;
    if (later && later !== object && object.isError && !later.isError) entry.supersededBy = later.id;
    if (isToolOutput(object) && object.tokens >= EMBEDDED_PLANNER.duplicateMinTokens) {
      const same = latestByOutput.get(outputContent(ledger, object));
      if (same && same !== object) entry.duplicateOf = same.id;
    }
    evidence.push(entry);
  }
  return evidence;
}

/**
 * Estimated tokens an operation frees, before rehearsal measures it exactly: a fold keeps an
 * anchor index, a tombstone about twenty tokens.
 */
function estimatedSaving(object: LedgerObject, operation: 'fold' | 'mask' | 'prune', ledger: Ledger): number {
  const size = liveTokens(ledger, object);
  const left =
    operation === 'prune'
      ? EMBEDDED_PLANNER.tombstoneTokens
      : operation === 'fold'
        ? EMBEDDED_PLANNER.foldFrameTokens + foldIndexTokens(ledger, object, size)
        : Math.min(size, EMBEDDED_PLANNER.maskKeepsTokens);
  return Math.max(0, size - left);
}

/**
 * About the tokens of a fold's anchor index: for an output, the anchors it holds that nobody
 * wrote elsewhere, up to its budget (about a token per four characters); for a conversation, as
 * for a span fold; otherwise four tokens an anchor of the budget.
 */
function foldIndexTokens(ledger: Ledger, object: LedgerObject, size: number): number {
  if (object.kind === 'conversation') {
    let entryChars = 0;
    for (let index = object.span.start; index < object.span.end; index += 1)
      entryChars += indexEntryChars(ledger.messages[index]!);
    return spanIndexTokens(size, entryChars) - EMBEDDED_PLANNER.foldFrameTokens;
  }
  const budget = autoAnchorBudget(size);
  if (!isToolOutput(object) || object.anchors.length === 0) return 4 * budget;
  let tokens = 0;
  let count = 0;
  for (const anchor of object.anchors) {
    if (count >= budget) break;
    if (ledger.spokenAnchors.has(anchor.value)) continue;
    tokens += tokensForChars(anchor.value.length + 2);
    count += 1;
  }
  return tokens;
}

/**
 * Mask only long outputs whose lines repeat a few shapes (logs, progress, listings): their head
 * and tail say what the middle held. Code and prose fold instead, so their anchors stay visible.
 */
function foldOrMask(ledger: Ledger, object: LedgerObject): 'fold' | 'mask' {
  if (!isToolOutput(object) || object.tokens < EMBEDDED_PLANNER.maskMinTokens) return 'fold';
  const textValue = objectText(ledger, object);
  return isMaskable(textValue) && isRepetitive(textValue) ? 'mask' : 'fold';
}

/** Fewer than a third of the lines have distinct shapes once digits and hex runs are blurred. */
export function isRepetitive(textValue: string): boolean {
  const lines = textValue.split('\n');
  const shapes = new Set(lines.map((line) => line.replace(/[0-9a-f]{6,}|\d+/gi, '#').trim()));
  return shapes.size < lines.length / 3;
}

/** The embedded planner as a pure function of its input. */
export function planEmbedded(input: PlannerInput, options: EmbeddedPlannerOptions = {}): PlannedOperation[] {
  const keepRecent = options.keepRecentOutputs ?? EMBEDDED_PLANNER.keepRecentOutputs;
  const recentUse = options.recentUseSteps ?? 0;
  const minTokens = options.minTokens ?? EMBEDDED_PLANNER.minTokens;
  const idleFold = options.idleFoldSteps ?? 0;
  const minFoldShare = options.minFoldShare ?? EMBEDDED_PLANNER.minFoldShare;
  const { ledger, state } = input;
  // Outputs inside a committed fold of their conversation are out of the view already.
  const hidden = (object: LedgerObject) => coveredByConversation(ledger, state, object);
  const hints = options.hints ?? new Map<string, ObjectHint>();
  // A retained object stays out of the planner's own folds and prunes.
  const evidence = collectEvidence(ledger, input.protectFrom).filter(
    (entry) => !hidden(entry.object) && hints.get(entry.object.id) !== 'retain',
  );
  const operations: PlannedOperation[] = [];
  const planned = new Set<string>();
  // Estimated saving of each planned object, so that nothing is counted twice: not an object
  // planned again (a fold that becomes a prune), nor the outputs inside a request that folds whole.
  const savings = new Map<string, number>();
  let projected = input.viewTokens;
  const propose = (object: LedgerObject, operation: 'fold' | 'mask' | 'prune', reason: string) => {
    if (planned.has(object.id) || alreadyThere(state, object.id, operation)) return;
    planned.add(object.id);
    operations.push({ objectId: object.id, operation, reason });
    let counted = savings.get(object.id) ?? 0;
    if (object.kind === 'conversation') {
      // The request's fold covers its outputs: their savings are now part of its own.
      for (const inner of ledger.objects) {
        if (!isToolOutput(inner) || !savings.has(inner.id)) continue;
        if (!removesMessage(object, undefined, inner.messageIndex)) continue;
        counted += savings.get(inner.id)!;
        savings.delete(inner.id);
      }
    }
    const saving = estimatedSaving(object, operation, ledger);
    savings.set(object.id, saving);
    projected -= saving - counted;
  };
  // A planned fold of the output's request, whole or of the span that holds it, frees it already.
  const coveredByPlan = (object: LedgerObject) => {
    const conversation = ledger.conversationAt(object.messageIndex);
    const planned = conversation && operations.find((operation) => operation.objectId === conversation.id);
    return planned !== undefined && removesMessage(conversation!, planned.spanEnd, object.messageIndex);
  };
  // An output folds (or masks) alone only when that frees most of it.
  const proposeOutput = (object: LedgerObject, reason: string, minShare = minFoldShare) => {
    if (coveredByPlan(object)) return;
    const operation = foldOrMask(ledger, object);
    if (operation === 'fold' && estimatedSaving(object, operation, ledger) < minShare * object.tokens) return;
    propose(object, operation, reason);
  };

  // 1. Proven staleness, whatever the pressure: instructions sent again word for word leave
  // (the first copy stays), duplicated outputs leave, superseded ones fold (a re-run after a fix
  // supersedes the failure, but its error may still be quoted).
  for (const object of ledger.objects) {
    if (object.restates === undefined || object.span.end > input.protectFrom || hidden(object)) continue;
    propose(object, 'prune', `restates ${object.restates}`);
  }
  for (const entry of evidence) {
    const { object } = entry;
    if (!isToolOutput(object) || object.tokens < minTokens || entry.recentRank <= 1) continue;
    if (entry.duplicateOf) propose(object, 'prune', `same output as ${entry.duplicateOf}`);
    else if (entry.supersededBy)
      propose(object, options.supersededOperation ?? 'fold', `superseded by ${entry.supersededBy}`);
  }
  // What a model said of objects the rules leave uncertain.
  for (const entry of evidence) {
    const hint = hints.get(entry.object.id);
    if (hint === 'can_discard') propose(entry.object, 'prune', 'hint: can be discarded');
    else if (hint === 'can_summarize')
      propose(entry.object, foldOrMask(ledger, entry.object), 'hint: can be summarized');
  }
  // 2. Idle outputs: old, large enough, and not used by the agent for a while. Only without a
  // budget (`targetTokens` infinite): with one, the ranked steps below fold just enough of them.
  const budgeted = Number.isFinite(input.targetTokens) && options.idleWithBudget !== true;
  for (const entry of budgeted ? [] : evidence) {
    const { object } = entry;
    if (!isToolOutput(object) || object.tokens < minTokens || entry.recentRank <= keepRecent) continue;
    if (entry.stepsSince >= idleFold && entry.stepsSinceUse >= recentUse) {
      proposeOutput(object, `idle for ${entry.stepsSinceUse} steps`);
    }
  }
  if (projected <= input.targetTokens) return operations;
  // 3. Pressure: least-needed first — outputs the agent used lately go last, then oldest first.
  const usedLately = (entry: Evidence) => (entry.stepsSinceUse < recentUse ? 1 : 0);
  const ranked = [...evidence].sort(
    (a, b) =>
      usedLately(a) - usedLately(b) ||
      b.recentRank - a.recentRank ||
      a.object.messageIndex - b.object.messageIndex,
  );
  const foldOutputs = (minRank: number, minShare = minFoldShare) => {
    for (const entry of ranked) {
      if (projected <= input.targetTokens) return;
      const { object } = entry;
      if (!isToolOutput(object) || entry.recentRank <= minRank || object.tokens < minTokens) continue;
      proposeOutput(object, `pressure: unused for ${entry.stepsSinceUse} steps`, minShare);
    }
  };
  foldOutputs(keepRecent);
  // 4. Still over: fold whole past conversations, oldest first (not one holding a retained output).
  const holdsRetained = (conversation: LedgerObject) =>
    [...hints].some(([id, hint]) => {
      const inner = hint === 'retain' ? ledger.get(id) : undefined;
      return inner !== undefined && ledger.conversationAt(inner.messageIndex) === conversation;
    });
  for (const entry of evidence) {
    if (projected <= input.targetTokens) break;
    if (entry.object.kind === 'conversation' && !holdsRetained(entry.object))
      propose(entry.object, 'fold', 'pressure: past request, its work is done');
  }
  // 5. Then the oldest work after each request folds whole (the request stays), keeping the
  // recent steps.
  const spanFolds = (limit: number, reason: string) => {
    if (options.spanFolds === false) return;
    const counted = new Map<number, number>();
    for (const [id, saving] of savings) {
      const object = ledger.get(id);
      if (object !== undefined && isToolOutput(object))
        counted.set(object.messageIndex, (counted.get(object.messageIndex) ?? 0) + saving);
    }
    projected = planSpanFolds(
      ledger,
      state,
      operations,
      projected,
      input.targetTokens,
      limit,
      reason,
      counted,
    );
  };
  spanFolds(
    recentStepsStart(ledger, input.protectFrom, options.keepRecentSteps ?? EMBEDDED_PLANNER.keepRecentSteps),
    'pressure: old work folds, its request stays',
  );
  // 6. Still over, when allowed: the recent steps fold too, down to the latest turn.
  if (options.foldRecentWork === true)
    spanFolds(input.protectFrom, 'pressure: recent work folds too, its request stays');
  // 7. Then any output but the latest folds, however little its fold frees, before anything is
  // pruned: a session of a few steps over large outputs has nothing else to give.
  foldOutputs(1, 0);
  if (options.pruneLastResort !== true) return operations;
  // 8. Last resort: prune outputs, oldest first.
  for (const entry of evidence) {
    if (projected <= input.targetTokens) break;
    // Tiny outputs stay: their tombstone would be bigger than they are.
    if (isToolOutput(entry.object) && entry.recentRank > 1 && entry.object.tokens >= minTokens) {
      planned.delete(entry.object.id);
      propose(entry.object, 'prune', 'pressure: oldest output');
    }
  }
  // 9. Past requests whose summaries still crowd the view leave too, oldest first; the latest
  // past request keeps its summary.
  const past = evidence.filter((entry) => entry.object.kind === 'conversation');
  for (const entry of past.slice(0, -1)) {
    if (projected <= input.targetTokens) break;
    planned.delete(entry.object.id);
    propose(entry.object, 'prune', 'pressure: oldest past request');
  }
  return operations;
}

/**
 * The uncertain band: tool outputs the rules do not settle — not protected, not a duplicate, not
 * superseded, not the latest, big enough to matter, not used by the agent in its last step —
 * the largest first, at most `limit`. A model's hints (`ObjectHint`) are asked for these alone.
 */
export function hintCandidates(input: PlannerInput, limit: number): LedgerObject[] {
  const { ledger, state } = input;
  return collectEvidence(ledger, input.protectFrom)
    .filter(
      (entry) =>
        isToolOutput(entry.object) &&
        entry.object.tokens >= EMBEDDED_PLANNER.minTokens &&
        entry.recentRank > EMBEDDED_PLANNER.keepRecentOutputs &&
        entry.duplicateOf === undefined &&
        entry.supersededBy === undefined &&
        entry.stepsSinceUse >= 1 &&
        state[entry.object.id] === undefined,
    )
    .map((entry) => entry.object)
    .sort((a, b) => b.tokens - a.tokens)
    .slice(0, limit);
}

function alreadyThere(state: ViewState, id: string, operation: 'fold' | 'mask' | 'prune'): boolean {
  const current = state[id]?.operation;
  if (!current) return false;
  if (current === 'prune') return true;
  return operation !== 'prune' && (current === 'fold' || current === operation);
}

/** The embedded planner behind the `Planner` contract. */
export function createEmbeddedPlanner(options: EmbeddedPlannerOptions = {}): Planner {
  return {
    name: 'embedded',
    plan: async (input: PlannerInput): Promise<PlanResult> => ({
      plan: { planner: 'embedded', operations: planEmbedded(input, options) },
    }),
  };
}
