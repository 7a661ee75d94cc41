/**
 * Projection: ledger + committed object states → the view (canonical messages). Unchanged
 * messages are passed through by reference and keep their cached token counts, so projecting
 * costs time in the number of messages, not in their size.
 */
import { countMessageTokens, isObservation, type Ledger, type LedgerObject } from './ledger.js';
import { isSpanFold, type ViewState } from './operations.js';
import { MESSAGE_OVERHEAD_TOKENS } from './tokens.js';
import type { Message, Part } from './transcript.js';

export interface ViewItem {
  /** Index of the transcript message this item stands for (the first of a folded span). */
  source: number;
  message: Message;
  /** False when `message` is the transcript message itself, untouched. */
  changed: boolean;
  /** Tokens of the item in the view, when projection measured them. */
  tokens?: number;
}

export interface View {
  items: ViewItem[];
  tokens: number;
}

export interface ProjectOptions {
  /** Show ids as light metadata: a header on user turns, a tag after tool results. */
  showIds?: boolean;
  /** Drop the messages after this index (exclusive end), for projecting a prefix. */
  end?: number;
}

/** Replace or drop a span's messages for a folded or pruned conversation object. */
function spanReplacement(object: LedgerObject, state: ViewState): Message | undefined {
  const entry = state[object.id];
  if (!entry || entry.replacement === '') return undefined;
  return { role: 'user', parts: [{ type: 'text', text: entry.replacement }] };
}

function withIdHeader(message: Message, id: string): Message {
  return { ...message, parts: [{ type: 'text', text: `[id: ${id}]` }, ...message.parts] };
}

/** The tool message with states applied to its results; undefined parts are dropped. */
function projectToolMessage(
  ledger: Ledger,
  index: number,
  message: Message,
  state: ViewState,
  showIds: boolean,
  droppedCalls: Map<string, boolean>,
): { message: Message; tokens: number | undefined } | undefined {
  const objects = ledger.objectsByMessage.get(index) ?? [];
  let changed = false;
  const parts: Part[] = [];
  // The message's tokens follow from its parts' when every replacement was counted at rehearsal.
  let tokens: number | undefined = ledger.messageTokens[index] ?? 0;
  message.parts.forEach((part, partIndex) => {
    const object = objects.find((candidate) => candidate.partIndex === partIndex);
    const entry = object ? state[object.id] : undefined;
    if (part.type !== 'tool-result' || !object) {
      parts.push(part);
      return;
    }
    if (entry?.operation === 'prune' && entry.replacement === '') {
      droppedCalls.set(part.callId, entry.dropShell === true);
      changed = true;
      if (tokens !== undefined) tokens -= object.tokens;
      return;
    }
    const content = entry ? entry.replacement : part.content;
    if (entry || showIds) changed = true;
    if (entry && tokens !== undefined)
      tokens = entry.tokens === undefined ? undefined : tokens - object.tokens + entry.tokens;
    if (showIds) tokens = undefined;
    if (showIds) {
      const tag = `[id: ${object.id}]`;
      parts.push({
        ...part,
        content:
          typeof content === 'string' ? `${content}\n${tag}` : [...content, { type: 'text', text: tag }],
      });
    } else {
      parts.push(entry ? { ...part, content } : part);
    }
  });
  if (!changed) return { message, tokens };
  return parts.length === 0 ? undefined : { message: { ...message, parts }, tokens };
}

/**
 * A system message under a state (one that restates an earlier one, pruned): its replacement as
 * a system message, or nothing when the replacement is empty; undefined when it has no state.
 */
function projectSystemMessage(
  ledger: Ledger,
  index: number,
  message: Message,
  state: ViewState,
): { message?: Message; tokens?: number } | undefined {
  const object = ledger.objectsByMessage.get(index)?.find((candidate) => candidate.kind === 'system');
  const entry = object ? state[object.id] : undefined;
  if (!entry) return undefined;
  if (entry.replacement === '') return {};
  return {
    // The message keeps what the adapter knows of it (where it sat on the wire), not its text.
    message: { ...message, parts: [{ type: 'text', text: entry.replacement }] },
    ...(entry.tokens === undefined ? {} : { tokens: entry.tokens + MESSAGE_OVERHEAD_TOKENS }),
  };
}

/**
 * An observation a text-protocol client sent (a user message that is a tool's output,
 * `clientObservation`) under its state: its replacement as the message's text, or nothing when
 * pruned without a tombstone — then with its shell, the agent's message that wrote the command,
 * when the state says so. Undefined when the message is no observation, or has neither a state
 * nor an id to show.
 */
