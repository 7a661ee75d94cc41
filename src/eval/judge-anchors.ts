/**
 * The deterministic anchor judge. The needed anchors are those the next assistant messages use
 * that also appear in the prefix. Strict no-impact: all of them are visible in the view.
 * Recoverable no-impact: each is visible, or inside a payload whose recovery pointer is visible.
 */
import type { Ledger } from '../core/ledger.js';
import type { ViewState } from '../core/operations.js';
import type { ViewItem } from '../core/project-view.js';
import { objectText, spanText } from '../core/render-replacement.js';
import { type Message, messageText } from '../core/transcript.js';
import { continuationAnchors } from './strategies/selfgc-strategies.js';

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

/** Texts of a sequence of messages, searched newest first (needed anchors are mostly recent). */
function containsNewestFirst(texts: readonly string[], anchor: string): boolean {
  for (let index = texts.length - 1; index >= 0; index -= 1) if (texts[index]!.includes(anchor)) return true;
  return false;
}

export interface JudgeInput {
  ledger: Ledger;
  /** Text of every prefix message (index-aligned with the ledger), computed once per session. */
  prefixTexts: readonly string[];
  items: readonly ViewItem[];
  /** Object states when the strategy kept a sidecar. */
  state?: ViewState;
  continuation: readonly Message[];
}

export function judgeAnchors(input: JudgeInput): AnchorVerdict {
  const { ledger, prefixTexts } = input;
  const candidates = continuationAnchors(input.continuation);
  const needed = [...candidates].filter((anchor) => containsNewestFirst(prefixTexts, anchor));
  const viewTexts = input.items.map((item) =>
    item.changed ? messageText(item.message) : (prefixTexts[item.source] ?? ''),
  );
  const missing = needed.filter((anchor) => !containsNewestFirst(viewTexts, anchor));
  const lost: string[] = [];
  const lostFromFoldOrMask: string[] = [];
  if (missing.length > 0) {
    const recoverable = recoverableTexts(ledger, input.state ?? {}, viewTexts);
    for (const anchor of missing) {
      const holder = recoverable.find((entry) => entry.text.includes(anchor));
      if (holder) continue;
      lost.push(anchor);
      if (removedByFoldOrMask(ledger, input.state ?? {}, anchor)) lostFromFoldOrMask.push(anchor);
    }
  }
  return {
    needed,
    missing,
    lost,
    lostFromFoldOrMask,
    strict: missing.length === 0,
    recoverable: lost.length === 0,
  };
}

/** Payloads of objects whose id is visible in the view (their recovery pointer). */
function recoverableTexts(ledger: Ledger, state: ViewState, viewTexts: readonly string[]) {
  const joined = viewTexts.join('\n');
  const entries: Array<{ id: string; text: string }> = [];
  for (const id of Object.keys(state)) {
    if (!joined.includes(`"${id}"`) && !joined.includes(`${id}:`) && !joined.includes(`${id} `)) continue;
    const object = ledger.get(id);
    if (!object) continue;
    const payload =
      object.kind === 'conversation'
        ? spanText(ledger, object)
        : `${object.callArguments ?? ''}\n${objectText(ledger, object)}`;
    entries.push({ id, text: payload });
  }
  return entries;
}

function removedByFoldOrMask(ledger: Ledger, state: ViewState, anchor: string): boolean {
  for (const [id, entry] of Object.entries(state)) {
    if (entry.operation === 'prune') continue;
    const object = ledger.get(id);
    if (!object) continue;
    const payload = object.kind === 'conversation' ? spanText(ledger, object) : objectText(ledger, object);
    if (payload.includes(anchor)) return true;
  }
  return false;
}

/** The recoverable map of the emitted format: object id → message indexes the sidecar holds. */
export function recoverableMap(ledger: Ledger, state: ViewState | undefined): Record<string, number[]> {
  const map: Record<string, number[]> = {};
  for (const id of Object.keys(state ?? {})) {
    const object = ledger.get(id);
    if (!object) continue;
    map[id] =
      object.kind === 'conversation'
        ? Array.from(
            { length: object.span.end - object.span.start },
            (_, offset) => object.span.start + offset,
          )
        : [object.messageIndex];
  }
  return map;
}
