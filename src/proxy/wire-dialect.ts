/**
 * What the proxy needs to know about one governed route's wire format. Each route declares its
 * own capabilities here, so the request path never switches on a concrete provider.
 */

import type { ElementReading, ReadResume } from '../adapters/read-resume.js';
import { BadInputError } from '../core/errors.js';
import type { Message } from '../core/transcript.js';
import type { ProviderName } from './proxy-errors.js';
import type { StreamMerger, StreamMergerOptions } from './stream-merger.js';

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A tool the proxy adds to a request, in provider-neutral form. */
export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON schema of the arguments. */
  parameters: JsonObject;
}

/** A tool call found in an upstream answer. */
export interface WireToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments. */
  arguments: string;
}

/** Prompt tokens of one answer, as the upstream reported them. */
export interface TokenUsage {
  /** Every prompt token, cached or not. */
  inputTokens: number;
  /** Prompt tokens read from the provider's cache. */
  cachedTokens: number;
}

/** A body to send instead of one the upstream refused, and a beta header it wants or does not. */
export interface RefusalRemedy {
  body: JsonObject;
  /** A beta the body goes with. */
  addBeta?: string;
  /** A beta the body goes without (taken out when the proxy added it, else no remedy). */
  dropBeta?: string;
}

export interface WireDialect {
  /** Route name used in metrics and logs. */
  readonly route: 'chat' | 'responses' | 'messages';
  readonly provider: ProviderName;
  /** The top-level field that holds the conversation. */
  readonly conversationField: 'messages' | 'input';
  /** The other top-level fields the transcript is read from (Anthropic's `system`). */
  readonly transcriptFields: readonly string[];
  /**
   * The checks the provider itself makes before reading a conversation (`model` present,
   * `messages` an array): a `BadInputError` here is the client's error, answered with a 400.
   */
  checkBody(body: JsonObject): void;
  /**
   * The canonical transcript of a body that passed `checkBody`. A `BadInputError` here is a shape
   * the adapters cannot read, not proof of a bad request: the proxy forwards it ungoverned.
   */
  readTranscript(body: JsonObject): Message[];
  /**
   * `readTranscript` with where each conversation element's messages end, read from element
   * `resume.index` on when an earlier reading of the same transcript fields and elements before
   * it is known (the transcript cache).
   */
  readElements(body: JsonObject, resume?: ReadResume): ElementReading;
  /**
   * The body with its transcript replaced by `view`, every other field as it came. `read`: how
   * the body's own conversation was read (`readElements`), so that an element whose messages the
   * view holds whole may be written as the client's element itself.
   */
  writeTranscript(body: JsonObject, view: readonly Message[], read?: ElementReading): JsonObject;
  /**
   * Whether the client's body may go upstream as it came when the view is its transcript
   * unchanged (default yes); no, when writing it would still change it (Anthropic: more
   * breakpoints than the API's four).
   */
  sendsAsCame?(body: JsonObject): boolean;
  /** Text of the request outside the transcript that identifies a conversation (instructions). */
  identitySeed?(body: JsonObject): string;
  /**
   * What the model reads besides the transcript, as texts to count: tool definitions (as JSON),
   * Responses `instructions`, output schemas.
   */
  promptBesideTranscript(body: JsonObject): string[];
  /** The request's output limit (`max_tokens` and the like), or undefined when it names none. */
  outputLimit(body: JsonObject): number | undefined;
  /** Why a request cannot be governed (its history lives upstream), or undefined. */
  ungovernedReason?(body: JsonObject): string | undefined;
  /** The stored answer a request continues (the id it names), or undefined. */
  continuedAnswer?(body: JsonObject): string | undefined;
  /** The request made to continue the stored answer `id` instead (`stored-responses.ts`). */
  continuingStored?(body: JsonObject, id: string): JsonObject;
  /** Whether the proxy can answer its own tools in the answers to this request (default yes). */
  recoverable?(body: JsonObject): boolean;
  /**
   * A body the proxy changed, made so that the change does not get it refused for the model's
   * earlier reasoning it invalidated (Anthropic's preserved thinking, `thinking-binding.ts`), with
   * the beta header that takes; undefined when the body needs nothing.
   */
  afterChange?(body: JsonObject): { body: JsonObject; beta: string } | undefined;
  /**
   * What to send once instead of a body the upstream refused (a 400 or a 500, `error` its text) over what
   * the proxy changed (Anthropic: a thinking block bound to another prefix, or the setting that
   * drops such blocks unknown to the platform; Chat: the proxy's tools, on a server that takes
   * none), or undefined when nothing better is known.
   * `body` reads the refused body, undefined when it cannot: only when `error` is of that kind.
   */
  afterRefusal?(error: string, body: () => JsonObject | undefined): RefusalRemedy | undefined;
  /** Usage from an answer or from one stream event's data; undefined fields were not reported. */
  usageOf(payload: unknown): Partial<TokenUsage> | undefined;
  /**
   * An answer (or one stream event's data) whose usage reports a prompt of `tokens` at least: its
   * uncached prompt tokens (and total, when reported) raised by what is missing, never lowered.
   * Undefined when it reports no prompt tokens, or as many already (`client-compaction-signal.ts`).
   */
  withPromptUsage(payload: JsonObject, tokens: number): JsonObject | undefined;
  /** The body with `tools` added after the client's own (names already present are skipped). */
  withTools(body: JsonObject, tools: readonly ToolDefinition[]): JsonObject;
  /** Tool calls of a (non-streamed) answer; empty when it calls none or has several choices. */
  toolCallsOf(answer: unknown): WireToolCall[];
  /**
   * Whether an answer that calls tools ended its turn for their results, so that recovery may
   * answer the proxy's and go on; false for a turn the provider cut short (the output limit,
   * which may have cut the call itself; a refusal or the content filter, after which a
   * conversation must not go on as it stands). Absent: every answer that calls tools waits for
   * their results.
   */
  awaitsResults?(answer: JsonObject): boolean;
  /**
   * The answer with only the tool calls whose name `keep` accepts; an answer left with none
   * reads as a finished turn (`stop`, `end_turn`) instead of a tool call. `client`, when the
   * answer goes to the client (what of its request shapes its answer): a Responses answer whose
   * items the provider keeps is cut where the client could not pass them back; without it, the
   * turn goes on upstream, and one left without some of its items goes as new input.
   */
  keepToolCalls(answer: JsonObject, keep: (name: string) => boolean, client?: JsonObject): JsonObject;
  /** The body continued with the answer's assistant turn and one result per call. */
  withToolResults(
    body: JsonObject,
    answer: unknown,
    results: ReadonlyArray<{ id: string; output: string }>,
  ): JsonObject;
  /**
   * The last answer of a request recovery continued, with what the client must get of the turn
   * the first round opened (`firstTurn`: that answer with its proxy calls only). Anthropic's
   * thinking: the rounds after the first continue its turn and open with none, and with thinking
   * on the API refuses a last assistant message that does not open with it.
   */
  withTurnOpening?(answer: JsonObject, firstTurn: JsonObject): JsonObject;
  /**
   * An answer that echoes the request's tools (Responses does) with the proxy's own tools and
   * tool choice taken out again, as the client sent them.
   */
  hideAddedTools?(answer: JsonObject, client: JsonObject, added: ReadonlySet<string>): JsonObject;
  /**
   * The body with tool use switched off for the next answer, unless the client forces a call
   * (`tool_choice` `any` or `required`, or a tool it names): its answer must hold one, and a proxy
   * call made anyway is taken out of what the client gets.
   */
  withoutToolUse(body: JsonObject): JsonObject;
  /**
   * A merger of the streamed answers of several upstream calls into one client stream in this
   * route's event grammar, for transparent recovery of streamed requests.
   */
  mergeStreams(options: StreamMergerOptions): StreamMerger;
}

