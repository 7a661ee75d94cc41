/**
 * What a governance thread keeps of the last body of each conversation, so that the next request
 * of the conversation (the same body with a few messages more) costs what it adds, not what it
 * repeats:
 *
 * - **Parse**: the body's bytes are laid out (`json-layout.ts`) and compared with the kept body's,
 *   field by field and message by message; a field or a conversation element whose bytes are the
 *   same is not decoded or parsed again, its parsed value is taken over.
 * - **Transcript**: the adapter reads the conversation from the first element that differs on
 *   (`read-resume.ts`), after the kept reading of the elements before it, and each canonical
 *   message that is the same JSON as the kept one at its index, from the start on, is the kept
 *   message object, whose content chain link is known: only the messages after the first that
 *   differs are hashed (`content-hash.ts`). An edit anywhere — one byte of an earlier message, a
 *   message taken out, another conversation — ends the shared prefix there.
 * - **Render**: the governed body is written with the client's bytes for every part it left as
 *   it came (`render-body-bytes.ts`), and what it serialised (a fold's summary) is kept with the
 *   body, so that the next request writes it from those bytes when it is the same again.
 *
 * Nothing here decides what is the same conversation: a body is compared with the kept bodies of
 * its namespace, route and opening messages, and only byte-identical elements and equal messages
 * are reused, so a wrong guess costs time, never content. Parsed values are shared between
 * requests and must not be mutated (no dialect does: they copy what they change).
 */
import { createHash } from 'node:crypto';
import type { ElementReading } from '../adapters/read-resume.js';
import { transcriptChain } from '../core/content-hash.js';
import type { Message } from '../core/transcript.js';
import { sameBytes, sharedPrefix } from './byte-compare.js';
import { type FieldLayout, layoutJsonObject } from './json-layout.js';
import { type ParsedBody, renderBodyBytes, type SerialisedElements } from './render-body-bytes.js';
import { sameJson } from './same-json.js';
import type { JsonObject, WireDialect } from './wire-dialect.js';

export interface TranscriptCacheOptions {
  /** Bodies kept, one per conversation at most (default 256). */
  maxEntries?: number;
  /** Bytes of kept bodies, in all (default 128 MiB); a body larger than this is not kept. */
  maxBytes?: number;
}

/** What the cache reads a transcript with: a governed route's dialect. */
export type TranscriptReader = Pick<
  WireDialect,
  'route' | 'conversationField' | 'transcriptFields' | 'readElements'
>;

export interface ReadInput {
  dialect: TranscriptReader;
  /** The request's namespace (the API key's hash): bodies are compared within it only. */
  namespace: string;
  /** The body. Kept once its transcript is kept: never changed or moved to another thread after. */
  bytes: Uint8Array;
}

/** A body's canonical transcript, bound to what the cache knew: reused messages and the content chain. */
export interface BoundTranscript {
  messages: Message[];
  /** Where each conversation element's messages end in `messages` (`ElementReading.ends`). */
  ends: number[];
  /** `transcriptChain(messages)`. */
  chain: string[];
  /** Leading messages taken over from the kept transcript. */
  reused: number;
  /** Keep the body and this transcript for the conversation's next request (once it passed every check). */
  keep(): void;
}

/** One request's body, read through the cache. */
export interface BodyReading {
  body: JsonObject;
  /** Leading conversation elements whose bytes matched the kept body's. */
  reusedElements: number;
  /**
   * The transcript of `body`: read from the first element that differs from the kept body's on
   * (what comes before is the kept reading), the kept messages taken over as far as they are
   * the same, and its chain. A `BadInputError` is the dialect's, as `readTranscript` throws it.
   */
  transcript(): BoundTranscript;
  /** The bytes of a body derived from `body`, the client's own where it is unchanged. */
  render(body: JsonObject): Uint8Array;
}

