/**
 * OpenAI Responses streams merged into one response: the first round's `response.created` and
 * `response.in_progress`, the output items of every round renumbered (`output_index`) in the
 * order the client receives them, `sequence_number` counted anew over everything sent, and one
 * `response.completed` whose `response.output` is exactly the items streamed (the SDK's
 * `ResponseStream` takes that object as its final response), under the first round's id: where
 * the provider keeps answers, a client continuing it is sent on from the last
 * (`stored-responses.ts`). The proxy's tools never show in
 * the echoed `tools` and `tool_choice`.
 */
import { answeredCallId, clientCallName, pairedItems } from './responses-items.js';
import { createRoundBlocks, type HeldEvent, type RoundBlock } from './round-blocks.js';
import {
  eventOf,
  payloadOf,
  type SseMessage,
  type StreamMerger,
  type StreamMergerOptions,
} from './stream-merger.js';
import { isJsonObject, type JsonObject, numberOf, replaceFields, stringOf } from './wire-dialect.js';

/** A response object as the client sent its request: without the tools the proxy added. */
export function hideResponseTools(
  response: JsonObject,
  client: JsonObject,
  isAdded: (name: string) => boolean,
): JsonObject {
  const tools = Array.isArray(response.tools)
    ? response.tools.filter(
        (tool) => !(isJsonObject(tool) && typeof tool.name === 'string' && isAdded(tool.name)),
      )
    : response.tools;
  const toolChoice = 'tool_choice' in response ? { tool_choice: client.tool_choice ?? 'auto' } : {};
  return replaceFields(response, { tools, ...toolChoice });
}

const OPENING = new Set(['response.created', 'response.in_progress', 'response.queued']);
const CLOSING = new Set(['response.completed', 'response.incomplete']);
const NONE_ANSWERED: ReadonlySet<unknown> = new Set();

/** The error code OpenAI gives a status that clients act on, where a body names none. */
function statusCode(status: number): string | undefined {
  return status === 429 ? 'rate_limit_exceeded' : undefined;
}