/** The body's `model`, which every governed route requires. */
/**
 * What a server-sent event's data reports of usage, parsed only when it holds a usage object:
 * the opening events of a Responses stream carry the whole response (the request's instructions
 * and tools echoed) with `"usage": null`, and are passed by unread.
 */
export function eventUsage(
  dialect: Pick<WireDialect, 'usageOf'>,
  data: string,
): Partial<TokenUsage> | undefined {
  if (!carriesUsage(data)) return undefined;
  try {
    return dialect.usageOf(JSON.parse(data));
  } catch {
    // Usage is for the log; an unreadable event is the client's to judge.
    return undefined;
  }
}

const USAGE_OBJECT = /"usage"\s*:\s*\{/;

/** Whether an event's data is a JSON object that holds a usage object (and is worth parsing). */
export function carriesUsage(data: string): boolean {
  return data.startsWith('{') && USAGE_OBJECT.test(data);
}

/**
 * `usage` with `field` raised by what `counted` (its prompt, as the dialect counts it) lacks of
 * `tokens`, and `total_tokens` with it when reported; undefined when nothing lacks.
 */
export function raisedUsage(
  usage: JsonObject,
  field: string,
  counted: number,
  tokens: number,
): JsonObject | undefined {
  const missing = Math.ceil(tokens - counted);
  if (!(missing > 0)) return undefined;
  const total = numberOf(usage.total_tokens);
  return {
    ...usage,
    [field]: (numberOf(usage[field]) ?? 0) + missing,
    ...(total === undefined ? {} : { total_tokens: total + missing }),
  };
}

/**
 * Whether an OpenAI `tool_choice` (Chat or Responses) forces a call: `required`, or a tool it
 * names (a function, a custom or a hosted tool), or a list of allowed tools in the required mode
 * (Responses gives the mode beside the list, Chat inside its `allowed_tools`).
 */
export function forcesOpenAICall(choice: unknown): boolean {
  if (choice === 'required') return true;
  if (!isJsonObject(choice)) return false;
  if (choice.type !== 'allowed_tools') return true;
  const allowed = isJsonObject(choice.allowed_tools) ? choice.allowed_tools : choice;
  return allowed.mode === 'required';
}

/** The body's field as an array, or a `BadInputError` naming the field. */
export function requireArray(body: JsonObject, field: string): unknown[] {
  const value = body[field];
  if (!Array.isArray(value)) throw new BadInputError(`${field}: expected an array`);
  return value;
}

/** A number, or undefined when the value is not one. */
export function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** A string, or undefined when the value is not one. */
export function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A positive integer, or undefined when the value is not one (the upstream judges the rest). */
export function positiveIntegerOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

/**
 * JSON of request fields already written once: the transcript cache hands the same parsed tool
 * definitions to every request of a conversation, which need not be serialised again to be counted.
 */
const fieldJson = new WeakMap<object, string>();

function jsonOf(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  let text = fieldJson.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    fieldJson.set(value, text);
  }
  return text;
}

/** Texts to count for the given request fields: strings as they are, anything else as JSON. */
export function fieldTexts(...values: unknown[]): string[] {
  const texts: string[] = [];
  for (const value of values) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    texts.push(typeof value === 'string' ? value : jsonOf(value));
  }
  return texts;
}

/** Names of tools a body already has, by a name reader for its tool shape. */
export function presentToolNames(body: JsonObject, nameOf: (tool: JsonObject) => unknown): Set<string> {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const names = new Set<string>();
  for (const tool of tools) {
    const name = isJsonObject(tool) ? nameOf(tool) : undefined;
    if (typeof name === 'string') names.add(name);
  }
  return names;
}

/**
 * The body with some fields replaced in place (key order kept, so the request reads as the
 * client wrote it); a field set to undefined is removed, a new one is appended.
 */
export function replaceFields(body: JsonObject, fields: Readonly<Record<string, unknown>>): JsonObject {
  const result: JsonObject = {};
  for (const [key, value] of Object.entries(body)) {
    const next = key in fields ? fields[key] : value;
    if (next !== undefined) result[key] = next;
  }
  for (const [key, value] of Object.entries(fields)) {
    if (!(key in result) && !(key in body) && value !== undefined) result[key] = value;
  }
  return result;
}
