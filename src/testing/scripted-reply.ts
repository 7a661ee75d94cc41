/**
 * The script of a scripted upstream: what a test wants the fake model to answer, and how usage
 * numbers are derived when a reply does not set them. Provider-neutral; the wire modules render
 * it in each provider's format.
 */

/** A tool call the scripted model makes. */
export interface ScriptedToolCall {
  /** Call id; generated from the request index when absent (`call_…` or `toolu_…`). */
  id?: string;
  /** Tool (function) name. */
  name: string;
  /** Arguments as JSON text, or a value serialised with `JSON.stringify`. */
  arguments: string | Record<string, unknown>;
}

/** Token counts of one answer. `inputTokens` counts every prompt token, cached or not. */
export interface ScriptedUsage {
  inputTokens: number;
  outputTokens: number;
  /** Prompt tokens read from the cache (OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens`). */
  cachedInputTokens: number;
  /** Prompt tokens written to the cache (Anthropic `cache_creation_input_tokens`; OpenAI reports none). */
  cacheWriteInputTokens: number;
}

/** An HTTP error, rendered in the error body format of the path that was called. */
export interface ScriptedError {
  status: number;
  /** Provider error type; defaults by status (`rate_limit_error`, `server_error`, …). */
  type?: string;
  message: string;
  /** OpenAI `code` (for example `rate_limit_exceeded`). */
  code?: string;
  /** OpenAI `param`. */
  param?: string;
}

/** A response sent exactly as given, for malformed or unusual answers. */
export interface ScriptedRaw {
  /** Defaults to 200. */
  status?: number;
  headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON. */
  body: string | object;
}

/** A streamed answer that stops part-way. */
export interface ScriptedStreamCut {
  /** Events sent before the cut. */
  afterEvents: number;
  /** Send this error as the provider's stream error event; without it the connection drops. */
  error?: ScriptedError;
}

/**
 * One scripted answer. Steps apply in this order: `delayMs`, `hang`, `disconnect`, `raw`,
 * `error`, then the content (`json` or `text`, `thinking`, `toolCalls`), cut by `cutStream`
 * when streamed.
 */
export interface ScriptedReply {
  /** Answer text. */
  text?: string;
  /** A structured answer, sent as its JSON text in place of `text`. */
  json?: unknown;
  /** Tool calls, after the text. */
  toolCalls?: ScriptedToolCall[];
  /** Extended thinking (Anthropic only; a `thinking` block before the text). */
  thinking?: string;
  /**
   * Responses only: the answer is one `compaction` item with this as its `encrypted_content`, as
   * the API answers a Codex request that ends in a `compaction_trigger` (its remote compaction).
   */
  compaction?: string;
  /** `length` renders a truncated answer (`finish_reason: length`, `max_tokens`, `incomplete`). */
  stopReason?: 'stop' | 'length';
  /** Token counts to report; missing fields are estimated from the request and the answer. */
  usage?: Partial<ScriptedUsage>;
  /** Model name to report; defaults to the requested model. */
  model?: string;
  /** Extra response headers (for example `retry-after`). */
  headers?: Record<string, string>;
  error?: ScriptedError;
  raw?: ScriptedRaw;
  /** Wait this long before answering (to test timeouts). */
  delayMs?: number;
  /** Never answer; the request stays open until the client gives up or the server closes. */
  hang?: boolean;
  /** Destroy the connection without an answer (a network error for the client). */
  disconnect?: boolean;
  /** When the answer is streamed, stop it part-way (with an error event, or by dropping the connection). */
  cutStream?: ScriptedStreamCut;
}

/** One request the upstream received, as recorded and as given to a script function. */
export interface ScriptedRequest {
  /** 0-based position among all requests this upstream received. */
  index: number;
  method: string;
  /** URL path without the query (`/v1/messages`). */
  path: string;
  /** Lower-case header names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The parsed JSON body, or the raw text when it is not JSON (undefined when empty). */
  body: unknown;
  rawBody: string;
  /** Set once the connection closed before the answer was complete (the client left, or the script cut it). */
  abandoned?: boolean;
  /**
   * Messages, for a model that binds thinking to its prefix: the signatures of the thinking blocks
   * the request sent back behind a changed prefix, which it asked the API to drop
   * (`scripted-thinking-rules.ts`).
   */
  thinkingDropped?: string[];
}

/** Either a queue of replies, used in order, or a function of the request. */
export type Script =
  | readonly ScriptedReply[]
  | ((request: ScriptedRequest) => ScriptedReply | Promise<ScriptedReply>);

/** The content of an answer, normalised for the wire renderers. */
export interface ScriptedContent {
  text: string;
  thinking: string | undefined;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
  truncated: boolean;
  /** The `encrypted_content` of the one `compaction` item of a Responses answer. */
  compaction?: string;
}

export function resolveContent(
  reply: ScriptedReply,
  toolCallId: (position: number) => string,
): ScriptedContent {
  const text = reply.json === undefined ? (reply.text ?? '') : JSON.stringify(reply.json);
  const toolCalls = (reply.toolCalls ?? []).map((call, position) => ({
    id: call.id ?? toolCallId(position),
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
  return {
    text,
    thinking: reply.thinking,
    toolCalls,
    truncated: reply.stopReason === 'length',
    ...(reply.compaction === undefined ? {} : { compaction: reply.compaction }),
  };
}

/** The scripted tokenizer: one token per four characters, rounded up. */
export function estimateTokens(characters: number): number {
  return Math.ceil(characters / 4);
}

const PROMPT_FIELDS = ['system', 'instructions', 'messages', 'input', 'tools'] as const;

/**
 * Prompt tokens of a request body: the JSON text of its prompt-bearing fields (`system`,
 * `instructions`, `messages`, `input`, `tools`) divided by four. Deterministic, so tests can
 * compute the expected number.
 */
export function estimateInputTokens(body: unknown): number {
  if (typeof body !== 'object' || body === null) return 0;
  const record = body as Record<string, unknown>;
  const parts = PROMPT_FIELDS.filter((field) => record[field] !== undefined).map((field) => record[field]);
  return parts.length === 0 ? 0 : estimateTokens(JSON.stringify(parts).length);
}

export function resolveUsage(
  reply: ScriptedReply,
  content: ScriptedContent,
  body: unknown,
  defaultCachedTokens: number,
): ScriptedUsage {
  const produced =
    content.text.length +
    (content.thinking?.length ?? 0) +
    content.toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  const inputTokens = reply.usage?.inputTokens ?? estimateInputTokens(body);
  const cachedInputTokens = Math.min(reply.usage?.cachedInputTokens ?? defaultCachedTokens, inputTokens);
  const cacheWriteInputTokens = Math.min(
    reply.usage?.cacheWriteInputTokens ?? 0,
    inputTokens - cachedInputTokens,
  );
  return {
    inputTokens,
    outputTokens: reply.usage?.outputTokens ?? estimateTokens(produced),
    cachedInputTokens,
    cacheWriteInputTokens,
  };
}

/** Split text into stream deltas of at most `size` code points (never inside a surrogate pair). */
export function chunkText(text: string, size: number): string[] {
  const points = Array.from(text);
  const chunks: string[] = [];
  for (let start = 0; start < points.length; start += size) {
    chunks.push(points.slice(start, start + size).join(''));
  }
  return chunks;
}
