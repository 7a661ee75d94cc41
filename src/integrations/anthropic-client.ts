/**
 * Self-GC for the official Anthropic SDK: `governAnthropic(client, options)` returns the same
 * client in which every call that sends a conversation sends the session's governed view
 * instead of the full `system` and `messages`, or is refused. Types only: `@anthropic-ai/sdk`
 * stays optional.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type {
  MessageCountTokensParams,
  MessageCreateParamsBase,
  MessageParam,
  TextBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import {
  type AnthropicMessage,
  type AnthropicMessagesPrompt,
  type AnthropicSystem,
  fromAnthropicMessages,
  keepLoadedTools,
  toAnthropicMessages,
} from '../adapters/index.js';
import { gcToolsForAnthropic } from '../core/gc-tools/gc-tool-definitions.js';
import { withTools } from './agent-tools.js';
import type { GovernOptions, RequestCodec } from './govern-request.js';
import { governCreate, type Send } from './governed-create.js';
import { type ClientOverlay, overlayClient } from './overlay-client.js';
import { UngovernedCallError } from './ungoverned-call-error.js';

/** Anything with the Anthropic SDK's `messages.create`. */
export interface AnthropicMessagesClient {
  messages: Pick<Anthropic['messages'], 'create'>;
}

/** A request the wrapper governs: a message to create, or one whose tokens are counted. */
export type AnthropicRequest = MessageCreateParamsBase | MessageCountTokensParams;

/** Options of `governAnthropic`; `sessionId` may read the request body (`metadata.user_id`, …). */
export type GovernAnthropicOptions = GovernOptions<AnthropicRequest>;

interface Conversation {
  system?: string | TextBlockParam[] | undefined;
  tools?: unknown;
  messages: MessageParam[];
}

function messagesCodec<Body extends Conversation>(): RequestCodec<Body, Body> {
  return {
    read: (body) => {
      // The adapter validates the SDK's params against the wire schema it declares.
      const prompt: AnthropicMessagesPrompt = { messages: body.messages as unknown as AnthropicMessage[] };
      if (body.system !== undefined) prompt.system = body.system as unknown as AnthropicSystem;
      return fromAnthropicMessages(prompt);
    },
    write: (view, body) => {
      const { system, messages, warnings } = toAnthropicMessages(view);
      const { system: _original, ...rest } = body;
      const value = { ...rest, messages: messages as unknown as MessageParam[] } as Body;
      if (system !== undefined) value.system = system as string | TextBlockParam[];
      // A deferred tool whose reference the view folded away stays loaded (`keepLoadedTools`).
      const tools = keepLoadedTools(body.tools, body.messages, messages);
      if (tools !== body.tools) value.tools = tools;
      return { value, warnings };
    },
    withGcTools: (body) => withTools(body, gcToolsForAnthropic()),
  };
}

function governed<Body extends AnthropicRequest>(method: string, options: GovernAnthropicOptions) {
  return (owner: object) => {
    const send = (Reflect.get(owner, method) as Send<Body>).bind(owner);
    return governCreate(send, options, messagesCodec<Body>());
  };
}

function refused(call: string, reason: string) {
  return () => () => {
    throw new UngovernedCallError(call, reason);
  };
}

const BETA = 'beta features (server-side threads, compaction, beta content blocks) are not read';
const BATCH = 'a batch holds many conversations, not the one of a session';

function messagesOverlay(options: GovernAnthropicOptions): ClientOverlay {
  return {
    // `stream()` and `parse()` send through `this.create`: run on the overlay, they are governed.
    resource: true,
    replace: {
      create: governed<MessageCreateParamsBase>('create', options),
      // Counts what `create` would send: the view, not the full conversation.
      countTokens: governed<MessageCountTokensParams>('countTokens', options),
    },
    nested: { batches: { replace: { create: refused('messages.batches.create', BATCH) } } },
  };
}

const betaOverlay: ClientOverlay = {
  nested: {
    messages: {
      replace: Object.fromEntries(
        ['create', 'stream', 'parse', 'countTokens', 'toolRunner', 'thread'].map((method) => [
          method,
          refused(`beta.messages.${method}`, BETA),
        ]),
      ),
      nested: { batches: { replace: { create: refused('beta.messages.batches.create', BATCH) } } },
    },
  },
};

/**
 * A governed view of `client`. Governed: `messages.create` (streamed or not), `messages.stream`,
 * `messages.parse` and `messages.countTokens` (which counts the view `create` would send).
 * Refused with an `UngovernedCallError`: `beta.messages` and the batch APIs, and a raw `post`
 * to a messages endpoint. `withOptions()` returns a governed client. Every other method is the
 * client's own; the original client is left untouched.
 */
export function governAnthropic<Client extends AnthropicMessagesClient>(
  client: Client,
  options: GovernAnthropicOptions,
): Client {
  return overlayClient(
    client,
    { nested: { messages: messagesOverlay(options), beta: betaOverlay } },
    {
      conversationPaths: ['/v1/messages', '/v1/messages/count_tokens', '/v1/messages/batches'],
      replace: {
        withOptions: (owner) => (clientOptions: unknown) => {
          const withOptions = Reflect.get(owner, 'withOptions') as (value: unknown) => Client;
          return governAnthropic(withOptions.call(owner, clientOptions), options);
        },
      },
    },
  );
}
