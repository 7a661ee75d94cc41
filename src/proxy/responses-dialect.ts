/**
 * OpenAI Responses (`POST /v1/responses`) as a governed route. The transcript is `input`;
 * `instructions` stay as they came. A request that continues server-side state
 * (`previous_response_id`, `conversation`) is not governed: the proxy does not see its history;
 * nor is one with no `input` (a stored prompt's, `prompt`, holds the conversation).
 */
import { fromOpenAIResponses, type ResponseInputItem, toOpenAIResponses } from '../adapters/index.js';
import { BadInputError } from '../core/errors.js';
import { isClientCompaction, promptTexts } from './client-compaction.js';
import { answeredCallId, clientCallName, pairedItems } from './responses-items.js';
import { hideResponseTools, mergeResponsesStreams } from './responses-stream-merger.js';
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
  type WireDialect,
  type WireToolCall,
} from './wire-dialect.js';

function inputItems(body: JsonObject): unknown[] {
  if (body.input === undefined) return [];
  if (typeof body.input === 'string') return [{ role: 'user', content: body.input }];
  if (Array.isArray(body.input)) return body.input;
  throw new BadInputError('input: expected a string or an array of items');
}

function outputItems(answer: unknown): JsonObject[] {
  if (!isJsonObject(answer) || !Array.isArray(answer.output)) return [];
  return answer.output.filter(isJsonObject);
}

/**
 * Items as new input rather than by their ids: with `store: false` the API keeps no item, so one
 * passed back by its id is looked up and not found (a 404). Ids go, as clients drop them, and so
 * does reasoning that came without its encrypted state (a model asked for none).
 */
function withoutIds(items: readonly JsonObject[]): JsonObject[] {
  return items.flatMap((item) => {
    if (item.type === 'reasoning' && typeof item.encrypted_content !== 'string') return [];
    const { id: _id, ...rest } = item;
    return [rest];
  });
}

/** An answer's items as the next request's input: by their ids only where the API keeps them. */
function passedBack(items: readonly JsonObject[], body: JsonObject): JsonObject[] {
  return body.store === false ? withoutIds(items) : [...items];
}

