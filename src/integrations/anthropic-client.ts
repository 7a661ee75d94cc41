/**
 * Self-GC for the official Anthropic SDK: `governAnthropic(client, options)` returns the same
 * client in which `messages.create` sends the session's governed view instead of the full
 * `system` and `messages`. Every other method is the client's own. Types only:
 * `@anthropic-ai/sdk` stays optional.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type {
  MessageCreateParamsBase,
  MessageParam,
  TextBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import {
  type AnthropicMessage,
  type AnthropicMessagesPrompt,
  type AnthropicSystem,
  fromAnthropicMessages,
  toAnthropicMessages,
} from '../adapters/index.js';
import type { GovernOptions, RequestCodec } from './govern-request.js';
import { governCreate, replaceMethod } from './governed-create.js';

/** Anything with the Anthropic SDK's `messages.create`. */
export interface AnthropicMessagesClient {
  messages: Pick<Anthropic['messages'], 'create'>;
}

/** Options of `governAnthropic`; `sessionId` may read the request body (`metadata.user_id`, …). */
export type GovernAnthropicOptions = GovernOptions<MessageCreateParamsBase>;

const messagesCodec: RequestCodec<MessageCreateParamsBase, MessageCreateParamsBase> = {
  read: (body) => {
    // The adapter validates the SDK's params against the wire schema it declares.
    const prompt: AnthropicMessagesPrompt = { messages: body.messages as unknown as AnthropicMessage[] };
    if (body.system !== undefined) prompt.system = body.system as unknown as AnthropicSystem;
    return fromAnthropicMessages(prompt);
  },
  write: (view, body) => {
    const { system, messages, warnings } = toAnthropicMessages(view);
    const { system: _original, ...rest } = body;
    const value: MessageCreateParamsBase = { ...rest, messages: messages as unknown as MessageParam[] };
    if (system !== undefined) value.system = system as string | TextBlockParam[];
    return { value, warnings };
  },
};

/**
 * A governed view of `client`: `messages.create(body)` governs `body.system` and
 * `body.messages` first (streaming or not); the result awaits like the SDK's and keeps
 * `withResponse()` and `asResponse()`. `messages.stream`, `beta.messages` and the batch API
 * are not governed.
 */
export function governAnthropic<Client extends AnthropicMessagesClient>(
  client: Client,
  options: GovernAnthropicOptions,
): Client {
  return replaceMethod(client, ['messages'], 'create', (messages) => {
    const create = (messages as Client['messages']).create.bind(messages);
    return governCreate(create, options, messagesCodec);
  });
}
