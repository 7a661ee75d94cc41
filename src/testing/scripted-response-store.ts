/**
 * What the scripted upstream keeps of its Responses answers, so a request may continue one by
 * `previous_response_id` as with the real API: an answer is kept unless its request said
 * `store: false`; a continuation is refused when the response is unknown, or when the stored
 * conversation with the new input leaves a call without its output or an output without its call.
 */
import type { ScriptedError } from './scripted-reply.js';

type Item = Record<string, unknown>;

const CALLS = new Set(['function_call', 'custom_tool_call']);
const OUTPUTS = new Set(['function_call_output', 'custom_tool_call_output']);

export interface ResponseStore {
  /** The refusal of a request that continues an answer it cannot, or undefined. */
  refusal(body: Record<string, unknown>): ScriptedError | undefined;
  /** Keeps an answer of `body` (unless `store: false`) under its response id. */
  remember(body: Record<string, unknown>, id: string, output: readonly unknown[]): void;
}

export function createResponseStore(): ResponseStore {
  const conversations = new Map<string, Item[]>();
  const conversationOf = (body: Record<string, unknown>): Item[] | undefined => {
    const previous = body.previous_response_id;
    const earlier = typeof previous === 'string' ? conversations.get(previous) : [];
    return earlier === undefined ? undefined : [...earlier, ...itemsOf(body.input)];
  };
  return {
    refusal(body) {
      const previous = body.previous_response_id;
      if (typeof previous !== 'string') return undefined;
      const conversation = conversationOf(body);
      if (conversation === undefined)
        return {
          status: 400,
          message: `Previous response with id '${previous}' not found.`,
          code: 'previous_response_not_found',
          param: 'previous_response_id',
        };
      const unpaired = unpairedCall(conversation);
      return unpaired === undefined ? undefined : { status: 400, message: unpaired, param: 'input' };
    },
    remember(body, id, output) {
      if (body.store === false) return;
      const conversation = conversationOf(body);
      if (conversation !== undefined) conversations.set(id, [...conversation, ...itemsOf(output)]);
    },
  };
}

function itemsOf(input: unknown): Item[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  if (!Array.isArray(input)) return [];
  return input.filter((item): item is Item => typeof item === 'object' && item !== null);
}

/** The API's message for the first call left without its output, or output without its call. */
function unpairedCall(conversation: readonly Item[]): string | undefined {
  const calls = new Set(
    conversation.filter((item) => CALLS.has(String(item.type))).map((item) => item.call_id),
  );
  const outputs = new Set(
    conversation.filter((item) => OUTPUTS.has(String(item.type))).map((item) => item.call_id),
  );
  for (const call of calls)
    if (!outputs.has(call)) return `No tool output found for function call ${String(call)}.`;
  for (const output of outputs)
    if (!calls.has(output))
      return `No tool call found for function call output with call_id ${String(output)}.`;
  return undefined;
}
