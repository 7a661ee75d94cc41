/**
 * Self-GC for the official OpenAI SDK: `governOpenAI(client, options)` returns the same client
 * in which every call that sends a conversation (Chat Completions and Responses) sends the
 * session's governed view instead of the full `messages` or `input`, or is refused. Types only:
 * `openai` stays optional.
 */
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsBase } from 'openai/resources/chat/completions';
import type { InputTokenCountParams } from 'openai/resources/responses/input-tokens';
import type { ResponseCreateParamsBase } from 'openai/resources/responses/responses';
import type { GovernOptions } from './govern-request.js';
import { governCreate, type Send } from './governed-create.js';
import { chatCodec, hasInput, type ResponsesConversation, responsesCodec } from './openai-codecs.js';
import { type ClientOverlay, overlayClient } from './overlay-client.js';
import { UngovernedCallError } from './ungoverned-call-error.js';

/** Anything with the OpenAI SDK's `chat.completions.create` (an `OpenAI` or `AzureOpenAI` client). */
export interface OpenAIChatClient {
  chat: { completions: Pick<OpenAI['chat']['completions'], 'create'> };
}

/** A request the wrapper governs: a chat completion, a response, or a count of a response's input. */
export type OpenAIRequest = ChatCompletionCreateParamsBase | ResponseCreateParamsBase | InputTokenCountParams;

/** Options of `governOpenAI`; `sessionId` may read the request body (`user`, `metadata`, …). */
export type GovernOpenAIOptions = GovernOptions<OpenAIRequest>;

function bound<Body>(owner: object, method: string): Send<Body> {
  return (Reflect.get(owner, method) as Send<Body>).bind(owner);
}

/** A Responses method governed when its body has `input`; one without (a stored prompt) goes as written. */
function governedResponses<Body extends ResponsesConversation & OpenAIRequest>(
  call: string,
  method: string,
  options: GovernOpenAIOptions,
) {
  return (owner: object): Send<Body | undefined | null> => {
    const send = bound<Body | undefined | null>(owner, method);
    const governed = governCreate<Body>(send, options, responsesCodec<Body>(call));
    return (body, requestOptions) =>
      body !== undefined && body !== null && hasInput(body)
        ? governed(body, requestOptions)
        : send(body, requestOptions);
  };
}

function overlayFor(options: GovernOpenAIOptions): ClientOverlay {
  return {
    nested: {
      // `stream()`, `parse()` and `runTools()` send through `this._client.chat.completions.create`.
      chat: {
        nested: {
          completions: {
            resource: true,
            replace: {
              create: (owner) =>
                governCreate(bound<ChatCompletionCreateParamsBase>(owner, 'create'), options, chatCodec()),
            },
          },
        },
      },
      // `stream()` and `parse()` send through `this._client.responses.create`.
      responses: {
        resource: true,
        replace: {
          create: governedResponses<ResponseCreateParamsBase>('responses.create', 'create', options),
          compact: () => () => {
            throw new UngovernedCallError(
              'responses.compact',
              "compaction on OpenAI's side would replace the governed view with one the ledger never sees",
            );
          },
        },
        nested: {
          // Counts what `create` would send: the view, not the full conversation.
          inputTokens: {
            replace: {
              count: governedResponses<InputTokenCountParams>(
                'responses.inputTokens.count',
                'count',
                options,
              ),
            },
          },
        },
      },
    },
  };
}

/**
 * A governed view of `client`. Governed: `chat.completions.create` (streamed or not) and the
 * helpers that send through it (`chat.completions.stream`, `parse`, `runTools`, every round of
 * a tool loop); `responses.create`, `responses.stream`, `responses.parse` and
 * `responses.inputTokens.count` (which counts the view `create` would send). Refused with an
 * `UngovernedCallError`: a Responses request that continues a conversation held by OpenAI
 * (`previous_response_id`, `conversation`; sent as written with `failOpen`),
 * `responses.compact`, and a raw `post` to a model endpoint. `withOptions()` returns a governed
 * client. APIs whose conversation lives on OpenAI's side (Assistants threads, Conversations,
 * Realtime) and legacy completions are the client's own, like every other method; the original
 * client is left untouched.
 */
export function governOpenAI<Client extends OpenAIChatClient>(
  client: Client,
  options: GovernOpenAIOptions,
): Client {
  return overlayClient(client, overlayFor(options), {
    conversationPaths: ['/chat/completions', '/responses', '/responses/input_tokens', '/responses/compact'],
    replace: {
      withOptions: (owner) => (clientOptions: unknown) =>
        governOpenAI(bound<unknown>(owner, 'withOptions')(clientOptions) as unknown as Client, options),
    },
  });
}
