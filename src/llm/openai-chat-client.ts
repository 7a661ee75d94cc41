/**
 * OpenAI-compatible Chat Completions wire format: `POST {baseUrl}/chat/completions`. Only what
 * OpenAI, Ollama, vLLM and llama.cpp all accept is sent.
 */

import { BadInputError, UpstreamError } from '../core/errors.js';
import type { LlmClientOptions, LlmRequest, LlmUsage, LlmWireFormat } from './llm-types.js';

/** The subset of a `chat.completion` body this client reads. */
interface ChatCompletion {
  choices?: Array<{ message?: { content?: string | null; refusal?: string | null } }>;
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number } | null;
  } | null;
}

interface OpenaiErrorBody {
  error?: { message?: unknown; type?: unknown } | string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function buildRequest(options: LlmClientOptions, request: LlmRequest) {
  const { fork } = request;
  if (fork && request.system !== undefined)
    throw new BadInputError("a forked request keeps the agent's system prompt: pass no system");
  const messages = [
    ...(request.system === undefined ? [] : [{ role: 'system', content: request.system }]),
    ...(fork?.messages ?? []),
    ...request.messages.map((message) => ({ role: message.role, content: message.content })),
  ];
  const body: Record<string, unknown> = { model: options.model };
  // Tools come first in the prompt the provider caches.
  if (fork?.tools !== undefined) body.tools = fork.tools;
  body.messages = messages;
  body.stream = false;
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.json === true) body.response_format = { type: 'json_object' };
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`;
  return {
    url: `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`,
    headers: { ...headers, ...options.headers },
    body,
  };
}

function readUsage(usage: ChatCompletion['usage']): LlmUsage {
  return {
    inputTokens: usage?.prompt_tokens ?? 0,
    outputTokens: usage?.completion_tokens ?? 0,
    cachedInputTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    cacheWriteInputTokens: 0,
  };
}

function readResponse(body: unknown) {
  const completion = (isRecord(body) ? body : {}) as ChatCompletion;
  const message = Array.isArray(completion.choices) ? completion.choices[0]?.message : undefined;
  if (message === undefined) throw new UpstreamError('openai upstream answered without choices[0].message');
  if (typeof message.content !== 'string' && typeof message.refusal === 'string') {
    throw new UpstreamError(`openai upstream refused: ${message.refusal}`);
  }
  return { text: message.content ?? '', usage: readUsage(completion.usage) };
}

/** `{ error: { message, type, param, code } }`; some compatible servers send `{ error: "…" }`. */
function readError(body: unknown) {
  if (!isRecord(body)) return undefined;
  const { error } = body as OpenaiErrorBody;
  if (typeof error === 'string') return { type: undefined, message: error };
  if (!isRecord(error) || typeof error.message !== 'string') return undefined;
  return { type: typeof error.type === 'string' ? error.type : undefined, message: error.message };
}

export const openaiChatWire: LlmWireFormat = { buildRequest, readResponse, readError };
