/**
 * Anthropic Messages (`POST /v1/messages`) as a governed route. The governed body never carries
 * more prompt-cache breakpoints than the client's did, nor more than the API's four
 * (`limitCacheBreakpoints`), and a deferred tool the client's messages loaded stays loaded
 * when governance took the reference away (`keepLoadedTools`), and a body governance changed asks
 * a model that binds thinking to its prefix to drop what the change invalidated
 * (`thinking-binding.ts`).
 */

import {
  type AnthropicMessage,
  type AnthropicMessagesPrompt,
  fromAnthropicMessages,
  keepLoadedTools,
  limitCacheBreakpoints,
  MAX_CACHE_BREAKPOINTS,
  requestBreakpoints,
  toAnthropicMessages,
} from '../adapters/index.js';
import { mergeAnthropicStreams } from './anthropic-stream-merger.js';
import { isClientCompaction, promptTexts } from './client-compaction.js';
import { UNFINISHED_TURN_NOTE } from './stream-merger.js';
import { afterThinkingRefusal, dropInvalidatedThinking, isThinkingBlock } from './thinking-binding.js';
import {
  fieldTexts,
  isJsonObject,
  type JsonObject,
  numberOf,
  positiveIntegerOf,
  presentToolNames,
  raisedUsage,
  replaceFields,
  requireArray,
  type TokenUsage,
  type WireDialect,
  type WireToolCall,
} from './wire-dialect.js';

function contentBlocks(answer: unknown): JsonObject[] {
  if (!isJsonObject(answer) || !Array.isArray(answer.content)) return [];
  return answer.content.filter(isJsonObject);
}

/** Anthropic counts cache reads and writes apart from `input_tokens`; the proxy reports their sum. */
function usageFrom(usage: JsonObject): Partial<TokenUsage> | undefined {
  const uncached = numberOf(usage.input_tokens);
  if (uncached === undefined) return undefined;
  const cachedTokens = numberOf(usage.cache_read_input_tokens) ?? 0;
  const written = numberOf(usage.cache_creation_input_tokens) ?? 0;
  return { inputTokens: uncached + cachedTokens + written, cachedTokens };
}

/** Stop reasons of a turn the API cut short: the output limit, a refusal, the context window. */
const CUT_SHORT = new Set(['max_tokens', 'refusal', 'model_context_window_exceeded']);

