/**
 * OpenAI wire formats of the scripted upstream: Chat Completions (`chat.completion`, streamed as
 * `chat.completion.chunk` data lines ending in `data: [DONE]`) and Responses (`response` object,
 * streamed as named, sequence-numbered events ending in `response.completed`, without `[DONE]`).
 */

import { chunkText, type ScriptedContent, type ScriptedError, type ScriptedUsage } from './scripted-reply.js';

/** Everything a renderer needs to write one answer. */
export interface WireContext {
  /** Unique per request (`scripted0003`); prefixed per provider (`chatcmpl-`, `resp_`, `msg_`). */
  id: string;
  model: string;
  /** Unix seconds. */
  created: number;
  content: ScriptedContent;
  usage: ScriptedUsage;
  /** The request body (an empty record when it was not an object). */
  body: Record<string, unknown>;
  /** Maximum code points per streamed delta. */
  chunkChars: number;
}

/** One server-sent event; `data` is already serialised. */
export interface SseFrame {
  event?: string;
  data: string;
}

const FINGERPRINT = 'fp_scripted';

function chatUsage(usage: ScriptedUsage) {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

function finishReason(content: ScriptedContent): 'stop' | 'length' | 'tool_calls' {
  if (content.truncated) return 'length';
  return content.toolCalls.length > 0 ? 'tool_calls' : 'stop';
}

/** A text-less tool-call answer carries `content: null`, as OpenAI sends it. */
function messageText(content: ScriptedContent): string | null {
  return content.text === '' && content.toolCalls.length > 0 ? null : content.text;
}

export function renderChatCompletion(context: WireContext): object {
  const { content } = context;
  const toolCalls = content.toolCalls.map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
  const message = {
    role: 'assistant',
    content: messageText(content),
    refusal: null,
    annotations: [],
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  };
  return {
    id: `chatcmpl-${context.id}`,
    object: 'chat.completion',
    created: context.created,
    model: context.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(content) }],
    usage: chatUsage(context.usage),
    service_tier: 'default',
    system_fingerprint: FINGERPRINT,
  };
}

