/**
 * What the model sees in place of a folded, masked or pruned object. Every replacement names
 * the object id, so the agent (or the proxy) can recover it with `expand(id)`.
 */
import { type Anchor, callExpressions } from './anchors.js';
import { compactTokens, oneLine } from './compact-text.js';
import { messageEntries } from './index-entries.js';
import type { Ledger } from './ledger.js';
import { attachedText, isToolOutput, type LedgerObject, rankAnchors, requestText } from './ledger.js';
import { type Message, messageText, type Part, partText, textOfParts } from './transcript.js';
import { FOLD_INDEX, TOMBSTONE } from './tuning.js';

/** The text payload of an object, as the model saw it. */
export function objectText(ledger: Ledger, object: LedgerObject): string {
  const message = ledger.messages[object.messageIndex];
  if (!message) return '';
  if (isToolOutput(object)) {
    const part = message.parts[object.partIndex ?? 0];
    // An observation a text-protocol client sent is its whole user message; an output a client
    // attached to a request, its own part.
    if (message.role === 'user') {
      if (object.partIndex === undefined) return textOfParts(message.parts);
      return attachedText(part, object.range);
    }
    if (part?.type !== 'tool-result') return '';
    return typeof part.content === 'string' ? part.content : textOfParts(part.content);
  }
  // A request's own words, without the outputs a client attached to it.
  return message.role === 'user' ? requestText(message) : messageText(message);
}

/** Text of every message of a conversation object's span. */
export function spanText(ledger: Ledger, object: LedgerObject, end = object.span.end): string {
  return ledger.messages
    .slice(object.span.start, end)
    .map((message) => messageText(message))
    .join('\n');
}

/**
 * The sidecar key of a fold: the object id, or for a span fold (the work after a request, up to
 * message `spanEnd`) the id with `@spanEnd`, since deeper span folds of the same request hold
 * more messages.
 */
export function sidecarKey(objectId: string, spanEnd?: number): string {
  return spanEnd === undefined ? objectId : `${objectId}@${spanEnd}`;
}

/**
 * The recovery key of a fold, mask or prune in `ledger`: its sidecar key, and the tag of the
 * content it covers (`Ledger.keyTag`, up to its span fold's end, its request's span end, or its
 * output) once the session tags keys: after a history went on otherwise, so that a key the model
 * has seen never comes to name other content.
 */
export function foldKey(ledger: Ledger, objectId: string, spanEnd?: number): string {
  const object = ledger.get(objectId);
  if (spanEnd !== undefined) return `${sidecarKey(objectId, spanEnd)}${ledger.keyTag(spanEnd)}`;
  if (object === undefined) return objectId;
  // A whole request's work ends where the next request stands: that message fixes it too.
  if (object.kind === 'conversation')
    return `${objectId}${ledger.keyTag(object.span.end, object.span.end + 1)}`;
  return `${objectId}${ledger.keyTag(object.messageIndex + 1)}`;
}

const RECOVERY_POINTER = /expand\("([^"]+)"\) recovers (?:it|them)/g;

/**
 * The view with its recovery pointers made plain keys (`expand("function:bash:3") recovers it`
 * → `kept as "function:bash:3"`), for a client that has no route to recover them: a fold then
 * promises nothing the client cannot do. Never longer than the pointer it replaces; messages
 * without a pointer stay the same objects.
 */
export function withoutRecoveryRoute(view: readonly Message[]): Message[] {
  const plain = (value: string) =>
    value.replace(RECOVERY_POINTER, (_match, key: string) => `kept as "${key}"`);
  const hasPointer = (value: string) => value.includes('expand("');
  return view.map((message) => {
    if (!message.parts.some((part) => hasPointer(partText(part)))) return message;
    const parts = message.parts.map((part): Part => {
      if (part.type === 'text') return { ...part, text: plain(part.text) };
      if (part.type !== 'tool-result') return part;
      const content =
        typeof part.content === 'string'
          ? plain(part.content)
          : part.content.map((inner) =>
              inner.type === 'text' ? { ...inner, text: plain(inner.text) } : inner,
            );
      return { ...part, content };
    });
    return { ...message, parts };
  });
}

