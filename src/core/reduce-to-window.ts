/**
 * The stateless reduction: a transcript brought inside a token budget with no store, no ledger
 * and no state, for when governance cannot run (its store is unavailable, or the request is
 * over governance's budget). Deterministic: the same messages and room give the same bytes.
 *
 * It keeps the system prompt, the first user request and the latest turn, and takes, in order:
 * 1. the contents of the oldest tool results (each call and its result stay, the result saying
 *    what was elided);
 * 2. then the oldest steps whole (an assistant message with the results of its calls, or a user
 *    message), with a note of how many messages left, but for the instructions among them;
 * 3. then, only when what is kept still does not fit, the middle of the largest texts left.
 *
 * Cache-friendly: what leaves is chosen by a cut on the original transcript's positions, and
 * the cut moves in steps of a quarter of the room. A conversation that grows keeps the same
 * reduced prefix, byte for byte, until the cut moves again.
 *
 * Cheap on huge transcripts: positions are measured by characters, and only what is kept is
 * tokenized; a transcript many times the room is never counted whole.
 */
import { countMessageTokens, partTokens, turnStartOf } from './ledger.js';
import { approximateTokenCounter, type TokenCounter } from './tokens.js';
import type { Message, Part, TextPart, ToolResultPart } from './transcript.js';

/** The cut moves in steps of this share of the room: at most one cache break per step of growth. */
export const CUT_STEP_SHARE = 0.25;

/**
 * Texts longer than this are measured by an upper bound instead of counted: a multi-megabyte
 * output leaves whole, so tokenizing it would be wasted (and would take seconds).
 */
export const EXACT_COUNT_CHARS = 200_000;

/** Tokens per UTF-8 byte, at most: a BPE token is at least one byte, and scaled estimators stay below 1.25. */
export const TOKENS_PER_BYTE_BOUND = 1.25;

/** A transcript up to this many times the room is counted whole first: it may fit as it is. */
export const COUNT_WHOLE_FACTOR = 2;

/** Trimming a text that still measures over its share tries again this many times, smaller each time. */
const TRIM_ATTEMPTS = 4;

export interface ReduceToWindowOptions {
  /** Tokens the messages may take (the window less what the request needs beside them). */
  room: number;
  tokenCounter: TokenCounter;
}

export interface WindowReduction {
  messages: Message[];
  /** False when the messages fit as they are (and are returned as they came). */
  changed: boolean;
  /**
   * Tokens of the messages before: counted when the transcript is at most `COUNT_WHOLE_FACTOR`
   * times the room, else estimated by characters (it is not tokenized whole).
   */
  tokensBefore: number;
  /**
   * Whether `tokensBefore` or `tokensAfter` counted some text over `EXACT_COUNT_CHARS` by its
   * upper bound: then they are upper bounds, not counts.
   */
  tokensBound: boolean;
  /** Tokens of the messages after, counted (texts over `EXACT_COUNT_CHARS` by their upper bound). */
  tokensAfter: number;
  /** Tool results whose content was elided. */
  elided: number;
  /** Messages left out whole. */
  dropped: number;
  /** Texts cut in the middle. */
  trimmed: number;
  /** False when even the system prompt and the latest turn, trimmed, do not fit. */
  fits: boolean;
}

/** UTF-8 length of a text, without encoding it. */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      index += 1;
    } else bytes += 3;
  }
  return bytes;
}

/** Exact counts for texts of ordinary size, an upper bound for huge ones (`bounded` once it gave one). */
function boundedCounter(counter: TokenCounter): TokenCounter & { bounded: boolean } {
  const bounding = {
    name: `${counter.name} (bounded)`,
    bounded: false,
    count: (text: string) => {
      if (text.length <= EXACT_COUNT_CHARS) return counter.count(text);
      bounding.bounded = true;
      return Math.ceil(utf8Bytes(text) * TOKENS_PER_BYTE_BOUND);
    },
  };
  return bounding;
}

/** End of the protected head: the leading system messages and the first user request. */
function protectedHeadEnd(messages: readonly Message[], latest: number): number {
  let index = 0;
  while (index < latest && messages[index]?.role === 'system') index += 1;
  if (index < latest && messages[index]?.role === 'user') index += 1;
  return index;
}

/** Something that can leave: where it ends in the original transcript, and what it frees. */
interface Removable {
  end: number;
  saving: number;
}

/**
 * The smallest cut (a multiple of `step`) such that the removables ending at or before it free
 * `excess` tokens; undefined when all of them together do not.
 */
function smallestCut(excess: number, removables: readonly Removable[], step: number): number | undefined {
  const total = removables.reduce((sum, item) => sum + item.saving, 0);
  if (total < excess) return undefined;
  let freed = 0;
  let next = 0;
  const last = removables.at(-1)?.end ?? 0;
  for (let cut = step; cut < last + step; cut += step) {
    while (next < removables.length && removables[next]!.end <= cut) {
      freed += removables[next]!.saving;
      next += 1;
    }
    if (freed >= excess) return cut;
  }
  return undefined;
}

