/**
 * OpenAI Chat Completions streams merged into one completion: every chunk carries the first
 * round's `id` (the SDK's `ChatCompletionStream` starts a new completion when the id changes),
 * the role comes once, text goes out as it arrives, the client's tool calls come at the end
 * renumbered from 0, then one `finish_reason`, the usage chunk and `[DONE]`.
 */
import {
  payloadOf,
  type SseMessage,
  type StreamMerger,
  type StreamMergerOptions,
  UNFINISHED_TURN_NOTE,
} from './stream-merger.js';
import { isJsonObject, type JsonObject, numberOf, replaceFields } from './wire-dialect.js';

/** One tool call of the round, assembled, with the deltas it came in. */
interface HeldCall {
  id: string;
  name: string;
  arguments: string;
  /** The call's other fields (Gemini's `extra_content`), the latest of each. */
  fields: JsonObject;
  deltas: JsonObject[];
}

/** The fields of a call delta that assemble into the call itself, not into `fields`. */
const CALL_DELTA_KEYS = new Set(['index', 'id', 'type', 'function']);

/**
 * A delta's other fields into the message assembled so far: text (`reasoning_content`) appends,
 * lists (`reasoning_details`) merge by entry (`mergeEntries`), anything else replaces.
 */
function assemble(into: JsonObject, delta: JsonObject, skip: ReadonlySet<string>): void {
  for (const [key, value] of Object.entries(delta)) {
    if (skip.has(key) || value === null || value === undefined) continue;
    const held = into[key];
    if (typeof value === 'string' && typeof held === 'string') into[key] = held + value;
    else if (Array.isArray(value) && Array.isArray(held)) into[key] = mergeEntries(held, value);
    else into[key] = value;
  }
}

/** The fields of a list entry whose fragments are parts of one text (OpenRouter's reasoning). */
const ENTRY_TEXT_KEYS = new Set(['text', 'summary', 'data']);

/**
 * A list's fragments into the entries they belong to: OpenRouter streams each `reasoning_details`
 * entry in fragments of the same `index` (its text in pieces, the signature in the last), and
 * takes the entries back only whole. A fragment with no index, or a new one, is an entry of its own.
 */
function mergeEntries(held: readonly unknown[], fragments: readonly unknown[]): unknown[] {
  const entries = [...held];
  for (const fragment of fragments) {
    const at =
      isJsonObject(fragment) && typeof fragment.index === 'number'
        ? entries.findIndex((entry) => isJsonObject(entry) && entry.index === fragment.index)
        : -1;
    const entry = at < 0 ? undefined : entries[at];
    if (!isJsonObject(entry) || !isJsonObject(fragment)) {
      entries.push(fragment);
      continue;
    }
    const merged: JsonObject = { ...entry };
    for (const [key, value] of Object.entries(fragment)) {
      if (value === null || value === undefined) continue;
      const before = merged[key];
      merged[key] =
        ENTRY_TEXT_KEYS.has(key) && typeof before === 'string' && typeof value === 'string'
          ? before + value
          : value;
    }
    entries[at] = merged;
  }
  return entries;
}

/** What the message assembles apart from its role, its text and its calls. */
const MESSAGE_DELTA_KEYS = new Set(['role', 'content', 'tool_calls']);

/**
 * A later round's delta as the client gets it: without its signed thinking (OpenRouter's
 * `reasoning.text` entries). The rounds after the first continue its turn, whose thinking the
 * client already has; OpenRouter's AI SDK provider joins consecutive text entries into one under
 * the first signature, which the API then refuses. Its thinking as text (`reasoning`) stays.
 */
function withoutSignedThinking(delta: JsonObject): JsonObject {
  if (!Array.isArray(delta.reasoning_details)) return delta;
  const kept = delta.reasoning_details.filter(
    (entry) => !(isJsonObject(entry) && entry.type === 'reasoning.text'),
  );
  return replaceFields(delta, { reasoning_details: kept.length > 0 ? kept : undefined });
}

/**
 * The text of a delta's content: a string, or the text chunks of a list (Mistral's reasoning
 * models stream thinking chunks, then text ones; the thinking is not passed back).
 */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) =>
      isJsonObject(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : '',
    )
    .join('');
}

function chunkEvent(chunk: JsonObject): SseMessage {
  return { data: JSON.stringify(chunk) };
}

