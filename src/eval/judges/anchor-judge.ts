/**
 * The deterministic anchor judge. The needed anchors are those the next assistant messages use
 * that also appear in the prefix. Strict no-impact: all of them are visible in the view.
 * Recoverable no-impact: each is visible, or inside a payload whose recovery pointer is visible.
 *
 * Anchors come from the judge's own extractor, and what a sidecar holds is read here from the
 * transcript: nothing of the core's index building, which decides what the governor keeps.
 */
import type { Ledger, LedgerObject } from '../../core/ledger.js';
import type { ObjectState, ViewState } from '../../core/operations.js';
import type { ViewItem } from '../../core/project-view.js';
import { type Message, messageText, type ToolResultPart } from '../../core/transcript.js';
import { argumentValues, judgeAnchorValues } from './anchor-extractor.js';

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
  /** For each missing anchor, in the same order: where it last stood in the prefix. */
  missingFrom: MissingSource[];
}

/** Who wrote a message: the agent, a tool, the user, or the instructions. */
export type HolderRole = 'agent' | 'tool' | 'user' | 'system';

/**
 * What a strategy did to the message that last held a missing anchor: pruned (a tombstone),
 * folded (into a fold's or a span fold's index), masked, or removed without an operation of its
 * own (a baseline's edit, or an agent step that left with its outputs).
 */
export type Removal = 'pruned' | 'folded' | 'masked' | 'removed';

export interface MissingSource {
  role: HolderRole;
  /** Assistant messages in the prefix after the holder: how many steps back it was (0: the latest). */
  stepsBack: number;
  removedBy: Removal;
  /**
   * Whether it sat in the fold of the latest work: the fold of a request's messages that reaches
   * furthest into the transcript (a span fold of the current request, usually). Misses there are
   * of the work the agent is still doing; misses elsewhere are of work it left.
   */
  inLatestFold: boolean;
}