export interface TranscriptCache {
  /** The body, or undefined when its bytes are not a JSON object's outline (parse it whole). */
  read(input: ReadInput): BodyReading | undefined;
  /** Bodies and bytes kept now. */
  size(): { entries: number; bytes: number };
}

/** Conversation elements that name a conversation for the lookup: system and opening turns. */
const OPENING_ELEMENTS = 3;

/** Kept bodies per lookup key: conversations that open alike (the same prompt run twice). */
const ENTRIES_PER_KEY = 4;

interface Entry {
  key: string;
  /** `namespaceKey` of the request it was read from. */
  namespace: string;
  parsed: ParsedBody;
  fields: ReadonlyMap<string, FieldLayout>;
  /** The transcript as read, with where each conversation element's messages end. */
  reading: ElementReading;
  chain: readonly string[];
  /** What the governed body written from it serialised, once it is rendered (counted in the bytes kept). */
  rendered: Rendered;
}

interface Rendered {
  elements?: SerialisedElements;
  /** Bytes of `elements`. */
  bytes: number;
  /** Whether its entry is kept now. */
  kept: boolean;
}

/** What an entry holds, in bytes. */
function weightOf(entry: Entry): number {
  return entry.parsed.bytes.byteLength + entry.rendered.bytes;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function spanBytes(bytes: Uint8Array, span: { start: number; end: number }): Uint8Array {
  return bytes.subarray(span.start, span.end);
}

/** Leading elements of an array field that are byte for byte the kept body's. */
function sharedElements(entry: Entry, bytes: Uint8Array, field: FieldLayout | undefined): number {
  const kept = field === undefined ? undefined : entry.fields.get(field.key);
  if (field?.elements === undefined || kept?.elements === undefined) return 0;
  const [ours, theirs] = [field.elements, kept.elements];
  const length = Math.min(ours.length, theirs.length);
  if (length === 0) return 0;
  // Elements placed alike from the first on are compared in one run, which usually holds.
  let aligned = 0;
  const [base, keptBase] = [ours[0]!.start, theirs[0]!.start];
  while (
    aligned < length &&
    ours[aligned]!.start - base === theirs[aligned]!.start - keptBase &&
    ours[aligned]!.end - base === theirs[aligned]!.end - keptBase
  )
    aligned += 1;
  const run = (count: number) =>
    sameBytes(
      bytes.subarray(base, ours[count - 1]!.end),
      entry.parsed.bytes.subarray(keptBase, theirs[count - 1]!.end),
    );
  if (aligned > 0 && run(aligned)) return aligned;
  let shared = 0;
  while (
    shared < length &&
    sameBytes(spanBytes(bytes, ours[shared]!), spanBytes(entry.parsed.bytes, theirs[shared]!))
  )
    shared += 1;
  return shared;
}

/** The kept body sharing the longest beginning with these bytes (the latest of equals). */
function closestEntry(candidates: readonly Entry[], bytes: Uint8Array): Entry | undefined {
  let closest: Entry | undefined;
  let longest = -1;
  for (const candidate of candidates) {
    const shared = sharedPrefix(candidate.parsed.bytes, bytes);
    if (shared >= longest) {
      closest = candidate;
      longest = shared;
    }
  }
  return closest;
}

/**
 * The value of a field, from the kept body where its bytes (or its leading elements) match.
 * `shared`: its leading elements known to match, when the caller counted them.
 */
function fieldValue(
  field: FieldLayout,
  bytes: Uint8Array,
  entry: Entry | undefined,
  shared?: number,
): unknown {
  const kept = entry?.fields.get(field.key);
  if (entry !== undefined && kept !== undefined) {
    if (sameBytes(spanBytes(bytes, field), spanBytes(entry.parsed.bytes, kept))) {
      return entry.parsed.values.get(field.key);
    }
    shared ??= sharedElements(entry, bytes, field);
    if (shared > 0) {
      const keptValues = entry.parsed.values.get(field.key) as unknown[];
      const rest = field.elements!.slice(shared);
      return [...keptValues.slice(0, shared), ...parseElements(bytes, rest)];
    }
  }
  return JSON.parse(decoder.decode(spanBytes(bytes, field)));
}

/** Elements parsed in one go: the text between the first's start and the last's end. */
function parseElements(
  bytes: Uint8Array,
  elements: ReadonlyArray<{ start: number; end: number }>,
): unknown[] {
  if (elements.length === 0) return [];
  const text = decoder.decode(bytes.subarray(elements[0]!.start, elements.at(-1)!.end));
  return JSON.parse(`[${text}]`) as unknown[];
}

/** Whether a top-level field is absent from both bodies or has the same bytes in both. */
function sameField(entry: Entry, bytes: Uint8Array, field: FieldLayout | undefined, name: string): boolean {
  const kept = entry.fields.get(name);
  if (field === undefined || kept === undefined) return field === kept;
  return sameBytes(spanBytes(bytes, field), spanBytes(entry.parsed.bytes, kept));
}

/**
 * Messages with the kept ones taken over, from the start on, as long as they are the same (a
 * resumed reading starts with the kept objects themselves), and the chain: only what follows
 * is hashed.
 */
function bindReading(
  messages: readonly Message[],
  entry: Entry | undefined,
): { messages: Message[]; chain: string[]; reused: number } {
  const known = entry?.reading.messages ?? [];
  const length = Math.min(messages.length, known.length);
  let reused = 0;
  while (reused < length && sameJson(messages[reused], known[reused])) reused += 1;
  const chain = (entry?.chain ?? []).slice(0, reused);
  chain.push(...transcriptChain(messages.slice(reused), chain.at(-1) ?? ''));
  return { messages: [...known.slice(0, reused), ...messages.slice(reused)], chain, reused };
}

/**
 * Whether a body continues the kept one it was read against (an append, breakpoints moved, a
 * late edit), so that it takes its place; a body that parts early (the same prompt run again)
 * is kept beside it.
 */
function continues(entry: Entry | undefined, conversation: FieldLayout | undefined, shared: number): boolean {
  const kept = conversation === undefined ? undefined : entry?.fields.get(conversation.key)?.elements;
  return kept !== undefined && shared > kept.length / 2;
}

/** Route and namespace: what a kept body is compared within. */
function namespaceKey(input: ReadInput): string {
  return `${input.dialect.route}\0${input.namespace}`;
}

function lookupKey(input: ReadInput, conversation: FieldLayout | undefined): string {
  const { bytes } = input;
  const hash = createHash('sha256').update(`${namespaceKey(input)}\0`);
  if (conversation?.elements === undefined) {
    if (conversation !== undefined) hash.update(spanBytes(bytes, conversation));
  } else {
    for (const element of conversation.elements.slice(0, OPENING_ELEMENTS)) {
      hash.update(spanBytes(bytes, element));
      hash.update('\0');
    }
  }
  return hash.digest('hex');
}

export function createTranscriptCache(options: TranscriptCacheOptions = {}): TranscriptCache {
  const maxEntries = options.maxEntries ?? 256;
  const maxBytes = options.maxBytes ?? 128 * 1024 * 1024;
  /** Kept bodies by lookup key, least recently used key first. */
  const entries = new Map<string, Entry[]>();
  /** The body kept last in each route and namespace. */
  const latest = new Map<string, Entry>();
  let count = 0;
  let bytesKept = 0;

  const forget = (entry: Entry) => {
    count -= 1;
    bytesKept -= weightOf(entry);
    entry.rendered.kept = false;
    if (latest.get(entry.namespace) === entry) latest.delete(entry.namespace);
  };

  const evict = () => {
    while (count > maxEntries || bytesKept > maxBytes) {
      const [key, list] = entries.entries().next().value!;
      forget(list.shift()!);
      if (list.length === 0) entries.delete(key);
    }
  };

  const keep = (entry: Entry, replaced: Entry | undefined) => {
    if (weightOf(entry) > maxBytes) return;
    const list = (entries.get(entry.key) ?? []).filter((kept) => {
      if (kept !== replaced) return true;
      forget(kept);
      return false;
    });
    list.push(entry);
    count += 1;
    bytesKept += weightOf(entry);
    entry.rendered.kept = true;
    latest.set(entry.namespace, entry);
    if (list.length > ENTRIES_PER_KEY) forget(list.shift()!);
    entries.delete(entry.key);
    entries.set(entry.key, list);
    evict();
  };

  return {
    size: () => ({ entries: count, bytes: bytesKept }),
    read(input) {
      // Kept as they are: whoever hands a request's bytes on after this copies them.
      const { bytes, dialect } = input;
      // The conversation's opening names it for the lookup: the bytes are scanned up to there,
      // what the namespace's latest body shares with them (its tool definitions) taken over.
      const hint = latest.get(namespaceKey(input));
      const opening = layoutJsonObject(bytes, {
        until: { field: dialect.conversationField, elements: OPENING_ELEMENTS },
        ...(hint === undefined ? {} : { previous: hint.parsed }),
      });
      if (opening === undefined) return undefined;
      const key = lookupKey(
        input,
        opening.find((field) => field.key === dialect.conversationField),
      );
      const entry = closestEntry(entries.get(key) ?? [], bytes);
      const fields = layoutJsonObject(bytes, entry === undefined ? {} : { previous: entry.parsed });
      if (fields === undefined) return undefined;
      const byKey = new Map(fields.map((field) => [field.key, field]));
      // Repeated keys and `__proto__` read differently as members than as assignments.
      if (byKey.size !== fields.length || byKey.has('__proto__')) return undefined;
      const conversation = byKey.get(dialect.conversationField);
      const reusedElements = entry === undefined ? 0 : sharedElements(entry, bytes, conversation);
      const values = new Map<string, unknown>();
      const body: JsonObject = {};
      try {
        for (const field of fields) {
          const value = fieldValue(field, bytes, entry, field === conversation ? reusedElements : undefined);
          values.set(field.key, value);
          body[field.key] = value;
        }
      } catch (error) {
        // Not JSON after all (or not UTF-8): the whole body is parsed, which says where.
        if (error instanceof SyntaxError || error instanceof TypeError) return undefined;
        throw error;
      }
      const parsed: ParsedBody = { bytes, fields, values };
      const rendered: Rendered = { bytes: 0, kept: false };
      return {
        body,
        reusedElements,
        transcript() {
          // The kept reading holds for the elements that did not change, if what else the
          // transcript is read from did not either.
          const kept = entry;
          const resume =
            kept !== undefined &&
            reusedElements > 0 &&
            dialect.transcriptFields.every((name) => sameField(kept, bytes, byKey.get(name), name))
              ? { index: reusedElements, before: kept.reading }
              : undefined;
          const reading = dialect.readElements(body, resume);
          const bound = bindReading(reading.messages, kept);
          const next: Entry = {
            key,
            namespace: namespaceKey(input),
            parsed,
            fields: byKey,
            reading: { messages: bound.messages, ends: reading.ends },
            chain: bound.chain,
            rendered,
          };
          return {
            ...bound,
            ends: reading.ends,
            keep: () => keep(next, continues(kept, conversation, reusedElements) ? kept : undefined),
          };
        },
        render(governed) {
          // What the conversation's last governed body serialised is written from its bytes.
          const next: SerialisedElements = new Map();
          const out = renderBodyBytes(governed, parsed, { previous: entry?.rendered.elements, next });
          let bytes = 0;
          for (const list of next.values()) for (const element of list) bytes += element.bytes.byteLength;
          if (rendered.kept) bytesKept += bytes - rendered.bytes;
          rendered.elements = next;
          rendered.bytes = bytes;
          if (rendered.kept) evict();
          return out;
        },
      };
    },
  };
}
