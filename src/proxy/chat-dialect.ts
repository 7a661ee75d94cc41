/** OpenAI Chat Completions (`POST /v1/chat/completions`) as a governed route. */
import { fromOpenAIChat, type OpenAIChatMessage, toOpenAIChat } from '../adapters/index.js';
import { alternatingLikeClient } from '../adapters/openai-chat/alternating-turns.js';
import { mergeChatStreams } from './chat-stream-merger.js';
import { isClientCompaction, promptTexts } from './client-compaction.js';
import { UNFINISHED_TURN_NOTE } from './stream-merger.js';
import { isRecoveryTool } from './transparent-recovery.js';
import {
  fieldTexts,
  forcesOpenAICall,
  isJsonObject,
  type JsonObject,
  numberOf,
  positiveIntegerOf,
  presentToolNames,
  raisedUsage,
  replaceFields,
  requireArray,
  type WireDialect,
  type WireToolCall,
} from './wire-dialect.js';

function onlyMessage(answer: unknown): JsonObject | undefined {
  if (!isJsonObject(answer) || !Array.isArray(answer.choices) || answer.choices.length !== 1)
    return undefined;
  const choice = answer.choices[0];
  return isJsonObject(choice) && isJsonObject(choice.message) ? choice.message : undefined;
}

/** The name of a call: a function's, or a custom tool's (free-text input). */
function callName(call: JsonObject): string | undefined {
  const tool = isJsonObject(call.function) ? call.function : isJsonObject(call.custom) ? call.custom : {};
  return typeof tool.name === 'string' ? tool.name : undefined;
}

/** Fields of an answer's message that only an answer carries: a request may not send them back. */
const ANSWER_ONLY_FIELDS = new Set(['annotations', 'parsed']);

/**
 * The answer's message as the assistant turn of the next request: whole, as a client passes it
 * back (a thinking model's `reasoning_content`, which DeepSeek and Kimi require again, a call's
 * `extra_content` with Gemini's thought signature), without the fields only an answer has and
 * those left null, audio by its id.
 */
function assistantTurn(message: JsonObject): JsonObject {
  const turn: JsonObject = { role: 'assistant', content: message.content ?? null };
  for (const [key, value] of Object.entries(message)) {
    if (key === 'role' || key === 'content' || value === null || ANSWER_ONLY_FIELDS.has(key)) continue;
    if (key === 'audio') {
      if (isJsonObject(value) && typeof value.id === 'string') turn.audio = { id: value.id };
      continue;
    }
    turn[key] = value;
  }
  return turn;
}

/**
 * What a server that takes no tools answers a request with some (a 400): vLLM started without a
 * tool parser, Ollama for a model whose template has none, llama.cpp without `--jinja`.
 */
const TOOLS_REFUSED =
  /tool choice requires --enable-auto-tool-choice|does not support tools|tools param requires --jinja/i;

/** Whether a tool of a Chat request is one of the proxy's own. */
function isProxyTool(tool: unknown): boolean {
  const name = isJsonObject(tool) && isJsonObject(tool.function) ? tool.function.name : undefined;
  return typeof name === 'string' && isRecoveryTool(name);
}

/**
 * A request the server refused for the tools in it, when they were all the proxy's (a client of
 * a text protocol, Cline's XML tools, sends none): the request without them, as the client sent
 * it. Its answer goes without recovery, as the client's own request would.
 */
function withoutRefusedTools(error: string, read: () => JsonObject | undefined) {
  if (!TOOLS_REFUSED.test(error)) return undefined;
  const body = read();
  const tools = body?.tools;
  if (body === undefined || !Array.isArray(tools) || tools.length === 0 || !tools.every(isProxyTool))
    return undefined;
  return { body: replaceFields(body, { tools: undefined }) };
}

/** Finish reasons of a turn the server cut short: the output limit, the content filter. */
const CUT_SHORT = new Set(['length', 'content_filter']);