/** How the index line of a fold summary starts. */
const INDEX_LINE = 'anchors: ';

/** A fold summary without its index: its header, summary and recovery pointer. */
export function withoutIndex(replacement: string): string {
  return replacement
    .split('\n')
    .filter((line) => !line.startsWith(INDEX_LINE))
    .join('\n');
}

/** A fold summary in its parts: the lines before its index, its entries, the lines after. */
export interface FoldParts {
  head: readonly string[];
  /** Index entries, best first. */
  anchors: readonly string[];
  tail: readonly string[];
}

/**
 * A fold summary from its parts. The index lists its names (entries without a blank: paths,
 * identifiers, values) apart by a space, which a tokenizer takes into the next name's token, and
 * then the entries with blanks (lines of code, call expressions) apart by `; `: a comma between
 * every two entries would take a token of its own.
 */
export function joinFoldParts(parts: FoldParts): string {
  const names = parts.anchors.filter((entry) => !BLANK.test(entry));
  const phrases = parts.anchors.filter((entry) => BLANK.test(entry));
  const listed = [names.join(' '), ...phrases].filter((text) => text !== '').join('; ');
  const index = parts.anchors.length > 0 ? [`${INDEX_LINE}${listed}`] : [];
  return [...parts.head, ...index, ...parts.tail].join('\n');
}

const BLANK = /\s/;

/** An index entry's characters as an index budget counts them: its own and two of separator. */
function budgetChars(entry: string): number {
  return entry.length + 2;
}

/** The characters of index entries as an index budget counts them (`budgetChars`). */
export function indexBudgetChars(anchors: readonly string[]): number {
  let chars = 0;
  for (const entry of anchors) chars += budgetChars(entry);
  return chars;
}

/**
 * The parts with the first index entries that fit `maxChars` characters (separators counted, as
 * an index budget counts them): the entries come best first, so the cut loses the least.
 */
export function shortenIndex(parts: FoldParts, maxChars: number): FoldParts {
  let chars = 0;
  let kept = 0;
  while (kept < parts.anchors.length && chars + budgetChars(parts.anchors[kept]!) <= maxChars) {
    chars += budgetChars(parts.anchors[kept]!);
    kept += 1;
  }
  return { ...parts, anchors: parts.anchors.slice(0, kept) };
}

/**
 * The summary that replaces the work after a request, messages `(start, spanEnd)`: the request
 * itself stays in the view; the steps leave, with their key anchors and a recovery pointer.
 */
export function renderSpanFold(
  ledger: Ledger,
  object: LedgerObject,
  spanEnd: number,
  options: FoldOptions = {},
): string {
  return joinFoldParts(spanFoldParts(ledger, object, spanEnd, options));
}

/** `renderSpanFold` in its parts. */
export function spanFoldParts(
  ledger: Ledger,
  object: LedgerObject,
  spanEnd: number,
  options: FoldOptions = {},
): FoldParts {
  const key = foldKey(ledger, object.id, spanEnd);
  const steps = ledger.messages.slice(object.span.start + 1, spanEnd);
  const calls = steps.flatMap((message) => message.parts.filter((part) => part.type === 'tool-call')).length;
  return {
    head: [
      `[folded ${key}: the ${steps.length} messages of work that followed ${object.id} (${calls} tool calls)]`,
      ...(options.summary ? [oneLine(options.summary, 600)] : []),
    ],
    // The request stays in the view: what it says is not repeated.
    anchors: chooseAnchors(
      messagesEntries(steps, object.span.start + 1, options),
      options,
      objectText(ledger, object),
    ),
    tail: [`(exact messages kept; expand("${key}") recovers them)`],
  };
}

/**
 * The entries of the index of folded messages: first the anchors of the agent's own messages,
 * then those of all, then the short lines of code, then the call expressions; within each, a
 * round at a time over the messages, latest first (the best of every message, then the second
 * best, ...), so that one long listing does not fill the index alone and, when it is full, the
 * more recent messages are the better served (later steps quote recent work far more often than
 * old work). The agent names in its own messages, in few words, what it works on and means to
 * come back to. Lines keep the code an agent quotes when it edits what it read.
 *
 * `anchorsOf`: a message's anchors, best first (by default by kind, as the extractor ranks them).
 */
