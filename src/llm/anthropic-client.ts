/** Anthropic Messages wire format: `POST {baseUrl}/v1/messages`. */

import { BadInputError, UpstreamError } from '../core/errors.js';
import type { LlmClientOptions, LlmRequest, LlmUsage, LlmWireFormat } from './llm-types.js';

export const ANTHROPIC_VERSION = '2023-06-01';

/** Anthropic requires `max_tokens`; this is the default when the caller sets none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/** Anthropic has no JSON mode; this line is added to the system prompt instead. */
export const ANTHROPIC_JSON_INSTRUCTION =
  'Answer with a single JSON object and nothing else: no prose, no code fence.';

/** The subset of a `message` body this client reads. */
interface AnthropicMessage {
  content?: Array<{ type?: string; text?: string }>;
  usage?: {
    input_tokens?: number;
    output_tokens?: number;
    cache_creation_input_tokens?: number | null;
    cache_read_input_tokens?: number | null;
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function messagesUrl(baseUrl: string): string {
  const root = baseUrl.replace(/\/+$/, '');
  return root.endsWith('/v1') ? `${root}/messages` : `${root}/v1/messages`;
}

function buildRequest(options: LlmClientOptions, request: LlmRequest) {
  const { fork } = request;
  if (fork && request.system !== undefined)
    throw new BadInputError("a forked request keeps the agent's system prompt: pass no system");
  // A fork keeps the agent's system prompt byte for byte: the JSON request goes in its messages.
  const systemParts = [
    request.system,
    request.json === true && !fork ? ANTHROPIC_JSON_INSTRUCTION : undefined,
  ];
  const system = fork
    ? fork.system
    : systemParts.filter((part) => part !== undefined && part !== '').join('\n\n');
  // In the order the provider caches a prompt: tools, system, messages.
  const body: Record<string, unknown> = {
    model: options.model,
    max_tokens: request.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
  };
  if (fork?.tools !== undefined) body.tools = fork.tools;
  if (system !== undefined && system !== '') body.system = system;
  body.messages = [
    ...(fork?.messages ?? []),
    ...request.messages.map((message) => ({ role: message.role, content: message.content })),
  ];
  if (request.temperature !== undefined) body.temperature = request.temperature;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    'anthropic-version': ANTHROPIC_VERSION,
  };
  if (options.apiKey !== undefined) headers['x-api-key'] = options.apiKey;
  return { url: messagesUrl(options.baseUrl), headers: { ...headers, ...options.headers }, body };
}

/** Anthropic's `input_tokens` excludes cache reads and writes; `inputTokens` counts them all. */
function readUsage(usage: AnthropicMessage['usage']): LlmUsage {
  const uncached = usage?.input_tokens ?? 0;
  const cacheRead = usage?.cache_read_input_tokens ?? 0;
  const cacheWrite = usage?.cache_creation_input_tokens ?? 0;
  return {
    inputTokens: uncached + cacheRead + cacheWrite,
    outputTokens: usage?.output_tokens ?? 0,
    cachedInputTokens: cacheRead,
    cacheWriteInputTokens: cacheWrite,
  };
}

function readResponse(body: unknown) {
  const message = (isRecord(body) ? body : {}) as AnthropicMessage;
  if (!Array.isArray(message.content)) throw new UpstreamError('anthropic upstream answered without content');
  const text = message.content
    .filter((block) => block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text)
    .join('');
  return { text, usage: readUsage(message.usage) };
}

/** `{ type: 'error', error: { type, message } }`. */
function readError(body: unknown) {
  if (!isRecord(body) || !isRecord(body.error) || typeof body.error.message !== 'string') return undefined;
  const { type, message } = body.error;
  return { type: typeof type === 'string' ? type : undefined, message };
}

export const anthropicWire: LlmWireFormat = { buildRequest, readResponse, readError };