/** Anchors the continuation uses (assistant text and tool-call argument values). */
export function continuationAnchors(continuation: readonly Message[]): Set<string> {
  const values = new Set<string>();
  for (const message of continuation) {
    if (message.role !== 'assistant') continue;
    for (const part of message.parts) {
      const textValue =
        part.type === 'text' ? part.text : part.type === 'tool-call' ? argumentValues(part.arguments) : '';
      for (const value of judgeAnchorValues(textValue)) values.add(value);
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
    missingFrom: missingSources(ledger, input.state ?? {}, missing, needed),
  };
}

const ROLES: Record<Message['role'], HolderRole> = {
  assistant: 'agent',
  tool: 'tool',
  user: 'user',
  system: 'system',
};

/** Where each missing anchor last stood: the latest message that held it, read from the ledger and the state. */
function missingSources(
  ledger: Ledger,
  state: ViewState,
  missing: readonly string[],
  needed: NeededAnchors,
): MissingSource[] {
  if (missing.length === 0) return [];
  // `after[i]`: assistant messages after message i in the prefix.
  const after = new Array<number>(ledger.messages.length).fill(0);
  for (let index = ledger.messages.length - 2; index >= 0; index -= 1)
    after[index] = after[index + 1]! + (ledger.messages[index + 1]!.role === 'assistant' ? 1 : 0);
  const latest = latestFold(ledger, state);
  return missing.map((anchor) => {
    // Holders are in transcript order: the last is the latest.
    const holder = needed.get(anchor)?.at(-1) ?? 0;
    return {
      role: ROLES[ledger.messages[holder]?.role ?? 'user'],
      stepsBack: after[holder] ?? 0,
      removedBy: removalOf(ledger, state, holder),
      inLatestFold: latest !== undefined && holder > latest.start && holder < latest.end,
    };
  });
}

/**
 * The fold of a request that reaches furthest into the transcript, if any, as `(start, end)`: the
 * messages after the request (at `start`) up to a span fold's `spanEnd`, or to the end of the
 * request's span for a whole fold. The request's own message does not count: a span fold keeps it.
 */
function latestFold(ledger: Ledger, state: ViewState): { start: number; end: number } | undefined {
  let latest: { start: number; end: number } | undefined;
  for (const [id, entry] of Object.entries(state)) {
    if (entry.operation !== 'fold') continue;
    const object = ledger.get(id);
    if (object?.kind !== 'conversation') continue;
    const end = entry.spanEnd ?? object.span.end;
    if (latest === undefined || end > latest.end) latest = { start: object.span.start, end };
  }
  return latest;
}

/** What the state did to message `index`: through its own objects, else through the span of its request. */
function removalOf(ledger: Ledger, state: ViewState, index: number): Removal {
  for (const object of ledger.objectsByMessage.get(index) ?? []) {
    const entry = state[object.id];
    if (entry) return removalBy(entry);
  }
  const conversation = ledger.conversationAt(index);
  const entry = conversation ? state[conversation.id] : undefined;
  if (entry && (entry.spanEnd === undefined || index < entry.spanEnd)) return removalBy(entry);
  return 'removed';
}

function removalBy(entry: ObjectState): Removal {
  return entry.operation === 'prune' ? 'pruned' : entry.operation === 'mask' ? 'masked' : 'folded';
}

/**
 * The key a recovery pointer names: the object id, or `id@spanEnd` for a span fold (the work
 * after a request, up to message `spanEnd`). The emitted format's, as `selfgc replay --emit`
 * writes it in `recoverable`.
 */
function pointerKey(objectId: string, spanEnd: number | undefined): string {
  return spanEnd === undefined ? objectId : `${objectId}@${spanEnd}`;
}

/** A pointer as the view spells it: quoted (`expand("key")`), or the key before `:` or a space. */
function namesPointer(viewText: string, key: string): boolean {
  return viewText.includes(`"${key}"`) || viewText.includes(`${key}:`) || viewText.includes(`${key} `);
}

/**
 * Payloads of objects whose pointer is visible in the view. Pointers are written by the
 * harness, so they stand in changed items only.
 */
function recoverableTexts(ledger: Ledger, state: ViewState, changedTexts: readonly string[]) {
  const joined = changedTexts.join('\n');
  const entries: Array<{ id: string; text: string }> = [];
  for (const [id, entry] of Object.entries(state)) {
    // A tombstone names its object, but a pruned payload is not promised back.
    if (entry.operation === 'prune') continue;
    const key = pointerKey(id, entry.spanEnd);
    if (!namesPointer(joined, key)) continue;
    const object = ledger.get(id);
    if (!object) continue;
    entries.push({ id: key, text: sidecarPayload(ledger, object, entry.spanEnd) });
  }
  return entries;
}

/**
 * What the sidecar holds for an object in this state, read from the transcript: a
 * conversation's messages (a span fold's up to `spanEnd`); a tool output's call arguments and
 * result.
 */
function sidecarPayload(ledger: Ledger, object: LedgerObject, spanEnd: number | undefined): string {
  if (object.kind === 'conversation')
    return ledger.messages
      .slice(object.span.start, spanEnd ?? object.span.end)
      .map(messageText)
      .join('\n');
  if (object.kind === 'function' || object.kind === 'skill') {
    const message = ledger.messages[object.messageIndex];
    const part = message?.parts[object.partIndex ?? 0];
    // A text-protocol client's observation is its whole user message; an output a client
    // attached to a request, its own text part.
    const output =
      part?.type === 'text' && object.partIndex !== undefined
        ? part.text.slice(object.range?.start ?? 0, object.range?.end ?? part.text.length)
        : message?.role === 'user'
          ? messageText(message)
          : part?.type === 'tool-result'
            ? toolOutputText(part.content)
            : '';
    return `${object.callArguments ?? ''}\n${output}`;
  }
  const message = ledger.messages[object.messageIndex];
  return `${object.callArguments ?? ''}\n${message ? messageText(message) : ''}`;
}

/** A tool result's text, an image standing as `[image]`. */
function toolOutputText(content: ToolResultPart['content']): string {
  if (typeof content === 'string') return content;
  return content.map((inner) => (inner.type === 'image' ? '[image]' : inner.text)).join('\n');
}

function removedByFoldOrMask(ledger: Ledger, state: ViewState, anchor: string): boolean {
  for (const [id, entry] of Object.entries(state)) {
    if (entry.operation === 'prune') continue;
    const object = ledger.get(id);
    if (object && sidecarPayload(ledger, object, entry.spanEnd).includes(anchor)) return true;
  }
  return false;
}