function* interleavedEntries(
  messages: readonly Message[],
  anchorsOf: (message: Message, offset: number) => readonly Anchor[] = (message) =>
    messageEntries(message).anchors,
): Generator<Anchor> {
  // Lazily: an index is usually full long before the last round (repeats are skipped where the
  // entries are taken).
  const latestFirst = messages.map((message, offset) => ({ message, offset })).reverse();
  const anchors = latestFirst.map(({ message, offset }) => anchorsOf(message, offset));
  yield* roundRobin(anchors.filter((_, order) => latestFirst[order]!.message.role === 'assistant'));
  yield* roundRobin(anchors);
  const entries = latestFirst.map(({ message }) => messageEntries(message));
  yield* roundRobin(entries.map((entry) => entry.lines));
  yield* roundRobin(entries.map((entry) => entry.calls));
}

/**
 * The entries of the index of `messages` (the first at `start`): with a ranker, each message's
 * anchors in the valuator's order instead of by kind, in the same rounds over the messages.
 */
function messagesEntries(
  messages: readonly Message[],
  start: number,
  options: FoldOptions,
): Iterable<Anchor> {
  const rank = options.rankEntry;
  if (!rank) return interleavedEntries(messages);
  const known = anchorsByRanker.get(rank) ?? new WeakMap<Message, readonly Anchor[]>();
  anchorsByRanker.set(rank, known);
  return interleavedEntries(messages, (message, offset) => {
    let anchors = known.get(message);
    if (anchors === undefined) {
      const holder = start + offset;
      // A message's anchors are distinct values; the sort is stable: equal ranks keep their kind order.
      anchors = messageEntries(message)
        .anchors.map((entry) => ({ entry, rank: rank(entry, holder) }))
        .sort((a, b) => b.rank - a.rank)
        .map((ranked) => ranked.entry);
      known.set(message, anchors);
    }
    return anchors;
  });
}

/**
 * Each message's anchors in a ranker's order, kept while the ranker lives: one governance call
 * renders the same spans again and again as a plan deepens.
 */
const anchorsByRanker = new WeakMap<
  NonNullable<FoldOptions['rankEntry']>,
  WeakMap<Message, readonly Anchor[]>
>();

/**
 * Entries in the valuator's order, highest first; among equal ranks the later message first,
 * and each value once.
 */
function byRank(
  candidates: readonly { entry: Anchor; holder: number }[],
  rank: (entry: Anchor, holder: number) => number,
): Anchor[] {
  const best = new Map<string, { entry: Anchor; holder: number; rank: number }>();
  for (const candidate of candidates) {
    const known = best.get(candidate.entry.value);
    if (known && known.holder >= candidate.holder) continue;
    best.set(candidate.entry.value, { ...candidate, rank: rank(candidate.entry, candidate.holder) });
  }
  return [...best.values()]
    .sort((a, b) => b.rank - a.rank || b.holder - a.holder)
    .map((candidate) => candidate.entry);
}

function* roundRobin(lists: ReadonlyArray<readonly Anchor[]>): Generator<Anchor> {
  const longest = Math.max(0, ...lists.map((list) => list.length));
  for (let round = 0; round < longest; round += 1)
    for (const list of lists) if (round < list.length) yield list[round]!;
}

const callsByObject = new WeakMap<LedgerObject, readonly Anchor[]>();

/** An output's anchors, then its call expressions. */
function outputEntries(ledger: Ledger, object: LedgerObject): Anchor[] {
  let calls = callsByObject.get(object);
  if (!calls) {
    calls = callExpressions(objectText(ledger, object));
    callsByObject.set(object, calls);
  }
  return distinct([...object.anchors, ...calls]);
}

function distinct(anchors: readonly Anchor[]): Anchor[] {
  const byValue = new Map<string, Anchor>();
  for (const anchor of anchors) if (!byValue.has(anchor.value)) byValue.set(anchor.value, anchor);
  return [...byValue.values()];
}

