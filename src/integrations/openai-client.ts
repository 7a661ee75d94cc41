/**
 * Self-GC for the official OpenAI SDK: `governOpenAI(client, options)` returns the same client in
 * which `chat.completions.create` sends the session's governed view instead of the full
 * `messages`. Every other method is the client's own. Types only: `openai` stays optional.
 */
import type OpenAI from 'openai';
import type {
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { fromOpenAIChat, type OpenAIChatMessage, toOpenAIChat } from '../adapters/index.js';
import type { GovernOptions, RequestCodec } from './govern-request.js';
import { governCreate, replaceMethod } from './governed-create.js';

/** Anything with the OpenAI SDK's `chat.completions.create` (an `OpenAI` or `AzureOpenAI` client). */
export interface OpenAIChatClient {
  chat: { completions: Pick<OpenAI['chat']['completions'], 'create'> };
}

/** Options of `governOpenAI`; `sessionId` may read the request body (`user`, `metadata`, …). */
export type GovernOpenAIOptions = GovernOptions<ChatCompletionCreateParamsBase>;

const chatCodec: RequestCodec<ChatCompletionCreateParamsBase, ChatCompletionCreateParamsBase> = {
  // The adapter validates the SDK's message params against the wire schema it declares.
  read: (body) => fromOpenAIChat(body.messages as unknown as OpenAIChatMessage[]),
  write: (view, body) => {
    const { messages, warnings } = toOpenAIChat(view);
    return { value: { ...body, messages: messages as unknown as ChatCompletionMessageParam[] }, warnings };
  },
};

/**
 * A governed view of `client`: `chat.completions.create(body)` governs `body.messages` first
 * (streaming or not); the result awaits like the SDK's and keeps `withResponse()` and
 * `asResponse()`. The SDK's own helpers (`stream`, `parse`, `runTools`) call the original
 * `create` and are not governed.
 */
export function governOpenAI<Client extends OpenAIChatClient>(
  client: Client,
  options: GovernOpenAIOptions,
): Client {
  return replaceMethod(client, ['chat', 'completions'], 'create', (completions) => {
    const create = (completions as Client['chat']['completions']).create.bind(completions);
    return governCreate(create, options, chatCodec);
  });
}