export function mergeResponsesStreams(options: StreamMergerOptions): StreamMerger {
  let sequence = 0;
  let outputs = 0;
  const blocks = createRoundBlocks(() => outputs++);
  /** The finished items sent to the client, by client index. */
  const sent: JsonObject[] = [];
  let first: JsonObject | undefined;
  let firstRound = true;
  let closing: { message: SseMessage; payload: JsonObject } | undefined;
  let failed = false;
  /** Whether the upstream ends its streams with `[DONE]` (Responses-compatible servers do). */
  let done = false;
  /**
   * Whether the provider keeps the answer's items (`store` not false). A client then passes them
   * back by id, and the API refuses a reasoning item without the item that followed it, and an
   * item without the reasoning it came from. So the client gets of a round only what keeps
   * those pairs: reasoning waits for the item after it, and nothing the round held goes out
   * when the round goes on upstream, or from the proxy's first call on when it ends the answer.
   */
  const providerKeepsItems = options.client.store !== false;
  /**
   * Of the current round: each finished item by its upstream index. The ChatGPT backend closes a
   * response with no `output`, its items having come in their own events only.
   */
  let roundItems = new Map<number, JsonObject>();
  /** Of the current round: the call id of each call, and the calls the server answered itself. */
  let callIds = new Map<number, unknown>();
  let answered = new Set<unknown>();
  /** A call the client answers: a hosted call's output comes in the same round. */
  const isClientCall = (block: RoundBlock) =>
    block.tool !== undefined && !answered.has(callIds.get(block.upstreamIndex));
  const isProxyCall = (block: RoundBlock) => isClientCall(block) && options.isInternal(block.tool!);

  const hidden = (response: unknown): JsonObject => {
    const object = isJsonObject(response) ? response : {};
    const named = first === undefined ? object : { ...object, id: first.id, created_at: first.created_at };
    return hideResponseTools(named, options.client, options.isInternal);
  };
  const sequenced = (message: SseMessage, payload: JsonObject): SseMessage =>
    eventOf(message, { ...payload, sequence_number: sequence++ });
  const placed = (block: RoundBlock, message: SseMessage, payload: JsonObject): SseMessage => {
    const index = block.clientIndex ?? 0;
    if (payload.type === 'response.output_item.done' && isJsonObject(payload.item))
      sent[index] = payload.item;
    return sequenced(message, { ...payload, output_index: index });
  };

  const route = (block: RoundBlock | undefined, message: SseMessage, payload: JsonObject) => {
    if (block === undefined) return [];
    if (block.held === undefined) return [placed(block, message, payload)];
    block.held.push({ message, payload });
    return [];
  };
  const sendHeld = (block: RoundBlock, held: readonly HeldEvent[] = block.held ?? []): SseMessage[] =>
    held.map(({ message, payload }) => placed(block, message, payload));
  const release = (select: (held: readonly RoundBlock[]) => readonly RoundBlock[]): SseMessage[] => {
    const events = blocks.release(select).flatMap((block) => sendHeld(block));
    roundItems = new Map();
    callIds = new Map();
    answered = new Set();
    return events;
  };

  return {
    push(message) {
      // One `[DONE]` ends the answer, after its last event: the SDK's stream reads nothing after
      // one, and each round's would come before the next round's events.
      if (message.data === '[DONE]' && !failed) {
        done = true;
        return [];
      }
      const payload = payloadOf(message);
      if (payload === undefined) return [message];
      const type = String(payload.type);
      if (OPENING.has(type)) {
        if (!firstRound) return [];
        if (type === 'response.created' && isJsonObject(payload.response)) first = payload.response;
        return [sequenced(message, { ...payload, response: hidden(payload.response) })];
      }
      if (CLOSING.has(type)) {
        closing = { message, payload };
        return [];
      }
      if (type === 'error' || type === 'response.failed') {
        failed = true;
        // The response's output is what the client got, not the round's own (the proxy's calls).
        const response =
          'response' in payload
            ? { response: { ...hidden(payload.response), output: sent.filter(isJsonObject) } }
            : {};
        return [sequenced(message, { ...payload, ...response })];
      }
      const index = numberOf(payload.output_index);
      if (index === undefined) return [sequenced(message, payload)];
      if (type === 'response.output_item.done' && isJsonObject(payload.item))
        roundItems.set(index, payload.item);
      if (type === 'response.output_item.added') {
        const item = isJsonObject(payload.item) ? payload.item : {};
        // Whether the server answers a call itself shows later in the round, with its output.
        const tool = clientCallName(item, NONE_ANSWERED);
        if (tool !== undefined) callIds.set(index, item.call_id);
        const answers = answeredCallId(item);
        if (answers !== undefined) answered.add(answers);
        const { block, released } = blocks.open(index, tool, providerKeepsItems && item.type === 'reasoning');
        return [
          ...released.flatMap(({ block, held }) => sendHeld(block, held)),
          ...route(block, message, payload),
        ];
      }
      return route(blocks.block(index), message, payload);
    },
    endRound() {
      if (failed) return { kind: 'failed' };
      if (closing === undefined || !isJsonObject(closing.payload.response)) return { kind: 'cut' };
      const answer = closing.payload.response;
      if (Array.isArray(answer.output) && answer.output.length > 0) return { kind: 'answered', answer };
      const output = [...roundItems.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
      return { kind: 'answered', answer: { ...answer, output } };
    },
    continueRound() {
      const events = release((held) =>
        providerKeepsItems ? [] : held.filter((block) => !isClientCall(block)),
      );
      firstRound = false;
      closing = undefined;
      return events;
    },
    finish() {
      const events = release((held) => {
        if (!providerKeepsItems) return held.filter((block) => !isProxyCall(block));
        return pairedItems(held, isProxyCall, (block) => block.leading === true);
      });
      if (closing !== undefined) {
        const stored = isJsonObject(closing.payload.response)
          ? stringOf(closing.payload.response.id)
          : undefined;
        const shown = stringOf(first?.id);
        if (providerKeepsItems && stored !== undefined && shown !== undefined && stored !== shown)
          options.onStored?.(shown, stored);
        const response = { ...hidden(closing.payload.response), output: sent.filter(isJsonObject) };
        events.push(sequenced(closing.message, { ...closing.payload, response }));
      }
      if (done) events.push({ data: '[DONE]' });
      closing = undefined;
      return events;
    },
    fail({ status, body }) {
      const error = isJsonObject(body.error) ? body.error : {};
      const code = stringOf(error.code) ?? statusCode(status) ?? stringOf(error.type) ?? 'server_error';
      const message = stringOf(error.message) ?? 'the response failed';
      const requestId = body.request_id === undefined ? {} : { request_id: body.request_id };
      const payload = { type: 'error', code, message, param: error.param ?? null, ...requestId };
      // The OpenAI SDK's stream ends at an `error` event (its final response rejects with it);
      // Codex reads why a response failed (a retry delay, a quota, the context window) from
      // `response.failed` only.
      const events = [{ event: 'error', data: JSON.stringify({ ...payload, sequence_number: sequence++ }) }];
      if (first === undefined) return events;
      const response = {
        ...hidden(first),
        status: 'failed',
        output: sent.filter(isJsonObject),
        error: { code, message },
      };
      return [
        ...events,
        sequenced({ event: 'response.failed', data: '' }, { type: 'response.failed', response }),
      ];
    },
  };
}