/** A one-line description of the call that produced a function object. */
export function describeCall(object: LedgerObject): string {
  const name = object.toolName ?? 'tool';
  if (!object.callArguments) return name;
  try {
    const parsed = JSON.parse(object.callArguments) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const entries = Object.entries(parsed as Record<string, unknown>)
        .filter(([key]) => key !== 'description')
        .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
      return `${name} ${oneLine(entries.join(' '), 160)}`;
    }
  } catch {
    // Arguments that are not JSON are shown as they are.
  }
  return `${name} ${oneLine(object.callArguments, 160)}`;
}

export interface FoldOptions {
  /** A summary written by the planner (kept first, on one line). */
  summary?: string;
  /** How many key anchors the summary keeps. */
  maxAnchors?: number;
  /** And how many characters they may take together (no limit by default). */
  maxAnchorChars?: number;
  /** Anchors to keep before all others (for example those later turns already used). */
  preferredAnchors?: readonly string[];
  /** Anchors visible elsewhere anyway (what the user or agent wrote): not repeated. */
  omitAnchors?: ReadonlySet<string>;
  /**
   * Texts that stay in the view whatever happens to this fold (pinned instructions, the indexes
   * of older folds): an anchor one of them shows is not repeated, as within one index.
   */
  shownElsewhere?: Pick<ShownTexts, 'contains'>;
  /**
   * The valuator's order of the anchors of message `holder` (higher first, comparable within a
   * message): the index lists each message's anchors by it instead of by the extractor's ranking
   * (lines and calls follow).
   */
  rankEntry?: (entry: Anchor, holder: number) => number;
}

/** Pick the key anchors of an object: preferred ones first, then by weight. */
export function keyAnchorsOf(anchors: readonly Anchor[], options: FoldOptions, exclude: string): string[] {
  return chooseAnchors(rankAnchors(anchors), options, exclude);
}

/**
 * Take anchors in the given order (preferred ones first) up to the index's budget. A value that
 * `exclude` or an anchor already taken contains is visible through it and takes no room: an
 * index that lists `django/forms/forms.py` need not list `forms.py`. The other way round, a value
 * that shows anchors taken before it takes the place of the first of them, and the others leave:
 * `forms.py` listed first gives its room and its place to `django/forms/forms.py`, so an index
 * cut short (`shortenIndex`) keeps what stood early in its order.
 */
function chooseAnchors(entries: Iterable<Anchor>, options: FoldOptions, exclude: string): string[] {
  const limit = options.maxAnchors ?? 12;
  const maxChars = options.maxAnchorChars ?? Number.POSITIVE_INFINITY;
  const preferred = options.preferredAnchors ?? [];
  const ordered = preferred.length > 0 ? [...entries] : entries;
  // Slots emptied by a later value that shows theirs hold `undefined` until the end.
  const chosen: Array<string | undefined> = [];
  const slots = new Map<string, number>();
  // The values taken, each under one of its words: a value shows an earlier one only where every
  // word of it stands whole in it, so its own words say where to look. Under the word that holds
  // the fewest so far, so that no list grows with every value (lines of code share keywords).
  const byWord = new Map<string, string[]>();
  const shown = createShownTexts();
  shown.add(exclude);
  let chars = 0;
  let count = 0;
  // Values met before that will be passed over again: shown already, since what is shown only
  // grows (one taken is shown from then on, if it has a word). The same value comes from many
  // messages, and a value that did not fit is weighed again.
  const passed = new Set<string>();
  const take = (value: string) => {
    if (passed.has(value)) return;
    const words = distinctWordsOf(value);
    const within = new Set<string>();
    for (const word of words)
      for (const earlier of byWord.get(word) ?? [])
        if (slots.has(earlier) && showsWhole(value, earlier)) within.add(earlier);
    let freed = 0;
    for (const earlier of within) freed += budgetChars(earlier);
    // A value without room is not taken, shown or not: the room is the cheaper question (once an
    // index is nearly full, most values are weighed for room alone).
    if (chars - freed + budgetChars(value) > maxChars) return;
    if (shown.contains(value) || options.shownElsewhere?.contains(value)) {
      passed.add(value);
      return;
    }
    if (words.length > 0) passed.add(value);
    let slot = chosen.length;
    for (const earlier of within) {
      const at = slots.get(earlier)!;
      slots.delete(earlier);
      chosen[at] = undefined;
      slot = Math.min(slot, at);
    }
    chosen[slot] = value;
    slots.set(value, slot);
    count += 1 - within.size;
    chars += budgetChars(value) - freed;
    shown.add(value);
    let under: string | undefined;
    let fewest = Number.POSITIVE_INFINITY;
    for (const word of words) {
      const held = byWord.get(word)?.length ?? 0;
      if (held < fewest) [under, fewest] = [word, held];
      if (held === 0) break;
    }
    if (under !== undefined) {
      const list = byWord.get(under);
      if (list) list.push(value);
      else byWord.set(under, [value]);
    }
  };
  if (preferred.length > 0) {
    const present = new Set([...ordered].map((anchor) => anchor.value));
    for (const value of preferred) {
      if (count >= limit) break;
      if (present.has(value)) take(value);
    }
  }
  for (const anchor of ordered) {
    // Full: not even the shortest entry (two characters and a separator) would fit.
    if (count >= limit || maxChars - chars < 4) break;
    if (!options.omitAnchors?.has(anchor.value)) take(anchor.value);
  }
  return chosen.filter((value) => value !== undefined);
}