export function mergeChatStreams(options: StreamMergerOptions): StreamMerger {
  let identity: { id: unknown; created: unknown } | undefined;
  let roleSent = false;
  let content = '';
  /** Whether the client got any text of the answer, in any round. */
  let spoke = false;
  /** Whether a round went on upstream: the proxy took its calls out. */
  let recovered = false;
  /** The message's other fields this round (`reasoning_content`). */
  let fields: JsonObject = {};
  let calls = new Map<number, HeldCall>();
  /** The chunk that finished the round, its choice and its reason (null: it named none). */
  let finish: { chunk: JsonObject; choice: JsonObject; reason: string | null } | undefined;
  /** The round's latest chunk of its choice. */
  let lastChunk: JsonObject | undefined;
  let usage: JsonObject | undefined;
  let done = false;
  let failed = false;

  /** The call the latest delta went to. */
  let lastIndex: number | undefined;
  /**
   * The call a delta belongs to: its `index`; without one (Gemini's OpenAI endpoint, older
   * Ollama and SGLang send each call whole), a new call when it brings a new id, else the last.
   */
  const indexOf = (delta: JsonObject): number => {
    const index = numberOf(delta.index);
    if (index !== undefined) return index;
    const last = lastIndex === undefined ? undefined : calls.get(lastIndex);
    if (last !== undefined && (typeof delta.id !== 'string' || delta.id === last.id)) return lastIndex!;
    return calls.size === 0 ? 0 : Math.max(...calls.keys()) + 1;
  };

  const holdCall = (delta: unknown) => {
    if (!isJsonObject(delta)) return;
    const index = indexOf(delta);
    lastIndex = index;
    const call = calls.get(index) ?? { id: '', name: '', arguments: '', fields: {}, deltas: [] };
    const fn = isJsonObject(delta.function) ? delta.function : {};
    if (typeof delta.id === 'string') call.id = delta.id;
    // Kimi on Fireworks and MiniMax on NVIDIA NIM send the whole name again with every piece.
    if (typeof fn.name === 'string' && fn.name !== call.name) call.name += fn.name;
    if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
    assemble(call.fields, delta, CALL_DELTA_KEYS);
    call.deltas.push(delta);
    calls.set(index, call);
  };

  /** The part of a choice that goes out now: without tool calls, a repeated role, or the finish. */
  const liveChoice = (choice: JsonObject, chunk: JsonObject): JsonObject | undefined => {
    // The request asked for one choice: a gateway that leaves out its index (one-api) sends that one.
    if ((numberOf(choice.index) ?? 0) !== 0) return choice;
    const { tool_calls: toolCalls, role, ...read } = isJsonObject(choice.delta) ? choice.delta : {};
    if (Array.isArray(toolCalls)) for (const call of toolCalls) holdCall(call);
    const text = textOf(read.content);
    content += text;
    if (text !== '') spoke = true;
    assemble(fields, read, MESSAGE_DELTA_KEYS);
    const delta = recovered ? withoutSignedThinking(read) : read;
    if (typeof choice.finish_reason === 'string') {
      finish = { chunk, choice: { ...choice, delta: {} }, reason: choice.finish_reason };
    }
    if (role !== undefined && !roleSent) {
      roleSent = true;
      return { ...choice, delta: { role, ...delta }, finish_reason: null };
    }
    const empty = Object.values(delta).every((value) => value === null || value === '');
    if (empty && (choice.logprobs === null || choice.logprobs === undefined)) return undefined;
    return { ...choice, delta, finish_reason: null };
  };

  const startRound = () => {
    content = '';
    fields = {};
    calls = new Map();
    lastIndex = undefined;
    finish = undefined;
    lastChunk = undefined;
    usage = undefined;
    done = false;
  };

  return {
    push(message) {
      if (message.data === '[DONE]') {
        done = true;
        return [];
      }
      const payload = payloadOf(message);
      if (payload === undefined) return [message];
      if (payload.error !== undefined && payload.error !== null) {
        failed = true;
        return [message];
      }
      identity ??= { id: payload.id, created: payload.created };
      const chunk = { ...payload, ...identity };
      const choices = Array.isArray(payload.choices) ? payload.choices.filter(isJsonObject) : [];
      if (choices.length === 0 && isJsonObject(payload.usage)) {
        usage = chunk;
        return [];
      }
      if (choices.length > 0) lastChunk = chunk;
      const live = choices.flatMap((choice) => liveChoice(choice, chunk) ?? []);
      return live.length === 0 && choices.length > 0 ? [] : [chunkEvent({ ...chunk, choices: live })];
    },
    endRound() {
      if (failed) return { kind: 'failed' };
      // Google's OpenAI endpoint once, and gateways for Gemini and Claude (one-api), end with
      // `[DONE]` and never name a finish: the answer is whole all the same.
      if (finish === undefined && done && lastChunk !== undefined) {
        finish = { chunk: lastChunk, choice: { index: 0, delta: {} }, reason: null };
      }
      if (finish === undefined) return { kind: 'cut' };
      const toolCalls = [...calls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([, call]) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
          ...call.fields,
        }));
      const message = {
        role: 'assistant',
        content: content === '' ? null : content,
        ...fields,
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      };
      return {
        kind: 'answered',
        answer: { choices: [{ index: 0, message, finish_reason: finish.reason }] },
      };
    },
    continueRound() {
      startRound();
      recovered = true;
      return [];
    },
    finish() {
      const events: SseMessage[] = [];
      const kept = [...calls.entries()]
        .sort(([a], [b]) => a - b)
        .filter(([, call]) => !options.isInternal(call.name));
      if (finish !== undefined) {
        const { chunk, choice, reason } = finish;
        const base = { ...chunk, ...(isJsonObject(chunk.usage) ? { usage: null } : {}) };
        kept.forEach(([, call], index) => {
          for (const delta of call.deltas) {
            const toolCalls = [{ ...delta, index }];
            const held = { ...choice, delta: { tool_calls: toolCalls }, finish_reason: null };
            events.push(chunkEvent({ ...base, choices: [held] }));
          }
        });
        const last = reason === 'tool_calls' && kept.length === 0 ? 'stop' : reason;
        // The proxy's calls were all it had (whatever finish the server gave them): the client's
        // message may not be left empty.
        if (kept.length === 0 && (recovered || calls.size > 0) && !spoke) {
          events.push(
            chunkEvent({
              ...base,
              choices: [{ ...choice, delta: { content: UNFINISHED_TURN_NOTE }, finish_reason: null }],
            }),
          );
        }
        events.push(chunkEvent({ ...chunk, choices: [{ ...choice, finish_reason: last }] }));
      }
      if (usage !== undefined) events.push(chunkEvent(usage));
      if (done) events.push({ data: '[DONE]' });
      startRound();
      return events;
    },
    fail({ body }) {
      return [chunkEvent(body)];
    },
  };
}
