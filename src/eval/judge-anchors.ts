/**
 * The deterministic anchor judge. The needed anchors are those the next assistant messages use
 * that also appear in the prefix. Strict no-impact: all of them are visible in the view.
 * Recoverable no-impact: each is visible, or inside a payload whose recovery pointer is visible.
 */
import { anchorValues } from '../core/anchors.js';
import { argumentValuesText, type Ledger, type LedgerObject } from '../core/ledger.js';
import type { ViewState } from '../core/operations.js';
import type { ViewItem } from '../core/project-view.js';
import { objectText, sidecarKey, spanText } from '../core/render-replacement.js';
import { type Message, messageText } from '../core/transcript.js';

export interface AnchorVerdict {
  needed: string[];
  /** Needed anchors not visible in the view. */
  missing: string[];
  /** Missing anchors that no visible pointer recovers. */
  lost: string[];
  /** Lost anchors that sat in an object folded or masked (a promise broken). */
  lostFromFoldOrMask: string[];
  strict: boolean;
  recoverable: boolean;
}

/** Anchors the continuation uses (assistant text and tool-call argument values). */
export function continuationAnchors(continuation: readonly Message[]): Set<string> {
  const values = new Set<string>();
  for (const message of continuation) {
    if (message.role !== 'assistant') continue;
    for (const part of message.parts) {
      const textValue =
        part.type === 'text'
          ? part.text
          : part.type === 'tool-call'
            ? argumentValuesText(part.arguments)
            : '';
      for (const value of anchorValues(textValue)) values.add(value);
    }
  }
  return values;
}

/**
 * The anchors a continuation needs, with the prefix messages that hold each: computed once per
 * cut and shared by every strategy judged there.
 */
export type NeededAnchors = ReadonlyMap<string, readonly number[]>;

export function neededAnchors(
  prefixTexts: readonly string[],
  continuation: readonly Message[],
  locator: AnchorLocator = createAnchorLocator(prefixTexts),
): NeededAnchors {
  const needed = new Map<string, readonly number[]>();
  for (const anchor of continuationAnchors(continuation)) {
    const holders = locator.holders(anchor, prefixTexts.length);
    if (holders.length > 0) needed.set(anchor, holders);
  }
  return needed;
}

/**
 * Finds which messages of a growing prefix hold an anchor, remembering what it scanned: replay
 * asks about the same anchors at cut after cut, and each message is read once per anchor.
 */
export interface AnchorLocator {
  /** Indexes below `end` of the texts that contain `anchor`. */
  holders(anchor: string, end: number): readonly number[];
}

export function createAnchorLocator(texts: readonly string[]): AnchorLocator {
  const known = new Map<string, { scanned: number; holders: number[] }>();
  return {
    holders(anchor, end) {
      let entry = known.get(anchor);
      if (!entry) {
        entry = { scanned: 0, holders: [] };
        known.set(anchor, entry);
      }
      for (let index = entry.scanned; index < end; index += 1)
        if (texts[index]!.includes(anchor)) entry.holders.push(index);
      entry.scanned = Math.max(entry.scanned, end);
      // A copy: later scans append to the remembered list.
      return entry.holders.filter((index) => index < end);
    },
  };
}

export interface JudgeInput {
  ledger: Ledger;
  /** Text of every prefix message (index-aligned with the ledger), computed once per session. */
  prefixTexts: readonly string[];
  items: readonly ViewItem[];
  /** Object states when the strategy kept a sidecar. */
  state?: ViewState;
  continuation: readonly Message[];
  /** `neededAnchors(prefixTexts, continuation)`, when the caller already has it. */
  needed?: NeededAnchors;
}

export function judgeAnchors(input: JudgeInput): AnchorVerdict {
  const { ledger } = input;
  const needed = input.needed ?? neededAnchors(input.prefixTexts, input.continuation);
  // Unchanged items show their transcript message; only changed ones need their text read.
  const unchanged = new Set<number>();
  const changedTexts: string[] = [];
  for (const item of input.items) {
    if (item.changed) changedTexts.push(messageText(item.message));
    else unchanged.add(item.source);
  }
  const missing: string[] = [];
  for (const [anchor, holders] of needed) {
    const visible =
      holders.some((index) => unchanged.has(index)) ||
      changedTexts.some((textValue) => textValue.includes(anchor));
    if (!visible) missing.push(anchor);
  }
  const lost: string[] = [];
  const lostFromFoldOrMask: string[] = [];
  if (missing.length > 0) {
    const recoverable = recoverableTexts(ledger, input.state ?? {}, changedTexts);
    for (const anchor of missing) {
      const holder = recoverable.find((entry) => entry.text.includes(anchor));
      if (holder) continue;
      lost.push(anchor);
      if (removedByFoldOrMask(ledger, input.state ?? {}, anchor)) lostFromFoldOrMask.push(anchor);
    }
  }
  return {
    needed: [...needed.keys()],
    missing,
    lost,
    lostFromFoldOrMask,
    strict: missing.length === 0,
    recoverable: lost.length === 0,
  };
}

/**
 * Payloads of objects whose id is visible in the view (their recovery pointer). Pointers are
 * written by the harness, so they stand in changed items only.
 */
function recoverableTexts(ledger: Ledger, state: ViewState, changedTexts: readonly string[]) {
  const joined = changedTexts.join('\n');
  const entries: Array<{ id: string; text: string }> = [];
  for (const [id, entry] of Object.entries(state)) {
    // A tombstone names its object, but a pruned payload is not promised back.
    if (entry.operation === 'prune') continue;
    const key = sidecarKey(id, entry.spanEnd);
    if (!joined.includes(`"${key}"`) && !joined.includes(`${key}:`) && !joined.includes(`${key} `)) continue;
    const object = ledger.get(id);
    if (!object) continue;
    entries.push({ id: key, text: payloadOf(ledger, object, entry.spanEnd) });
  }
  return entries;
}

/** What the sidecar holds for an object in this state (a span fold holds its span only). */
function payloadOf(ledger: Ledger, object: LedgerObject, spanEnd: number | undefined): string {
  return object.kind === 'conversation'
    ? spanText(ledger, object, spanEnd)
    : `${object.callArguments ?? ''}\n${objectText(ledger, object)}`;
}

function removedByFoldOrMask(ledger: Ledger, state: ViewState, anchor: string): boolean {
  for (const [id, entry] of Object.entries(state)) {
    if (entry.operation === 'prune') continue;
    const object = ledger.get(id);
    if (object && payloadOf(ledger, object, entry.spanEnd).includes(anchor)) return true;
  }
  return false;
}

/** The recoverable map of the emitted format: sidecar key → message indexes the sidecar holds. */
export function recoverableMap(ledger: Ledger, state: ViewState | undefined): Record<string, number[]> {
  const map: Record<string, number[]> = {};
  for (const [id, entry] of Object.entries(state ?? {})) {
    const object = ledger.get(id);
    if (!object) continue;
    const end = entry.spanEnd ?? object.span.end;
    map[sidecarKey(id, entry.spanEnd)] =
      object.kind === 'conversation'
        ? Array.from({ length: end - object.span.start }, (_, offset) => object.span.start + offset)
        : [object.messageIndex];
  }
  return map;
}