/**
 * Whether `text` holds `value` where its ends stand as whole words: `forms.py` in
 * `django/forms/forms.py`, not `handler_1` in `handler_1_0`.
 */
function showsWhole(text: string, value: string): boolean {
  for (let at = text.indexOf(value); at >= 0; at = text.indexOf(value, at + 1)) {
    const startsWhole = !WORD_CHARACTER.test(value[0]!) || !WORD_CHARACTER.test(text[at - 1] ?? ' ');
    const endsWhole =
      !WORD_CHARACTER.test(value.at(-1)!) || !WORD_CHARACTER.test(text[at + value.length] ?? ' ');
    if (startsWhole && endsWhole) return true;
  }
  return false;
}

const WORD = /[A-Za-z0-9_]+/g;

/** A text's words (runs of word characters), each with where it starts. */
type Words = ReadonlyArray<{ word: string; start: number }>;

/**
 * The words of short texts (index entries) split once: every index rendered looks at the words
 * of each of its candidates, and a plan renders the same spans again and again as it deepens.
 * Bounded, since a proxy's governance worker keeps it for every session it serves.
 */
const wordsOfValue = new Map<string, Words>();
const REMEMBERED_VALUES = 20_000;
const REMEMBERED_VALUE_CHARS = 160;

/** The distinct words of short texts, as `wordsOf` remembers them. */
const distinctWordsOfValue = new Map<string, readonly string[]>();

/** `value`, kept under `text` when the text is short, in a cache emptied when full. */
function remembered<T>(cache: Map<string, T>, text: string, value: T): T {
  if (text.length <= REMEMBERED_VALUE_CHARS) {
    if (cache.size >= REMEMBERED_VALUES) cache.clear();
    cache.set(text, value);
  }
  return value;
}

function wordsOf(text: string): Words {
  const known = wordsOfValue.get(text);
  if (known !== undefined) return known;
  return remembered(
    wordsOfValue,
    text,
    [...text.matchAll(WORD)].map((match) => ({ word: match[0], start: match.index })),
  );
}

/** A text's words, each once. */
function distinctWordsOf(text: string): readonly string[] {
  const known = distinctWordsOfValue.get(text);
  if (known !== undefined) return known;
  return remembered(distinctWordsOfValue, text, [...new Set(wordsOf(text).map((entry) => entry.word))]);
}

/**
 * Texts an index need not repeat from: whether a value is visible inside one of them (of those
 * added at a position before `before`, when given).
 */
export interface ShownTexts {
  add(textValue: string, position?: number): void;
  contains(value: string, before?: number): boolean;
}

/**
 * Texts shown so far, to tell whether a value is visible inside one of them: where the value
 * appears with its longest word standing as a whole word, so a name inside a longer name
 * (`handler_1` in `handler_1_0`) counts as not shown; a value without a word never is. Each word
 * keeps where it stands in the texts, and a value is looked for only there: an index can hold
 * tens of thousands of characters, and every entry of every index rendered is looked up.
 */