export const responsesDialect: WireDialect = {
  route: 'responses',
  provider: 'openai',
  conversationField: 'input',
  checkBody(body) {
    inputItems(body);
  },
  transcriptFields: [],
  readTranscript(body) {
    return responsesDialect.readElements(body).messages;
  },
  readElements(body, resume) {
    return fromOpenAIResponses(inputItems(body) as ResponseInputItem[], resume);
  },
  writeTranscript(body, view, read) {
    // A single string input is one user message, which governance never changes.
    if (typeof body.input === 'string') return body;
    const elements = inputItems(body) as ResponseInputItem[];
    const source = read === undefined ? undefined : { elements, reading: read };
    return replaceFields(body, { input: toOpenAIResponses([...view], source).messages });
  },
  identitySeed(body) {
    return typeof body.instructions === 'string' ? body.instructions : '';
  },
  promptBesideTranscript(body) {
    const format = isJsonObject(body.text) ? body.text.format : undefined;
    return fieldTexts(body.instructions, body.tools, format);
  },
  outputLimit(body) {
    return positiveIntegerOf(body.max_output_tokens);
  },
  ungovernedReason(body) {
    if (body.input === undefined) return 'server-state';
    if (body.previous_response_id !== undefined && body.previous_response_id !== null) return 'server-state';
    if (body.conversation !== undefined && body.conversation !== null) return 'server-state';
    return undefined;
  },
  continuedAnswer(body) {
    return typeof body.previous_response_id === 'string' ? body.previous_response_id : undefined;
  },
  continuingStored(body, id) {
    return replaceFields(body, { previous_response_id: id });
  },
  recoverable(body) {
    // A response run in the background is read back by the client (`GET /responses/{id}`), round
    // by round as the provider keeps it: no round of the proxy's may stand in it.
    if (body.background === true) return false;
    // Codex's compaction request ends in a trigger and must be answered by one `compaction` item:
    // the proxy's tools and rounds would stand between them.
    const items = inputItems(body);
    const last = items.at(-1);
    if (isJsonObject(last) && last.type === 'compaction_trigger') return false;
    return !isClientCompaction(promptTexts(items, [body.instructions]));
  },
  usageOf(payload) {
    if (!isJsonObject(payload)) return undefined;
    const holder = isJsonObject(payload.response) ? payload.response : payload;
    const usage = isJsonObject(holder.usage) ? holder.usage : undefined;
    if (usage === undefined) return undefined;
    const details = isJsonObject(usage.input_tokens_details) ? usage.input_tokens_details : {};
    const inputTokens = numberOf(usage.input_tokens);
    return {
      ...(inputTokens === undefined ? {} : { inputTokens }),
      cachedTokens: numberOf(details.cached_tokens) ?? 0,
    };
  },
  withPromptUsage(payload, tokens) {
    // Stream events hold the response; a whole answer is the response.
    const nested = isJsonObject(payload.response);
    const holder = nested ? (payload.response as JsonObject) : payload;
    if (!isJsonObject(holder.usage)) return undefined;
    const counted = numberOf(holder.usage.input_tokens);
    const usage =
      counted === undefined ? undefined : raisedUsage(holder.usage, 'input_tokens', counted, tokens);
    if (usage === undefined) return undefined;
    return nested ? { ...payload, response: { ...holder, usage } } : { ...payload, usage };
  },
  withTools(body, tools) {
    const present = presentToolNames(body, (tool) => tool.name);
    const added = tools
      .filter((tool) => !present.has(tool.name))
      .map((tool) => ({ type: 'function', ...tool, strict: false }));
    return { ...body, tools: [...(Array.isArray(body.tools) ? body.tools : []), ...added] };
  },
  toolCallsOf(answer) {
    return outputItems(answer).flatMap((item): WireToolCall[] => {
      if (
        item.type !== 'function_call' ||
        typeof item.call_id !== 'string' ||
        typeof item.name !== 'string'
      ) {
        return [];
      }
      return [
        {
          id: item.call_id,
          name: item.name,
          arguments: typeof item.arguments === 'string' ? item.arguments : '',
        },
      ];
    });
  },
  awaitsResults(answer) {
    // A response left `incomplete` (the output limit, which may have cut the call itself, or the
    // content filter) did not end its turn for its calls' results.
    return answer.status !== 'incomplete';
  },
  keepToolCalls(answer, keep, client) {
    if (!Array.isArray(answer.output)) return answer;
    const items = answer.output.filter(isJsonObject);
    const answered = new Set(items.flatMap((item) => answeredCallId(item) ?? []));
    const drops = (item: JsonObject) => {
      const name = clientCallName(item, answered);
      return name !== undefined && !keep(name);
    };
    if (!items.some(drops)) return answer;
    // For the client: what it may pass back of items the provider keeps (`responses-items.ts`).
    if (client !== undefined && client.store !== false) {
      return { ...answer, output: pairedItems(items, drops, (item) => item.type === 'reasoning') };
    }
    const output = items.filter((item) => !drops(item));
    // A turn going on upstream: with items missing, those left no longer pair by id as the
    // provider holds them, so they go as new input, as without `store`.
    return { ...answer, output: client === undefined ? withoutIds(output) : output };
  },
  withToolResults(body, answer, results) {
    // Reasoning items must stay with the calls they led to; assistant text items are kept too.
    const items = passedBack(
      outputItems(answer).filter((item) => item.type !== 'message' || item.role === 'assistant'),
      body,
    );
    const outputs = results.map((result) => ({
      type: 'function_call_output',
      call_id: result.id,
      output: result.output,
    }));
    return { ...body, input: [...inputItems(body), ...items, ...outputs] };
  },
  hideAddedTools(answer, client, added) {
    return hideResponseTools(answer, client, (name) => added.has(name));
  },
  withoutToolUse(body) {
    return forcesOpenAICall(body.tool_choice) ? body : { ...body, tool_choice: 'none' };
  },
  mergeStreams: mergeResponsesStreams,
};