export const anthropicMessagesDialect: WireDialect = {
  route: 'messages',
  provider: 'anthropic',
  conversationField: 'messages',
  checkBody(body) {
    requireArray(body, 'messages');
  },
  transcriptFields: ['system'],
  readTranscript(body) {
    return anthropicMessagesDialect.readElements(body).messages;
  },
  readElements(body, resume) {
    return fromAnthropicMessages(body as unknown as AnthropicMessagesPrompt, resume);
  },
  writeTranscript(body, view, read) {
    const elements = body.messages as AnthropicMessage[];
    const written = toAnthropicMessages(
      [...view],
      read === undefined ? undefined : { elements, reading: read },
    );
    const { system, messages } = limitCacheBreakpoints(body, written);
    const tools = keepLoadedTools(body.tools, elements, messages);
    return replaceFields(body, { system, messages, ...(tools === body.tools ? {} : { tools }) });
  },
  sendsAsCame(body) {
    return requestBreakpoints(body) <= MAX_CACHE_BREAKPOINTS;
  },
  promptBesideTranscript(body) {
    // `system` is part of the transcript; a thinking budget is part of `max_tokens`.
    return fieldTexts(body.tools, body.output_format);
  },
  outputLimit(body) {
    return positiveIntegerOf(body.max_tokens);
  },
  ungovernedReason(body) {
    // Claude Code's Message Threads: a `continue` sends only the turns after its anchor reply, and
    // inherits tools and system from the thread the server holds.
    return isJsonObject(body.thread) && body.thread.type === 'continue' ? 'server-state' : undefined;
  },
  recoverable(body) {
    // A thread keeps the tools of the request that made it, and its continues go upstream as
    // sent (`ungovernedReason`): the proxy's tools would be offered there with no round of the
    // proxy's to answer them, and the client would get the calls.
    if (isJsonObject(body.thread)) return false;
    return !isClientCompaction(promptTexts(Array.isArray(body.messages) ? body.messages : [], [body.system]));
  },
  afterChange: dropInvalidatedThinking,
  afterRefusal: afterThinkingRefusal,
  usageOf(payload) {
    if (!isJsonObject(payload)) return undefined;
    const holder = isJsonObject(payload.message) ? payload.message : payload;
    return isJsonObject(holder.usage) ? usageFrom(holder.usage) : undefined;
  },
  withPromptUsage(payload, tokens) {
    // `message_start` holds the message; `message_delta` and a whole answer hold the usage.
    const nested = isJsonObject(payload.message);
    const holder = nested ? (payload.message as JsonObject) : payload;
    if (!isJsonObject(holder.usage)) return undefined;
    const counted = usageFrom(holder.usage)?.inputTokens;
    const usage =
      counted === undefined ? undefined : raisedUsage(holder.usage, 'input_tokens', counted, tokens);
    if (usage === undefined) return undefined;
    return nested ? { ...payload, message: { ...holder, usage } } : { ...payload, usage };
  },
  withTools(body, tools) {
    const present = presentToolNames(body, (tool) => tool.name);
    const added = tools
      .filter((tool) => !present.has(tool.name))
      .map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameters }));
    return { ...body, tools: [...(Array.isArray(body.tools) ? body.tools : []), ...added] };
  },
  toolCallsOf(answer) {
    return contentBlocks(answer).flatMap((block): WireToolCall[] => {
      if (block.type !== 'tool_use' || typeof block.id !== 'string' || typeof block.name !== 'string')
        return [];
      return [{ id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) }];
    });
  },
  awaitsResults(answer) {
    // Not a stop reason the turn ended for (`tool_use`, and what servers that speak the API
    // without being it may send instead), but one that cut it short.
    return !CUT_SHORT.has(String(answer.stop_reason));
  },
  keepToolCalls(answer, keep, client) {
    const kept = contentBlocks(answer).filter(
      (block) => block.type !== 'tool_use' || typeof block.name !== 'string' || keep(block.name),
    );
    // The client's message may not end in thinking, nor be empty (its only calls were the proxy's).
    const content =
      client !== undefined && (kept.length === 0 || isThinkingBlock(kept.at(-1)))
        ? [...kept, { type: 'text', text: UNFINISHED_TURN_NOTE }]
        : kept;
    const finished = answer.stop_reason === 'tool_use' && !content.some((block) => block.type === 'tool_use');
    return { ...answer, content, ...(finished ? { stop_reason: 'end_turn' } : {}) };
  },
  withToolResults(body, answer, results) {
    // A text of whitespace alone, which models write before a call, is refused there.
    const content = contentBlocks(answer).filter(
      (block) => block.type !== 'text' || typeof block.text !== 'string' || block.text.trim() !== '',
    );
    const assistant = { role: 'assistant', content };
    const toolResults = {
      role: 'user',
      content: results.map((result) => ({
        type: 'tool_result',
        tool_use_id: result.id,
        content: result.output,
      })),
    };
    return { ...body, messages: [...requireArray(body, 'messages'), assistant, toolResults] };
  },
  withTurnOpening(answer, firstTurn) {
    const content = contentBlocks(answer);
    // Nothing to open (the API refuses an assistant message that ends in thinking), or opened.
    if (content.length === 0 || isThinkingBlock(content[0])) return answer;
    const opening = contentBlocks(firstTurn);
    const end = opening.findIndex((block) => !isThinkingBlock(block));
    const thinking = opening.slice(0, end === -1 ? opening.length : end);
    return thinking.length === 0 ? answer : { ...answer, content: [...thinking, ...content] };
  },
  withoutToolUse(body) {
    // A client that forces a call (`any`, or one tool it names) gets one.
    const forced = isJsonObject(body.tool_choice) && ['any', 'tool'].includes(String(body.tool_choice.type));
    return forced ? body : { ...body, tool_choice: { type: 'none' } };
  },
  mergeStreams: mergeAnthropicStreams,
};
