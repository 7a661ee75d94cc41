/**
 * What the model sees in place of a folded, masked or pruned object. Every replacement names
 * the object id, so the agent (or the proxy) can recover it with `expand(id)`.
 */
import { type Anchor, callExpressions, extractAnchors } from './anchors.js';
import { compactTokens, oneLine } from './compact-text.js';
import type { Ledger } from './ledger.js';
import { type LedgerObject, messageReferenceText, rankAnchors } from './ledger.js';
import { type Message, messageText } from './transcript.js';

/** The text payload of an object, as the model saw it. */
export function objectText(ledger: Ledger, object: LedgerObject): string {
  if (object.kind === 'function') {
    const message = ledger.messages[object.messageIndex];
    const part = message?.parts[object.partIndex ?? 0];
    if (part?.type !== 'tool-result') return '';
    return typeof part.content === 'string'
      ? part.content
      : part.content.map((inner) => (inner.type === 'text' ? inner.text : '[image]')).join('\n');
  }
  const message = ledger.messages[object.messageIndex];
  return message ? messageText(message) : '';
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
 * The summary that replaces the work after a request, messages `(start, spanEnd)`: the request
 * itself stays in the view; the steps leave, with their key anchors and a recovery pointer.
 */
export function renderSpanFold(
  ledger: Ledger,
  object: LedgerObject,
  spanEnd: number,
  options: FoldOptions = {},
): string {
  const key = sidecarKey(object.id, spanEnd);
  const steps = ledger.messages.slice(object.span.start + 1, spanEnd);
  const calls = steps.flatMap((message) => message.parts.filter((part) => part.type === 'tool-call')).length;
  // Each step in turn, latest first: one step's long listing does not fill the index alone, and
  // when the index is full the more recent steps are the better served (later steps quote recent
  // work far more often than old work). The request stays in the view: its anchors are not repeated.
  const anchors = chooseAnchors(
    interleavedEntries([...steps].reverse()),
    options,
    objectText(ledger, object),
  );
  return [
    `[folded ${key}: the ${steps.length} messages of work that followed ${object.id} (${calls} tool calls)]`,
    ...(options.summary ? [oneLine(options.summary, 600)] : []),
    ...(anchors.length > 0 ? [`anchors: ${anchors.join(', ')}`] : []),
    `(exact messages kept; expand("${key}") recovers them)`,
  ].join('\n');
}

/**
 * What a fold index may list, kept per message and per output: rehearsal renders the same spans
 * again and again as a plan deepens, and a session's messages do not change.
 */
interface IndexEntries {
  anchors: readonly Anchor[];
  calls: readonly Anchor[];
}
const entriesByMessage = new WeakMap<Message, IndexEntries>();
const callsByObject = new WeakMap<LedgerObject, readonly Anchor[]>();

function messageEntries(message: Message): IndexEntries {
  let entries = entriesByMessage.get(message);
  if (!entries) {
    const textValue = messageReferenceText(message);
    entries = { anchors: extractAnchors(textValue), calls: callExpressions(textValue) };
    entriesByMessage.set(message, entries);
  }
  return entries;
}

/**
 * The entries of a fold index over `messages`, in their order: the anchors, then the call
 * expressions (agents quote code they saw when they edit it or report on it; measured on the dev
 * sessions), each once.
 */
function indexEntriesOf(messages: readonly Message[]): Anchor[] {
  const entries = messages.map(messageEntries);
  return distinct([...entries.flatMap((entry) => entry.anchors), ...entries.flatMap((entry) => entry.calls)]);
}

/**
 * The entries of a span fold's index: each message's entries ranked by weight, taken a round at a
 * time (the best of every message, then the second best, ...), each value once.
 */
function interleavedEntries(messages: readonly Message[]): Anchor[] {
  const lists = messages.map((message) => {
    const entries = messageEntries(message);
    return rankAnchors([...entries.anchors, ...entries.calls]);
  });
  const longest = Math.max(0, ...lists.map((list) => list.length));
  const ordered: Anchor[] = [];
  for (let round = 0; round < longest; round += 1)
    for (const list of lists) if (round < list.length) ordered.push(list[round]!);
  return distinct(ordered);
}

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
}