function elidedResult(part: ToolResultPart, tokens: number): ToolResultPart {
  const note = `[output of ${part.name} elided to fit the context window: about ${tokens} tokens]`;
  return { ...part, content: note };
}

function trimmedText(text: string, keepChars: number): string {
  const head = Math.ceil((keepChars * 2) / 3);
  const tail = Math.max(0, keepChars - head);
  const note = `\n[… ${text.length - head - tail} characters elided to fit the context window …]\n`;
  return `${text.slice(0, head)}${note}${tail === 0 ? '' : text.slice(text.length - tail)}`;
}

/** A text cut to at most about `limit` tokens by the counter, or undefined when it cannot shrink. */
function trimToTokens(
  text: string,
  tokens: number,
  limit: number,
  counter: TokenCounter,
): string | undefined {
  let keepChars = Math.floor((text.length * Math.max(0, limit)) / Math.max(1, tokens));
  for (let attempt = 0; attempt < TRIM_ATTEMPTS; attempt += 1) {
    const trimmed = trimmedText(text, keepChars);
    if (counter.count(trimmed) <= limit || keepChars === 0)
      return trimmed.length < text.length ? trimmed : undefined;
    keepChars = Math.floor(keepChars / 2);
  }
  return undefined;
}

interface Working {
  messages: Message[];
  sizes: number[];
  counter: TokenCounter;
}

const totalOf = (sizes: readonly number[]) => sizes.reduce((sum, size) => sum + size, 0);

/** A message's size by characters: the cheap, stable ruler the cut is placed on. */
function estimateOf(message: Message): number {
  return countMessageTokens(approximateTokenCounter, message);
}

/**
 * Step 1: elide the contents of the oldest tool results before `limit`, as far as the cut says:
 * placed by the estimates, then moved on a step at a time while what is kept, counted, does not
 * fit. Leaves `working.sizes` counted.
 */
function elideOldResults(
  working: Working,
  estimates: { ends: readonly number[]; excess: number },
  limit: number,
  room: number,
  step: number,
): number {
  const { messages, counter } = working;
  const candidates: Array<Removable & { index: number; part: number; tokens: number }> = [];
  for (let index = 0; index < limit; index += 1) {
    const message = messages[index]!;
    if (message.role !== 'tool') continue;
    message.parts.forEach((part, partIndex) => {
      if (part.type !== 'tool-result') return;
      const tokens = partTokens(approximateTokenCounter, part);
      const saving = tokens - partTokens(approximateTokenCounter, elidedResult(part, tokens));
      if (saving > 0)
        candidates.push({ end: estimates.ends[index]!, saving, index, part: partIndex, tokens });
    });
  }
  let next = 0;
  const elideUpTo = (cut: number): Set<number> => {
    const changed = new Set<number>();
    for (; next < candidates.length && candidates[next]!.end <= cut; next += 1) {
      const candidate = candidates[next]!;
      const message = messages[candidate.index]!;
      const parts = [...message.parts];
      parts[candidate.part] = elidedResult(parts[candidate.part] as ToolResultPart, candidate.tokens);
      messages[candidate.index] = { ...message, parts };
      changed.add(candidate.index);
    }
    return changed;
  };
  let cut = smallestCut(estimates.excess, candidates, step) ?? Number.POSITIVE_INFINITY;
  elideUpTo(cut);
  working.sizes = messages.map((message) => countMessageTokens(counter, message));
  while (totalOf(working.sizes) > room && next < candidates.length) {
    cut += step;
    for (const index of elideUpTo(cut)) working.sizes[index] = countMessageTokens(counter, messages[index]!);
  }
  return next;
}

/**
 * Step 2: leave out the oldest steps between the head and the latest turn, as far as the cut
 * says. Instructions a client sent among them (system messages) stay, as the system prompt does.
 */