export const chatDialect: WireDialect = {
  route: 'chat',
  provider: 'openai',
  conversationField: 'messages',
  checkBody(body) {
    requireArray(body, 'messages');
  },
  transcriptFields: [],
  readTranscript(body) {
    return chatDialect.readElements(body).messages;
  },
  readElements(body, resume) {
    return fromOpenAIChat(requireArray(body, 'messages') as OpenAIChatMessage[], resume);
  },
  writeTranscript(body, view, read) {
    const elements = body.messages as OpenAIChatMessage[];
    const source = read === undefined ? undefined : { elements, reading: read };
    const messages = alternatingLikeClient(toOpenAIChat([...view], source).messages, elements);
    return replaceFields(body, { messages });
  },
  promptBesideTranscript(body) {
    return fieldTexts(body.tools, body.functions, body.response_format);
  },
  outputLimit(body) {
    // `max_tokens` is the older name; reasoning models take only `max_completion_tokens`.
    return positiveIntegerOf(body.max_completion_tokens) ?? positiveIntegerOf(body.max_tokens);
  },
  recoverable(body) {
    // With several choices, each could call the proxy's tools differently: not one answer to continue.
    if (body.n !== undefined && body.n !== null && body.n !== 1) return false;
    // The API refuses `tools` beside the legacy `functions`, and calls in a request that has them.
    if (body.functions !== undefined && body.functions !== null) return false;
    return !isClientCompaction(promptTexts(Array.isArray(body.messages) ? body.messages : []));
  },
  afterRefusal: withoutRefusedTools,
  usageOf(payload) {
    const usage = isJsonObject(payload) && isJsonObject(payload.usage) ? payload.usage : undefined;
    if (usage === undefined) return undefined;
    const details = isJsonObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
    const inputTokens = numberOf(usage.prompt_tokens);
    return {
      ...(inputTokens === undefined ? {} : { inputTokens }),
      cachedTokens: numberOf(details.cached_tokens) ?? 0,
    };
  },
  withPromptUsage(payload, tokens) {
    if (!isJsonObject(payload.usage)) return undefined;
    const counted = numberOf(payload.usage.prompt_tokens);
    const usage =
      counted === undefined ? undefined : raisedUsage(payload.usage, 'prompt_tokens', counted, tokens);
    return usage === undefined ? undefined : { ...payload, usage };
  },
  withTools(body, tools) {
    const present = presentToolNames(body, (tool) =>
      isJsonObject(tool.function) ? tool.function.name : undefined,
    );
    const added = tools
      .filter((tool) => !present.has(tool.name))
      .map((tool) => ({ type: 'function', function: { ...tool } }));
    return { ...body, tools: [...(Array.isArray(body.tools) ? body.tools : []), ...added] };
  },
  toolCallsOf(answer) {
    const calls = onlyMessage(answer)?.tool_calls;
    if (!Array.isArray(calls)) return [];
    return calls.flatMap((call): WireToolCall[] => {
      if (!isJsonObject(call) || !isJsonObject(call.function) || typeof call.id !== 'string') return [];
      const { name, arguments: args } = call.function;
      return typeof name === 'string'
        ? [{ id: call.id, name, arguments: typeof args === 'string' ? args : '' }]
        : [];
    });
  },
  awaitsResults(answer) {
    // Not a finish the turn ended for (`tool_calls`, or `stop` where servers say so), but one
    // that cut it short: the output limit, which may have cut the call itself, or the filter.
    const choice = Array.isArray(answer.choices) ? answer.choices[0] : undefined;
    return !(isJsonObject(choice) && CUT_SHORT.has(String(choice.finish_reason)));
  },
  keepToolCalls(answer, keep, client) {
    const message = onlyMessage(answer);
    if (message === undefined) return answer;
    if (!Array.isArray(message.tool_calls) && client === undefined) return answer;
    const toolCalls = (Array.isArray(message.tool_calls) ? message.tool_calls : []).filter((call) => {
      const name = isJsonObject(call) ? callName(call) : undefined;
      return name === undefined || keep(name);
    });
    const [choice] = answer.choices as JsonObject[];
    const finished = toolCalls.length === 0 && choice?.finish_reason === 'tool_calls';
    // The client's message may not be left with neither content nor calls (its calls were the proxy's).
    const spoke =
      typeof message.content === 'string'
        ? message.content !== ''
        : Array.isArray(message.content) && message.content.length > 0;
    const empty = toolCalls.length === 0 && !spoke;
    const kept = replaceFields(message, {
      tool_calls: toolCalls.length > 0 ? toolCalls : undefined,
      ...(client !== undefined && empty ? { content: UNFINISHED_TURN_NOTE } : {}),
    });
    return {
      ...answer,
      choices: [{ ...choice, message: kept, ...(finished ? { finish_reason: 'stop' } : {}) }],
    };
  },
  withToolResults(body, answer, results) {
    const assistant = assistantTurn(onlyMessage(answer) ?? {});
    const toolMessages = results.map((result) => ({
      role: 'tool',
      tool_call_id: result.id,
      content: result.output,
    }));
    return { ...body, messages: [...requireArray(body, 'messages'), assistant, ...toolMessages] };
  },
  withoutToolUse(body) {
    return forcesOpenAICall(body.tool_choice) ? body : { ...body, tool_choice: 'none' };
  },
  mergeStreams: mergeChatStreams,
};