/** Pick the key anchors of an object: preferred ones first, then by weight. */
export function keyAnchorsOf(anchors: readonly Anchor[], options: FoldOptions, exclude: string): string[] {
  return chooseAnchors(rankAnchors(anchors), options, exclude);
}

/**
 * Take anchors in the given order (preferred ones first) up to the index's budget. A value that
 * `exclude` or an anchor already taken contains is visible through it and takes no room: an
 * index that lists `django/forms/forms.py` need not list `forms.py` (measured on the dev
 * sessions: see the README's results).
 */
function chooseAnchors(ordered: readonly Anchor[], options: FoldOptions, exclude: string): string[] {
  const limit = options.maxAnchors ?? 12;
  const maxChars = options.maxAnchorChars ?? Number.POSITIVE_INFINITY;
  const chosen: string[] = [];
  // The values taken so far, one per line, to find a value inside one of them.
  let taken = '';
  let chars = 0;
  const take = (value: string) => {
    if (chars + value.length + 2 > maxChars || exclude.includes(value) || taken.includes(value)) return;
    chosen.push(value);
    taken += `${value}\n`;
    chars += value.length + 2;
  };
  const present = new Set(ordered.map((anchor) => anchor.value));
  for (const value of options.preferredAnchors ?? []) {
    if (chosen.length >= limit) break;
    if (present.has(value)) take(value);
  }
  for (const anchor of ordered) {
    if (chosen.length >= limit) break;
    if (!options.omitAnchors?.has(anchor.value)) take(anchor.value);
  }
  return chosen;
}

/** The fold summary: what it was, its status, its key anchors, and the recovery pointer. */
export function renderFold(ledger: Ledger, object: LedgerObject, options: FoldOptions = {}): string {
  if (object.kind === 'function') {
    const head = describeCall(object);
    const status = object.isError ? 'error' : 'ok';
    const anchors = keyAnchorsOf(outputEntries(ledger, object), options, head);
    const lines = [
      `[folded ${object.id}: ${head} → ${status}, ${compactTokens(object.tokens)} tokens]`,
      ...(options.summary ? [oneLine(options.summary, 400)] : []),
      ...(anchors.length > 0 ? [`anchors: ${anchors.join(', ')}`] : []),
      `(exact output kept; expand("${object.id}") recovers it)`,
    ];
    return lines.join('\n');
  }
  const request = oneLine(objectText(ledger, object), 200);
  const anchors = keyAnchorsOf(
    indexEntriesOf(ledger.messages.slice(object.span.start, object.span.end)),
    options,
    request,
  );
  const messages = object.span.end - object.span.start;
  return [
    `[folded ${object.id}: user asked "${request}"; ${messages} messages followed]`,
    ...(options.summary ? [oneLine(options.summary, 600)] : []),
    ...(anchors.length > 0 ? [`anchors: ${anchors.join(', ')}`] : []),
    `(exact messages kept; expand("${object.id}") recovers them)`,
  ].join('\n');
}

/** The one-line tombstone of a pruned object. */
export function renderTombstone(ledger: Ledger, object: LedgerObject): string {
  if (object.kind === 'function') {
    return `[pruned ${object.id}: ${oneLine(describeCall(object), 100)}${object.isError ? ', failed' : ''}, ${compactTokens(object.tokens)} tokens]`;
  }
  return `[pruned ${object.id}: "${oneLine(objectText(ledger, object), 100)}"]`;
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

/** The masked text: head, structure lines of the middle, a marker, tail. */
export function renderMask(object: LedgerObject, textValue: string, options: MaskOptions = {}): string {
  const head = options.headLines ?? 8;
  const tail = options.tailLines ?? 6;
  const lines = textValue.split('\n');
  const middle = lines.slice(head, Math.max(head, lines.length - tail));
  const structure = middle.filter((line) => STRUCTURE_LINE.test(line)).slice(0, options.structureLines ?? 12);
  const hidden = middle.length - structure.length;
  const marker = `[… ${hidden} of ${lines.length} lines masked (${object.id}, ${compactTokens(object.tokens)} tokens in full); expand("${object.id}") recovers them …]`;
  return [
    ...lines.slice(0, head),
    ...(structure.length > 0 ? [...structure.map((line) => oneLine(line, 200))] : []),
    marker,
    ...lines.slice(lines.length - tail),
  ].join('\n');
}