export function createShownTexts(): ShownTexts {
  const texts: string[] = [];
  const positions: number[] = [];
  // Per word: where it stands as a whole word, as pairs of text and offset.
  const occurrences = new Map<string, number[]>();
  // Per value looked up since the last add: the earliest position of a text that shows it.
  const earliest = new Map<string, number>();
  const earliestShowing = (value: string) => {
    // The word to look at: the longest, or one between two other characters of the value (which
    // stands whole wherever the value appears), whichever stands in fewer places.
    let longest: { word: string; at: number } | undefined;
    let chosen: { places: readonly number[]; at: number } | undefined;
    for (const { word, start } of wordsOf(value)) {
      if (word.length > (longest?.word.length ?? 0)) longest = { word, at: start };
      if (start > 0 && start + word.length < value.length) {
        const places = occurrences.get(word) ?? [];
        if (chosen === undefined || places.length < chosen.places.length) chosen = { places, at: start };
      }
    }
    if (longest === undefined) return Number.POSITIVE_INFINITY;
    const atLongest = occurrences.get(longest.word) ?? [];
    if (chosen === undefined || atLongest.length <= chosen.places.length)
      chosen = { places: atLongest, at: longest.at };
    let position = Number.POSITIVE_INFINITY;
    for (let pair = 0; pair < chosen.places.length; pair += 2) {
      const text = chosen.places[pair]!;
      const start = chosen.places[pair + 1]! - chosen.at;
      if (positions[text]! >= position || start < 0 || !texts[text]!.startsWith(value, start)) continue;
      if (chosen.places === atLongest || standsWhole(texts[text]!, start + longest.at, longest.word.length))
        position = positions[text]!;
    }
    return position;
  };
  return {
    add(textValue, position = Number.NEGATIVE_INFINITY) {
      const text = texts.push(textValue) - 1;
      positions.push(position);
      if (earliest.size > 0) earliest.clear();
      for (const { word, start } of wordsOf(textValue)) {
        const places = occurrences.get(word);
        if (places) places.push(text, start);
        else occurrences.set(word, [text, start]);
      }
    },
    contains(value, before = Number.POSITIVE_INFINITY) {
      let position = earliest.get(value);
      if (position === undefined) {
        position = earliestShowing(value);
        // A session's pinned texts live as long as it does: what they remember stays bounded.
        if (earliest.size >= REMEMBERED_LOOKUPS) earliest.clear();
        earliest.set(value, position);
      }
      return position < before;
    },
  };
}

/** Lookups a set of shown texts remembers at most. */
const REMEMBERED_LOOKUPS = 50_000;

const WORD_CHARACTER = /[A-Za-z0-9_]/;

/** Whether the `length` characters at `start` of `text` are a whole word there. */
function standsWhole(text: string, start: number, length: number): boolean {
  return !WORD_CHARACTER.test(text[start - 1] ?? ' ') && !WORD_CHARACTER.test(text[start + length] ?? ' ');
}

/** The fold summary: what it was, its status, its key anchors, and the recovery pointer. */
export function renderFold(ledger: Ledger, object: LedgerObject, options: FoldOptions = {}): string {
  return joinFoldParts(foldParts(ledger, object, options));
}

/** `renderFold` in its parts. */
export function foldParts(ledger: Ledger, object: LedgerObject, options: FoldOptions = {}): FoldParts {
  if (!isToolOutput(object)) return conversationFoldParts(ledger, object, options);
  const head = describeCall(object);
  const status = object.isError ? 'error' : 'ok';
  const entries = outputEntries(ledger, object);
  const rank = options.rankEntry;
  const anchors = rank
    ? chooseAnchors(
        [
          ...byRank(
            object.anchors.map((entry) => ({ entry, holder: object.messageIndex })),
            rank,
          ),
          ...entries.filter((entry) => entry.kind === 'call'),
        ],
        options,
        head,
      )
    : keyAnchorsOf(entries, options, head);
  const key = foldKey(ledger, object.id);
  return {
    head: [
      `[folded ${key}: ${head} → ${status}, ${compactTokens(object.tokens)} tokens]`,
      ...(options.summary ? [oneLine(options.summary, 400)] : []),
    ],
    anchors,
    tail: [`(exact output kept; expand("${key}") recovers it)`],
  };
}