/** Usage arrives in a last chunk with empty `choices`, only when `stream_options.include_usage`. */
export function chatCompletionFrames(context: WireContext): SseFrame[] {
  const { content, body } = context;
  const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
  const includeUsage = streamOptions?.include_usage === true;
  const base = {
    id: `chatcmpl-${context.id}`,
    object: 'chat.completion.chunk',
    created: context.created,
    model: context.model,
    service_tier: 'default',
    system_fingerprint: FINGERPRINT,
  };
  const chunk = (delta: object, finish: string | null = null): SseFrame => ({
    data: JSON.stringify({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    }),
  });
  const frames = [
    chunk({ role: 'assistant', content: messageText(content) === null ? null : '', refusal: null }),
  ];
  for (const piece of chunkText(content.text, context.chunkChars)) frames.push(chunk({ content: piece }));
  content.toolCalls.forEach((call, index) => {
    const opening = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
    frames.push(chunk({ tool_calls: [opening] }));
    for (const piece of chunkText(call.arguments, context.chunkChars)) {
      frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  frames.push(chunk({}, finishReason(content)));
  if (includeUsage)
    frames.push({ data: JSON.stringify({ ...base, choices: [], usage: chatUsage(context.usage) }) });
  frames.push({ data: '[DONE]' });
  return frames;
}

type OutputItem =
  | {
      id: string;
      type: 'message';
      status: string;
      role: 'assistant';
      content: Array<{ type: 'output_text'; text: string; annotations: []; logprobs: [] }>;
    }
  | { id: string; type: 'function_call'; status: string; call_id: string; name: string; arguments: string }
  | { id: string; type: 'reasoning'; summary: []; encrypted_content: string }
  | { id: string; type: 'compaction'; encrypted_content: string };

/**
 * Whether the request asks for the model's reasoning state back, as Codex always does: a
 * reasoning model's answer then opens with a reasoning item holding it, which the client passes
 * back in its next request.
 */
function wantsReasoning(body: Record<string, unknown>): boolean {
  return Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content');
}

export function outputItems(context: WireContext): OutputItem[] {
  const { content } = context;
  const status = content.truncated ? 'incomplete' : 'completed';
  if (content.compaction !== undefined)
    return [{ id: `cmp_${context.id}`, type: 'compaction', encrypted_content: content.compaction }];
  const items: OutputItem[] = [];
  if (wantsReasoning(context.body)) {
    const state = Buffer.from(`scripted reasoning state of ${context.id}`).toString('base64');
    items.push({ id: `rs_${context.id}`, type: 'reasoning', summary: [], encrypted_content: state });
  }
  if (content.text !== '' || content.toolCalls.length === 0) {
    const part = {
      type: 'output_text' as const,
      text: content.text,
      annotations: [] as [],
      logprobs: [] as [],
    };
    items.push({ id: `msg_${context.id}`, type: 'message', status, role: 'assistant', content: [part] });
  }
  content.toolCalls.forEach((call, position) => {
    const { id: callId, name, arguments: args } = call;
    const id = `fc_${context.id}_${position}`;
    items.push({ id, type: 'function_call', status: 'completed', call_id: callId, name, arguments: args });
  });
  return items;
}

function responseUsage(usage: ScriptedUsage) {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

/** The `response` object; request parameters are echoed back as the real API does. */
function responseObject(context: WireContext, status: string, output: OutputItem[], usage: object | null) {
  const body = context.body;
  return {
    id: `resp_${context.id}`,
    object: 'response',
    created_at: context.created,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: context.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    usage,
    user: null,
    metadata: body.metadata ?? {},
  };
}

function finalStatus(context: WireContext): 'completed' | 'incomplete' {
  return context.content.truncated ? 'incomplete' : 'completed';
}

export function renderResponse(context: WireContext): object {
  return responseObject(context, finalStatus(context), outputItems(context), responseUsage(context.usage));
}

export function responseFrames(context: WireContext): SseFrame[] {
  const frames: SseFrame[] = [];
  let sequence = 0;
  const emit = (type: string, payload: object) => {
    frames.push({ event: type, data: JSON.stringify({ type, ...payload, sequence_number: sequence++ }) });
  };
  emit('response.created', { response: responseObject(context, 'in_progress', [], null) });
  emit('response.in_progress', { response: responseObject(context, 'in_progress', [], null) });
  const items = outputItems(context);
  items.forEach((item, outputIndex) => {
    const at = { item_id: item.id, output_index: outputIndex };
    if (item.type === 'reasoning' || item.type === 'compaction') {
      emit('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, encrypted_content: null },
      });
    } else if (item.type === 'message') {
      const text = item.content[0]?.text ?? '';
      const emptyPart = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      emit('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', content: [] },
      });
      emit('response.content_part.added', { ...at, content_index: 0, part: emptyPart });
      for (const delta of chunkText(text, context.chunkChars)) {
        emit('response.output_text.delta', { ...at, content_index: 0, delta, logprobs: [] });
      }
      emit('response.output_text.done', { ...at, content_index: 0, text, logprobs: [] });
      emit('response.content_part.done', { ...at, content_index: 0, part: { ...emptyPart, text } });
    } else {
      emit('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', arguments: '' },
      });
      for (const delta of chunkText(item.arguments, context.chunkChars)) {
        emit('response.function_call_arguments.delta', { ...at, delta });
      }
      emit('response.function_call_arguments.done', { ...at, name: item.name, arguments: item.arguments });
    }
    emit('response.output_item.done', { output_index: outputIndex, item });
  });
  const status = finalStatus(context);
  emit(`response.${status}`, {
    response: responseObject(context, status, items, responseUsage(context.usage)),
  });
  return frames;
}

/** Responses frames closed as the ChatGPT backend closes them: the last response holds no output. */
export function withoutClosingOutput(frames: readonly SseFrame[]): SseFrame[] {
  const last = frames.at(-1);
  if (last === undefined) return [...frames];
  const payload = JSON.parse(last.data) as { response: object };
  const data = JSON.stringify({ ...payload, response: { ...payload.response, output: [] } });
  return [...frames.slice(0, -1), { ...last, data }];
}

function defaultOpenaiError(status: number): { type: string; code: string | null } {
  if (status === 429) return { type: 'requests', code: 'rate_limit_exceeded' };
  if (status === 401) return { type: 'invalid_request_error', code: 'invalid_api_key' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}

/** A Chat Completions stream that fails part-way ends with a data line holding the error body. */
export function chatErrorFrame(error: ScriptedError): SseFrame {
  return { data: JSON.stringify(openaiErrorBody(error)) };
}

/** A Responses stream that fails part-way ends with an `error` event, numbered in sequence. */
export function responseErrorFrame(error: ScriptedError, _requestId: string, sequence: number): SseFrame {
  const { code, message, param } = (openaiErrorBody(error) as { error: Record<string, unknown> }).error;
  return {
    event: 'error',
    data: JSON.stringify({ type: 'error', code, message, param, sequence_number: sequence }),
  };
}

/** `{ error: { message, type, param, code } }`, shared by Chat Completions and Responses. */
export function openaiErrorBody(error: ScriptedError): object {
  const fallback = defaultOpenaiError(error.status);
  return {
    error: {
      message: error.message,
      type: error.type ?? fallback.type,
      param: error.param ?? null,
      code: error.code ?? fallback.code,
    },
  };
}

export function openaiModelList(models: readonly string[]): object {
  return {
    object: 'list',
    data: models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'scripted' })),
  };
}