function projectObservation(
  ledger: Ledger,
  index: number,
  message: Message,
  state: ViewState,
  showIds: boolean,
  droppedShells: Set<number>,
): { message?: Message; tokens?: number } | undefined {
  const object = ledger.objectsByMessage.get(index)?.find(isObservation);
  const entry = object ? state[object.id] : undefined;
  if (!object || (!entry && !showIds)) return undefined;
  if (entry?.replacement === '') {
    if (entry.dropShell === true && object.callMessageIndex !== undefined)
      droppedShells.add(object.callMessageIndex);
    return {};
  }
  const tag: Part[] = showIds ? [{ type: 'text', text: `[id: ${object.id}]` }] : [];
  if (!entry) return { message: { ...message, parts: [...message.parts, ...tag] } };
  // The message keeps what the adapter knows of it (where it sat on the wire), not its parts.
  return {
    message: { ...message, parts: [{ type: 'text', text: entry.replacement }, ...tag] },
    ...(entry.tokens === undefined || showIds ? {} : { tokens: entry.tokens + MESSAGE_OVERHEAD_TOKENS }),
  };
}

/**
 * A request with tool outputs a client attached to it (`clientAttachments`), under their states:
 * each attached part replaced by its object's replacement, or gone when pruned without one (a
 * request left with no part at all names what left). Undefined when no attached part has a state
 * or an id to show.
 */
function projectAttached(
  ledger: Ledger,
  index: number,
  message: Message,
  state: ViewState,
  showIds: boolean,
): { message: Message; tokens: number | undefined } | undefined {
  const attached = (ledger.objectsByMessage.get(index) ?? []).filter(
    (object) => object.attachedTo !== undefined,
  );
  if (!attached.some((object) => state[object.id] || showIds)) return undefined;
  let tokens: number | undefined = showIds ? undefined : (ledger.messageTokens[index] ?? 0);
  const gone: string[] = [];
  const shown = (object: LedgerObject, original: string) => {
    const entry = state[object.id];
    const textValue = entry ? entry.replacement : original;
    return showIds ? `${textValue}\n[id: ${object.id}]` : textValue;
  };
  const parts = message.parts.flatMap((part, partIndex): Part[] => {
    const own = attached.filter((candidate) => candidate.partIndex === partIndex);
    if (own.length === 0 || part.type !== 'text') return [part];
    if (own[0]!.range !== undefined) {
      // Outputs inside the text (mention blocks, after the words): each replaced where it stands.
      // Counted again: tokens of a text do not split exactly at the seams.
      tokens = undefined;
      let text = part.text;
      for (const object of [...own].reverse()) {
        const { start, end } = object.range!;
        text = `${text.slice(0, start)}${shown(object, text.slice(start, end))}${text.slice(end)}`;
      }
      return [{ ...part, text }];
    }
    const object = own[0]!;
    const entry = state[object.id];
    if (entry && tokens !== undefined)
      tokens = entry.tokens === undefined ? undefined : tokens - object.tokens + entry.tokens;
    if (entry?.replacement === '') {
      gone.push(object.id);
      return [];
    }
    return [{ ...part, text: shown(object, part.text) }];
  });
  if (parts.length > 0) return { message: { ...message, parts }, tokens };
  return {
    message: { ...message, parts: [{ type: 'text', text: `[pruned ${gone.join(', ')}]` }] },
    tokens: undefined,
  };
}

/**
 * Whether folding or pruning `conversation` removes message `index`: a whole fold or prune its
 * span; a span fold (up to `spanEnd`) the work after its request, which stays with the outputs
 * attached to it.
 */
export function removesMessage(
  conversation: LedgerObject,
  spanEnd: number | undefined,
  index: number,
): boolean {
  const start = conversation.span.start + (spanEnd === undefined ? 0 : 1);
  return index >= start && index < (spanEnd ?? conversation.span.end);
}

/**
 * Whether an object lies inside the folded or pruned span of its conversation, so that it (and
 * any replacement of its own) is out of the view.
 */
export function coveredByConversation(ledger: Ledger, state: ViewState, object: LedgerObject): boolean {
  if (object.kind === 'conversation') return false;
  const conversation = ledger.conversationAt(object.messageIndex);
  const around = conversation ? state[conversation.id] : undefined;
  return around !== undefined && removesMessage(conversation!, around.spanEnd, object.messageIndex);
}

