/**
 * How the OpenAI wrapper reads a request's conversation and writes the view back: Chat
 * Completions `messages`, and Responses `input` (the `instructions` stay as they came, as in
 * the proxy). Types only: `openai` stays optional.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { ResponseInputItem as SdkInputItem } from 'openai/resources/responses/responses';
import {
  fromOpenAIChat,
  fromOpenAIResponses,
  type OpenAIChatMessage,
  type ResponseInputItem,
  toOpenAIChat,
  toOpenAIResponses,
} from '../adapters/index.js';
import { alternatingLikeClient } from '../adapters/openai-chat/alternating-turns.js';
import { gcToolsForOpenAIChat, gcToolsForOpenAIResponses } from '../core/gc-tools/gc-tool-definitions.js';
import { withTools } from './agent-tools.js';
import type { RequestCodec } from './govern-request.js';
import { UngovernedCallError } from './ungoverned-call-error.js';

export function chatCodec<Body extends { messages: ChatCompletionMessageParam[] }>(): RequestCodec<
  Body,
  Body
> {
  return {
    // The adapter validates the SDK's message params against the wire schema it declares.
    read: (body) => fromOpenAIChat(body.messages.map(withoutParsedFields) as unknown as OpenAIChatMessage[]),
    write: (view, body) => {
      const { messages: written, warnings } = toOpenAIChat(view);
      const messages = alternatingLikeClient(written, body.messages as unknown as OpenAIChatMessage[]);
      return { value: { ...body, messages: messages as unknown as ChatCompletionMessageParam[] }, warnings };
    },
    withGcTools: (body) => withTools(body, gcToolsForOpenAIChat()),
  };
}

/**
 * The SDK's tool runner feeds its parsed completions back as messages: `parsed` and a tool
 * call's `parsed_arguments` are the SDK's own reading of the answer, not wire fields.
 */
function withoutParsedFields(message: ChatCompletionMessageParam): ChatCompletionMessageParam {
  if (message.role !== 'assistant' || !('parsed' in message || message.tool_calls !== undefined))
    return message;
  const { parsed: _parsed, ...rest } = message as typeof message & { parsed?: unknown };
  if (rest.tool_calls === undefined) return rest;
  return {
    ...rest,
    tool_calls: rest.tool_calls.map((call) => {
      if (call.type !== 'function' || !('parsed_arguments' in call.function)) return call;
      const { parsed_arguments: _arguments, ...wire } = call.function as typeof call.function & {
        parsed_arguments?: unknown;
      };
      return { ...call, function: wire };
    }),
  };
}

/** The fields of a Responses request (to create, or to count) that hold its conversation. */
export interface ResponsesConversation {
  input?: string | SdkInputItem[] | null | undefined;
  previous_response_id?: string | null | undefined;
  conversation?: unknown;
}

/** Whether `body` carries a conversation to govern (a request with only a stored `prompt` has none). */
export function hasInput(body: ResponsesConversation): boolean {
  return body.input !== undefined && body.input !== null;
}

export function responsesCodec<Body extends ResponsesConversation>(call: string): RequestCodec<Body, Body> {
  return {
    read: (body) => {
      // The history of a server-side conversation is never in the request, so no view can fit it.
      if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
        throw new UngovernedCallError(call, 'previous_response_id continues a conversation held by OpenAI');
      }
      if (body.conversation !== undefined && body.conversation !== null) {
        throw new UngovernedCallError(call, '`conversation` continues a conversation held by OpenAI');
      }
      const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input;
      return fromOpenAIResponses((input ?? []) as ResponseInputItem[]);
    },
    write: (view, body) => {
      // A single string input is one user message, which governance never changes.
      if (typeof body.input === 'string') return { value: body, warnings: [] };
      const { messages, warnings } = toOpenAIResponses(view);
      return { value: { ...body, input: messages as unknown as SdkInputItem[] }, warnings };
    },
    withGcTools: (body) => withTools(body, gcToolsForOpenAIResponses()),
  };
}