/** The fold summary of a whole conversation, in its parts. */
export function conversationFoldParts(
  ledger: Ledger,
  object: LedgerObject,
  options: FoldOptions = {},
): FoldParts {
  const request = oneLine(objectText(ledger, object), 200);
  const messages = object.span.end - object.span.start;
  const key = foldKey(ledger, object.id);
  return {
    head: [
      `[folded ${key}: user asked "${request}"; ${messages} messages followed]`,
      ...(options.summary ? [oneLine(options.summary, 600)] : []),
    ],
    anchors: chooseAnchors(
      messagesEntries(ledger.messages.slice(object.span.start, object.span.end), object.span.start, options),
      options,
      request,
    ),
    tail: [`(exact messages kept; expand("${key}") recovers them)`],
  };
}

/**
 * The one-line tombstone of a pruned object. A pruned request's tombstone also names the best
 * `entries` of its work (in the valuator's order when `rankEntry` is given, else by kind): what
 * the agent did there, in a few names it can recognise and recover by. With `entries: 0` it
 * quotes the request alone, for a view that must shed every token it can.
 */
export function renderTombstone(
  ledger: Ledger,
  object: LedgerObject,
  options: Pick<FoldOptions, 'rankEntry' | 'shownElsewhere'> & { entries?: number } = {},
): string {
  if (object.restates !== undefined)
    return `[${object.id}: the same instructions as ${object.restates} above, word for word]`;
  if (isToolOutput(object)) {
    return `[pruned ${object.id}: ${oneLine(describeCall(object), 100)}${object.isError ? ', failed' : ''}, ${compactTokens(object.tokens)} tokens]`;
  }
  const request = `[pruned ${object.id}: "${oneLine(objectText(ledger, object), 100)}"`;
  const { entries = TOMBSTONE.requestEntries, ...fold } = options;
  const named =
    entries > 0
      ? spanFoldParts(ledger, object, object.span.end, {
          ...fold,
          maxAnchors: entries,
          maxAnchorChars: entries * FOLD_INDEX.charsPerAnchor,
        }).anchors
      : [];
  return named.length === 0 ? `${request}]` : `${request}; its work named ${named.join(', ')}]`;
}

const STRUCTURE_LINE =
  /^\s*(def |class |function |export |async |fn |pub |impl |interface |type |#{1,6} |@@|diff |\+\+\+|---|Traceback|\w*Error\b|FAILED|PASSED|ERROR|ok |not ok )/;
const TRACE_OR_DIFF = /(Traceback \(most recent call last\)|^diff --git|^@@ .* @@|^\s+at .+\(.+:\d+:\d+\))/m;

/** Whether an output is fit for masking: long and regular, not a trace, diff or sparse table. */
export function isMaskable(textValue: string): boolean {
  const lines = textValue.split('\n');
  if (lines.length < 24) return false;
  if (TRACE_OR_DIFF.test(textValue)) return false;
  const pipes = lines.filter((line) => (line.match(/\|/g)?.length ?? 0) >= 3).length;
  return pipes < lines.length / 2;
}

export interface MaskOptions {
  headLines?: number;
  tailLines?: number;
  /** Structure lines (definitions, headings, test results) kept from the middle, at most. */
  structureLines?: number;
}

/**
 * The masked text: head, structure lines of the middle, a marker, tail. `key`: the recovery key
 * the marker names (`foldKey`).
 */
export function renderMask(
  object: LedgerObject,
  textValue: string,
  options: MaskOptions = {},
  key = object.id,
): string {
  const head = options.headLines ?? 8;
  const tail = options.tailLines ?? 6;
  const lines = textValue.split('\n');
  const middle = lines.slice(head, Math.max(head, lines.length - tail));
  const structure = middle.filter((line) => STRUCTURE_LINE.test(line)).slice(0, options.structureLines ?? 12);
  const hidden = middle.length - structure.length;
  const marker = `[… ${hidden} of ${lines.length} lines masked (${key}, ${compactTokens(object.tokens)} tokens in full); expand("${key}") recovers them …]`;
  return [
    ...lines.slice(0, head),
    ...(structure.length > 0 ? [...structure.map((line) => oneLine(line, 200))] : []),
    marker,
    ...lines.slice(lines.length - tail),
  ].join('\n');
}