function dropOldSteps(
  working: Working,
  ends: readonly number[],
  head: number,
  latest: number,
  room: number,
  step: number,
) {
  const { messages, sizes } = working;
  const isInstructions = (index: number) => messages[index]!.role === 'system';
  const steps: Array<Removable & { start: number; stop: number }> = [];
  for (let start = head; start < latest; ) {
    let stop = start + 1;
    while (stop < latest && messages[stop]!.role !== 'user' && messages[stop]!.role !== 'assistant')
      stop += 1;
    let saving = 0;
    for (let index = start; index < stop; index += 1) if (!isInstructions(index)) saving += sizes[index]!;
    steps.push({ start, stop, end: ends[stop - 1]!, saving });
    start = stop;
  }
  const excess = totalOf(sizes) - room;
  const cut = smallestCut(excess, steps, step) ?? Number.POSITIVE_INFINITY;
  const leaving = steps.filter((candidate) => candidate.end <= cut);
  const until = leaving.at(-1)?.stop ?? head;
  const kept: number[] = [];
  for (let index = head; index < until; index += 1) if (isInstructions(index)) kept.push(index);
  const dropped = until - head - kept.length;
  if (dropped === 0) return 0;
  messages.splice(head, until - head, ...kept.map((index) => messages[index]!));
  sizes.splice(head, until - head, ...kept.map((index) => sizes[index]!));
  const note: TextPart = {
    type: 'text',
    text: `[${dropped} earlier messages were left out to fit the context window]`,
  };
  const first = messages[head - 1];
  if (first?.role === 'user') {
    messages[head - 1] = { ...first, parts: [...first.parts, note] };
    sizes[head - 1] = countMessageTokens(working.counter, messages[head - 1]!);
  } else {
    messages.splice(head, 0, { role: 'user', parts: [note] });
    sizes.splice(head, 0, countMessageTokens(working.counter, messages[head]!));
  }
  return dropped;
}

/** The texts step 3 may cut: tool result contents and user texts, never a system prompt. */
function trimmableTexts(messages: readonly Message[]): Array<{ index: number; part: number; text: string }> {
  const texts: Array<{ index: number; part: number; text: string }> = [];
  messages.forEach((message, index) => {
    if (message.role === 'system' || message.role === 'assistant') return;
    message.parts.forEach((part, partIndex) => {
      if (part.type === 'text') texts.push({ index, part: partIndex, text: part.text });
      if (part.type === 'tool-result' && typeof part.content === 'string') {
        texts.push({ index, part: partIndex, text: part.content });
      }
    });
  });
  return texts;
}

function withText(part: Part, text: string): Part {
  if (part.type === 'text') return { ...part, text };
  if (part.type === 'tool-result') return { ...part, content: text };
  return part;
}

/** Step 3: cut the middle of the largest texts left until the messages fit. */
function trimLargest(working: Working, room: number): number {
  const { messages, sizes, counter } = working;
  const texts = trimmableTexts(messages)
    .map((entry) => ({ ...entry, tokens: counter.count(entry.text) }))
    .sort((left, right) => right.tokens - left.tokens || left.index - right.index || left.part - right.part);
  let trimmed = 0;
  for (const entry of texts) {
    const excess = totalOf(sizes) - room;
    if (excess <= 0) break;
    const shorter = trimToTokens(entry.text, entry.tokens, entry.tokens - excess, counter);
    if (shorter === undefined) continue;
    const message = messages[entry.index]!;
    const parts = [...message.parts];
    parts[entry.part] = withText(parts[entry.part]!, shorter);
    messages[entry.index] = { ...message, parts };
    sizes[entry.index] = countMessageTokens(counter, messages[entry.index]!);
    trimmed += 1;
  }
  return trimmed;
}

export function reduceToWindow(
  messages: readonly Message[],
  options: ReduceToWindowOptions,
): WindowReduction {
  const counter = boundedCounter(options.tokenCounter);
  const room = Math.max(0, options.room);
  const working: Working = { messages: [...messages], sizes: [], counter };
  const estimated = messages.map(estimateOf);
  let tokensBefore = totalOf(estimated);
  if (tokensBefore <= room * COUNT_WHOLE_FACTOR) {
    working.sizes = messages.map((message) => countMessageTokens(counter, message));
    tokensBefore = totalOf(working.sizes);
    if (tokensBefore <= room) {
      return {
        messages: working.messages,
        changed: false,
        tokensBefore,
        tokensBound: counter.bounded,
        tokensAfter: tokensBefore,
        elided: 0,
        dropped: 0,
        trimmed: 0,
        fits: true,
      };
    }
  }
  const ends: number[] = [];
  estimated.reduce((position, size) => {
    ends.push(position + size);
    return position + size;
  }, 0);
  const step = Math.max(1, Math.floor(room * CUT_STEP_SHARE));
  // Read from the messages alone: tool messages are the outputs.
  const latest = turnStartOf(messages, (index) => messages[index]?.role === 'tool');
  const head = protectedHeadEnd(messages, latest);
  const result = { elided: 0, dropped: 0, trimmed: 0 };
  result.elided = elideOldResults(working, { ends, excess: totalOf(estimated) - room }, latest, room, step);
  if (totalOf(working.sizes) > room) result.dropped = dropOldSteps(working, ends, head, latest, room, step);
  if (totalOf(working.sizes) > room) result.trimmed = trimLargest(working, room);
  const tokensAfter = totalOf(working.sizes);
  const changed = result.elided + result.dropped + result.trimmed > 0;
  return {
    messages: working.messages,
    changed,
    tokensBefore,
    tokensBound: counter.bounded,
    tokensAfter,
    ...result,
    fits: tokensAfter <= room,
  };
}
