/**
 * Types of the minimal LLM client used by the LLM planner and the LLM judge: one text-in,
 * text-out call against an OpenAI-compatible Chat Completions endpoint or Anthropic Messages.
 */

export type LlmProvider = 'openai' | 'anthropic';

export interface LlmClientOptions {
  /** `openai` means any OpenAI-compatible Chat Completions server (OpenAI, Ollama, vLLM, llama.cpp). */
  provider: LlmProvider;
  /**
   * OpenAI-compatible: the API root including its version (`http://localhost:11434/v1`);
   * requests go to `{baseUrl}/chat/completions`. Anthropic: the origin
   * (`https://api.anthropic.com`); requests go to `{baseUrl}/v1/messages` (a trailing `/v1` is
   * accepted too).
   */
  baseUrl: string;
  /** Sent as `authorization: Bearer …` (OpenAI) or `x-api-key` (Anthropic); local servers need none. */
  apiKey?: string;
  model: string;
  /** Deadline of one `complete` call, retries and waits included. Default 60 000 ms. */
  timeoutMs?: number;
  /** Retries after the first attempt, on 429, 5xx and network errors. Default 2. */
  maxRetries?: number;
  /** Extra request headers (they override the defaults). */
  headers?: Record<string, string>;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** Waits between retries; resolves early when `signal` aborts. Injectable for tests. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Jitter source in [0, 1). Default `Math.random`. */
  random?: () => number;
  /** First backoff step. Default 500 ms; doubles each retry. */
  retryBaseMs?: number;
  /**
   * Largest backoff step. Default 8 000 ms. A `retry-after` (or `retry-after-ms`) of up to 60 s
   * is honoured as given; a longer one falls back to the backoff.
   */
  retryMaxMs?: number;
}

export interface LlmMessage {
  role: 'user' | 'assistant';
  content: string;
}

/**
 * An agent's own request, forked: its parts in the provider's wire format (as the adapters write
 * them), sent first and exactly as given, so that the provider serves them from its prompt
 * cache. The request's own `messages` follow them.
 */
export interface LlmFork {
  /** Anthropic's top-level `system`. OpenAI-compatible: leave it out, system messages are in `messages`. */
  system?: unknown;
  /** The agent's messages. */
  messages: readonly unknown[];
  /** The agent's tool definitions (they come first in the cached prefix). */
  tools?: readonly unknown[];
}

export interface LlmRequest {
  /** Not with `fork`, whose system prompt is the agent's. */
  system?: string;
  messages: LlmMessage[];
  /** Sent before `messages`; see `LlmFork`. */
  fork?: LlmFork;
  /** Output token limit. Anthropic requires one; default 4 096 there. */
  maxTokens?: number;
  temperature?: number;
  /**
   * Ask for a JSON object. OpenAI-compatible: `response_format: { type: 'json_object' }` (the
   * prompt must mention JSON). Anthropic has no such mode: an instruction is added to the system
   * prompt (not with `fork`: the agent's system prompt stays as it is, so ask in `messages`).
   * Either way, read the answer with `extractJson`.
   */
  json?: boolean;
  /** Aborts the call (including retry waits). */
  signal?: AbortSignal;
}

/** Token counts in one vocabulary for both providers. */
export interface LlmUsage {
  /** Every prompt token, cached or not (Anthropic's three input counts summed). */
  inputTokens: number;
  outputTokens: number;
  /** Prompt tokens read from the provider's cache. */
  cachedInputTokens: number;
  /** Prompt tokens written to the cache (Anthropic only; 0 for OpenAI). */
  cacheWriteInputTokens: number;
}

export interface LlmResponse {
  /** The answer text (all text blocks joined). */
  text: string;
  usage: LlmUsage;
  /** The parsed response body, as the provider sent it. */
  raw: unknown;
}

export interface LlmClient {
  readonly provider: LlmProvider;
  readonly model: string;
  complete(request: LlmRequest): Promise<LlmResponse>;
}

/** An HTTP request ready to send. */
export interface LlmHttpRequest {
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** How one provider's wire format is written and read (internal to `src/llm`). */
export interface LlmWireFormat {
  buildRequest(options: LlmClientOptions, request: LlmRequest): LlmHttpRequest;
  /** Read a 2xx body; throws UpstreamError when it is not the expected shape. */
  readResponse(body: unknown): { text: string; usage: LlmUsage };
  /** The provider's error type and message from an error body, when it has them. */
  readError(body: unknown): { type: string | undefined; message: string } | undefined;
}
