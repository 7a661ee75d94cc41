/**
 * Anthropic Messages wire format of the scripted upstream: the `message` object, and its stream
 * of named events (`message_start`, `content_block_start`, `ping`, `content_block_delta` with
 * `thinking_delta`/`signature_delta`/`text_delta`/`input_json_delta`, `content_block_stop`,
 * `message_delta`, `message_stop`).
 */

import type { SseFrame, WireContext } from './scripted-openai-wire.js';
import { chunkText, type ScriptedError, type ScriptedUsage } from './scripted-reply.js';

type ContentBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown; json: string };

/** Anthropic's `input_tokens` excludes cache reads and writes, unlike OpenAI's `prompt_tokens`. */
function anthropicUsage(usage: ScriptedUsage) {
  return {
    input_tokens: usage.inputTokens - usage.cachedInputTokens - usage.cacheWriteInputTokens,
    cache_creation_input_tokens: usage.cacheWriteInputTokens,
    cache_read_input_tokens: usage.cachedInputTokens,
    cache_creation: { ephemeral_5m_input_tokens: usage.cacheWriteInputTokens, ephemeral_1h_input_tokens: 0 },
    output_tokens: usage.outputTokens,
    service_tier: 'standard',
  };
}

function parseToolInput(name: string, json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    throw new Error(`scripted upstream: arguments of tool call "${name}" are not JSON: ${json}`);
  }
}

/** The signature of the thinking block of the answer `id`. */
export function thinkingSignature(id: string): string {
  return Buffer.from(`scripted-signature:${id}`).toString('base64');
}

function contentBlocks(context: WireContext): ContentBlock[] {
  const { content } = context;
  const blocks: ContentBlock[] = [];
  if (content.thinking !== undefined) {
    blocks.push({ type: 'thinking', thinking: content.thinking, signature: thinkingSignature(context.id) });
  }
  if (content.text !== '' || content.toolCalls.length === 0)
    blocks.push({ type: 'text', text: content.text });
  for (const call of content.toolCalls) {
    const input = parseToolInput(call.name, call.arguments);
    blocks.push({ type: 'tool_use', id: call.id, name: call.name, input, json: call.arguments });
  }
  return blocks;
}

function wireBlock(block: ContentBlock): object {
  if (block.type !== 'tool_use') return block;
  return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
}

function stopReason(context: WireContext): 'end_turn' | 'max_tokens' | 'tool_use' {
  if (context.content.truncated) return 'max_tokens';
  return context.content.toolCalls.length > 0 ? 'tool_use' : 'end_turn';
}

function messageObject(context: WireContext, content: object[], reason: string | null, usage: object) {
  return {
    id: `msg_${context.id}`,
    type: 'message',
    role: 'assistant',
    model: context.model,
    content,
    stop_reason: reason,
    stop_sequence: null,
    usage,
  };
}

export function renderMessage(context: WireContext): object {
  const blocks = contentBlocks(context).map(wireBlock);
  return messageObject(context, blocks, stopReason(context), anthropicUsage(context.usage));
}

function blockDeltas(block: ContentBlock, chunkChars: number): object[] {
  switch (block.type) {
    case 'thinking':
      return [
        ...chunkText(block.thinking, chunkChars).map((thinking) => ({ type: 'thinking_delta', thinking })),
        { type: 'signature_delta', signature: block.signature },
      ];
    case 'text':
      return chunkText(block.text, chunkChars).map((text) => ({ type: 'text_delta', text }));
    case 'tool_use':
      return ['', ...chunkText(block.json, chunkChars)].map((partial) => ({
        type: 'input_json_delta',
        partial_json: partial,
      }));
  }
}

function emptyBlock(block: ContentBlock): object {
  switch (block.type) {
    case 'thinking':
      return { type: 'thinking', thinking: '', signature: '' };
    case 'text':
      return { type: 'text', text: '' };
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: {} };
  }
}

export function messageFrames(context: WireContext): SseFrame[] {
  const frames: SseFrame[] = [];
  const emit = (type: string, payload: object = {}) => {
    frames.push({ event: type, data: JSON.stringify({ type, ...payload }) });
  };
  const usage = anthropicUsage(context.usage);
  emit('message_start', {
    message: messageObject(context, [], null, { ...usage, output_tokens: Math.min(1, usage.output_tokens) }),
  });
  contentBlocks(context).forEach((block, index) => {
    emit('content_block_start', { index, content_block: emptyBlock(block) });
    if (index === 0) emit('ping');
    for (const delta of blockDeltas(block, context.chunkChars)) emit('content_block_delta', { index, delta });
    emit('content_block_stop', { index });
  });
  const { service_tier: _tier, cache_creation: _creation, ...deltaUsage } = usage;
  emit('message_delta', {
    delta: { stop_reason: stopReason(context), stop_sequence: null },
    usage: deltaUsage,
  });
  emit('message_stop');
  return frames;
}

function defaultAnthropicErrorType(status: number): string {
  const byStatus: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    529: 'overloaded_error',
  };
  return byStatus[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/** The `error` event that ends a stream which failed part-way. */
export function anthropicErrorFrame(error: ScriptedError, requestId: string): SseFrame {
  return { event: 'error', data: JSON.stringify(anthropicErrorBody(error, requestId)) };
}

/** `{ type: 'error', error: { type, message }, request_id }`. */
export function anthropicErrorBody(error: ScriptedError, requestId: string): object {
  return {
    type: 'error',
    error: { type: error.type ?? defaultAnthropicErrorType(error.status), message: error.message },
    request_id: requestId,
  };
}

export function anthropicModelList(models: readonly string[]): object {
  return {
    data: models.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' })),
    has_more: false,
    first_id: models[0] ?? null,
    last_id: models[models.length - 1] ?? null,
  };
}