/** Project the view of the ledger under the given committed states. */
export function projectView(ledger: Ledger, state: ViewState, options: ProjectOptions = {}): View {
  const end = Math.min(options.end ?? ledger.messages.length, ledger.messages.length);
  const showIds = options.showIds === true;
  const items: ViewItem[] = [];
  // Call ids whose results left the view, and whether their shell leaves with them.
  const droppedCalls = new Map<string, boolean>();
  // Messages that wrote a command whose observation left the view with them.
  const droppedShells = new Set<number>();
  const counter = ledger.options.tokenCounter;
  let tokens = 0;
  const push = (source: number, message: Message, changed: boolean, known?: number) => {
    const itemTokens = changed
      ? (known ?? countMessageTokens(counter, message))
      : (ledger.messageTokens[source] ?? 0);
    items.push({ source, message, changed, tokens: itemTokens });
    tokens += itemTokens;
  };
  for (let index = 0; index < end; index += 1) {
    const message = ledger.messages[index]!;
    const conversation = ledger.conversationAt(index);
    const spanState = conversation ? state[conversation.id] : undefined;
    const spanEnd = spanState ? (spanState.spanEnd ?? conversation!.span.end) : 0;
    if (conversation && spanState && index === conversation.span.start && spanEnd <= end) {
      // A folded or pruned conversation: its span leaves, its replacement stays — after the
      // request itself for a span fold, which leaves only the work up to `spanEnd`.
      if (isSpanFold(spanState)) {
        const request = projectAttached(ledger, index, message, state, false);
        if (request) push(index, request.message, true, request.tokens);
        else push(index, message, false);
      }
      const replacement = spanReplacement(conversation, state);
      const known = spanState.tokens === undefined ? undefined : spanState.tokens + MESSAGE_OVERHEAD_TOKENS;
      if (replacement) push(index, replacement, true, known);
      index = spanEnd - 1;
      continue;
    }
    if (message.role === 'tool') {
      const projected = projectToolMessage(ledger, index, message, state, showIds, droppedCalls);
      if (projected) push(index, projected.message, projected.message !== message, projected.tokens);
      continue;
    }
    if (message.role === 'system') {
      const replaced = projectSystemMessage(ledger, index, message, state);
      if (replaced) {
        if (replaced.message) push(index, replaced.message, true, replaced.tokens);
        continue;
      }
    }
    if (message.role === 'user') {
      const observed = projectObservation(ledger, index, message, state, showIds, droppedShells);
      if (observed) {
        if (observed.message) push(index, observed.message, true, observed.tokens);
        continue;
      }
    }
    const request =
      message.role === 'user' ? projectAttached(ledger, index, message, state, showIds) : undefined;
    if (message.role === 'user' && showIds && conversation?.messageIndex === index) {
      push(index, withIdHeader(request?.message ?? message, conversation.id), true);
      continue;
    }
    if (request) push(index, request.message, true, request.tokens);
    else push(index, message, false);
  }
  return repairLineage(withoutShells(items, droppedShells, tokens), droppedCalls, counter);
}

/** The view without the messages in `shells` (shells that left with their observations). */
function withoutShells(items: ViewItem[], shells: ReadonlySet<number>, tokens: number): View {
  if (shells.size === 0) return { items, tokens };
  let left = 0;
  const kept = items.filter((item) => {
    const leaves = !item.changed && shells.has(item.source);
    if (leaves) left += item.tokens ?? 0;
    return !leaves;
  });
  return { items: kept, tokens: tokens - left };
}

/**
 * A call and its result leave together: drop the tool-call parts whose results were pruned
 * without tombstone, and assistant messages left empty by that — or left with no call when
 * every call they made was pruned with its shell.
 */
function repairLineage(
  { items, tokens }: View,
  droppedCalls: ReadonlyMap<string, boolean>,
  counter: Ledger['options']['tokenCounter'],
): View {
  if (droppedCalls.size === 0) return { items, tokens };
  const repaired: ViewItem[] = [];
  let total = tokens;
  for (const item of items) {
    if (
      item.message.role !== 'assistant' ||
      !item.message.parts.some((part) => part.type === 'tool-call' && droppedCalls.has(part.id))
    ) {
      repaired.push(item);
      continue;
    }
    total -= item.tokens ?? countMessageTokens(counter, item.message);
    const parts = item.message.parts.filter(
      (part) => !(part.type === 'tool-call' && droppedCalls.has(part.id)),
    );
    // Reasoning alone is no turn: the message leaves with its last call.
    if (!parts.some((part) => part.type === 'text' || part.type === 'tool-call')) continue;
    const shellLeaves = item.message.parts.every(
      (part) => part.type !== 'tool-call' || droppedCalls.get(part.id) === true,
    );
    if (shellLeaves) continue;
    const message = { ...item.message, parts };
    const messageTokens = countMessageTokens(counter, message);
    total += messageTokens;
    repaired.push({ source: item.source, message, changed: true, tokens: messageTokens });
  }
  return { items: repaired, tokens: total };
}
