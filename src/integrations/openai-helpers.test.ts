/**
 * Every path of the OpenAI SDK that sends a conversation, against a real SDK client and a
 * scripted upstream on loopback: what the upstream received is the governed view and fits the
 * window, or the call is refused before anything is sent.
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { ResponseInputItem as SdkInputItem } from 'openai/resources/responses/responses';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  fromOpenAIChat,
  fromOpenAIResponses,
  type OpenAIChatMessage,
  type ResponseInputItem,
  toOpenAIChat,
  toOpenAIResponses,
} from '../adapters/index.js';
import { alternatingLikeClient } from '../adapters/openai-chat/alternating-turns.js';
import { createGovernor } from '../core/governor/create-governor.js';
import type { Message } from '../core/transcript.js';
import { createMemoryStore } from '../stores/index.js';
import { type ScriptedReply, type ScriptedUpstream, startScriptedUpstream } from '../testing/index.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import type { GovernEvent } from './govern-request.js';
import { governOpenAI } from './openai-client.js';
import { conversationTokens, oversizedSession, WINDOW } from './testing/oversized-session.js';
import { UngovernedCallError } from './ungoverned-call-error.js';

let upstream: ScriptedUpstream;
let client: OpenAI;

beforeEach(async () => {
  upstream = await startScriptedUpstream({ script: [], apiKey: 'sk-test' });
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${upstream.url}/v1`, maxRetries: 0 });
});

afterEach(async () => {
  await upstream.close();
});

const counter = createTokenCounter();
const messages = toOpenAIChat(oversizedSession()).messages as unknown as ChatCompletionMessageParam[];
const input = toOpenAIResponses(oversizedSession()).messages as unknown as SdkInputItem[];
const fullSize = JSON.stringify(messages).length;

function governed(events: GovernEvent[], failOpen = false) {
  const governor = createGovernor({
    provider: 'openai',
    window: WINDOW,
    store: createMemoryStore(),
    tokenCounter: counter,
  });
  return governOpenAI(client, {
    governor,
    sessionId: 'helpers',
    failOpen,
    onGovern: (event) => events.push(event),
  });
}

type Governed = ReturnType<typeof governed>;
const chat = { model: 'gpt-test', messages };
const responses = { model: 'gpt-test', input };
const schema = {
  name: 'verdict',
  schema: { type: 'object', properties: { verdict: { type: 'string' } }, required: ['verdict'] },
};
const lookup = {
  type: 'function' as const,
  function: {
    name: 'lookup',
    description: 'Look a handler up.',
    parameters: { type: 'object', properties: { name: { type: 'string' } } },
    parse: JSON.parse,
    function: (args: { name?: string }) => `handler ${args.name ?? '?'} is fine`,
  },
};

interface Path {
  replies: ScriptedReply[];
  /** Sends and returns the final answer's text as the caller reads it. */
  send(client: Governed): Promise<string | null | undefined>;
  /** How the conversation of a received body reads as the transcript. */
  read(body: unknown): Message[];
  /** The governed view as the client's wire carries it (`read` of what the wrapper writes). */
  sent(view: Message[]): Message[];
}

const chatBody = (body: unknown) =>
  fromOpenAIChat((body as { messages: OpenAIChatMessage[] }).messages).messages;
const responsesBody = (body: unknown) =>
  fromOpenAIResponses((body as { input: ResponseInputItem[] }).input).messages;
/** A Chat view as sent: its user turns alternating as the client's do (a fold joins its request). */
const chatSent = (view: Message[]) =>
  chatBody({
    messages: alternatingLikeClient(toOpenAIChat(view).messages, messages as unknown as OpenAIChatMessage[]),
  });
const responsesSent = (view: Message[]) => view;
const answer: ScriptedReply[] = [{ text: 'answer' }];
const toolRound: ScriptedReply[] = [
  { toolCalls: [{ name: 'lookup', arguments: { name: 'handler_1_0' } }] },
  { text: 'answer' },
];

const PATHS: Record<string, Path> = {
  'chat.completions.create': {
    replies: answer,
    send: async (governed) => (await governed.chat.completions.create(chat)).choices[0]?.message.content,
    read: chatBody,
    sent: chatSent,
  },
  'chat.completions.create (stream: true)': {
    replies: answer,
    send: async (governed) => {
      let text = '';
      for await (const chunk of await governed.chat.completions.create({ ...chat, stream: true }))
        text += chunk.choices[0]?.delta.content ?? '';
      return text;
    },
    read: chatBody,
    sent: chatSent,
  },
  'chat.completions.stream': {
    replies: answer,
    send: (governed) => governed.chat.completions.stream(chat).finalContent(),
    read: chatBody,
    sent: chatSent,
  },
  'chat.completions.parse': {
    replies: [{ json: { verdict: 'answer' } }],
    send: async (governed) => {
      const completion = await governed.chat.completions.parse({
        ...chat,
        response_format: { type: 'json_schema', json_schema: schema },
      });
      return (completion.choices[0]?.message.parsed as { verdict: string } | null)?.verdict;
    },
    read: chatBody,
    sent: chatSent,
  },
  'chat.completions.runTools': {
    replies: toolRound,
    send: (governed) => governed.chat.completions.runTools({ ...chat, tools: [lookup] }).finalContent(),
    read: chatBody,
    sent: chatSent,
  },
  'chat.completions.runTools (stream: true)': {
    replies: toolRound,
    send: (governed) =>
      governed.chat.completions.runTools({ ...chat, tools: [lookup], stream: true }).finalContent(),
    read: chatBody,
    sent: chatSent,
  },
  'responses.create': {
    replies: answer,
    send: async (governed) => (await governed.responses.create(responses)).output_text,
    read: responsesBody,
    sent: responsesSent,
  },
  'responses.create (stream: true)': {
    replies: answer,
    send: async (governed) => {
      let text = '';
      for await (const event of await governed.responses.create({ ...responses, stream: true }))
        if (event.type === 'response.output_text.delta') text += event.delta;
      return text;
    },
    read: responsesBody,
    sent: responsesSent,
  },
  'responses.stream': {
    replies: answer,
    send: async (governed) => {
      const stream = governed.responses.stream(responses);
      let text = '';
      stream.on('response.output_text.delta', (event) => {
        text += event.delta;
      });
      await stream.finalResponse();
      return text;
    },
    read: responsesBody,
    sent: responsesSent,
  },
  'responses.parse': {
    replies: [{ json: { verdict: 'answer' } }],
    send: async (governed) => {
      const response = await governed.responses.parse({
        ...responses,
        text: { format: { type: 'json_schema', ...schema } },
      });
      return (response.output_parsed as { verdict: string } | null)?.verdict;
    },
    read: responsesBody,
    sent: responsesSent,
  },
};

describe('governOpenAI on an oversized session', () => {
  for (const [name, path] of Object.entries(PATHS)) {
    it(`${name} sends the governed view, within the window`, async () => {
      upstream.enqueue(...path.replies);
      const events: GovernEvent[] = [];
      expect(await path.send(governed(events))).toBe('answer');

      // One request per model call (two for a tool round), each governed and within the window.
      expect(upstream.requests).toHaveLength(path.replies.length);
      expect(events.map((event) => event.status)).toEqual(path.replies.map(() => 'governed'));
      for (const [index, request] of upstream.requests.entries()) {
        const event = events[index];
        if (event?.status !== 'governed') throw new Error('expected a governed event');
        const received = path.read(request.body);
        expect(received).toEqual(path.sent(event.result.view));
        expect(conversationTokens(counter, received)).toBeLessThanOrEqual(WINDOW);
        expect(request.rawBody.length).toBeLessThan(fullSize / 10);
        expect(request.rawBody).toContain('[folded ');
      }
    });
  }

  it('responses.inputTokens.count counts the view that create sends', async () => {
    upstream.enqueue({ text: 'answer' });
    const events: GovernEvent[] = [];
    const counting = governed(events);
    const count = await counting.responses.inputTokens.count(responses);
    await counting.responses.create(responses);

    expect(upstream.requests.map((request) => request.path)).toEqual([
      '/v1/responses/input_tokens',
      '/v1/responses',
    ]);
    const [counted, created] = upstream.requests.map((request) => (request.body as { input: unknown }).input);
    expect(counted).toEqual(created);
    expect(count).toMatchObject({ object: 'response.input_tokens' });
    expect(count.input_tokens).toBeLessThan(WINDOW);
    // A count without input (a stored prompt) has no conversation to govern.
    await counting.responses.inputTokens.count({ model: 'gpt-test' });
    expect(upstream.requests.at(-1)?.body).toEqual({ model: 'gpt-test' });
    expect(events).toHaveLength(2);
  });

  it('refuses a conversation held by OpenAI, or with failOpen sends it as written and says so', async () => {
    const strict = governed([]);
    await expect(
      strict.responses.create({ ...responses, previous_response_id: 'resp_1' }),
    ).rejects.toMatchObject({ name: 'UngovernedCallError', call: 'responses.create' });
    // The SDK's stream helpers wrap what failed as their own error, with it as the cause.
    await expect(
      strict.responses.stream({ ...responses, conversation: 'conv_1' }).finalResponse(),
    ).rejects.toMatchObject({ cause: expect.any(UngovernedCallError) });
    expect(upstream.requests).toHaveLength(0);

    upstream.enqueue({ text: 'kept by OpenAI' }, { text: 'as written' });
    const kept = await client.responses.create({ model: 'gpt-test', input: 'Hello' });
    const events: GovernEvent[] = [];
    const lenient = governed(events, true);
    const response = await lenient.responses.create({
      model: 'gpt-test',
      input: 'Hi',
      previous_response_id: kept.id,
    });
    expect(response.output_text).toBe('as written');
    expect(upstream.requests[1]?.body).toMatchObject({ previous_response_id: kept.id });
    expect(events).toMatchObject([{ status: 'ungoverned', error: { name: 'UngovernedCallError' } }]);
  });

  it('refuses compaction and raw requests to model endpoints; withOptions() stays governed', async () => {
    const refusing = governed([]);
    expect(() => refusing.responses.compact({ model: 'gpt-test', input })).toThrow(UngovernedCallError);
    expect(() => refusing.post('/chat/completions', { body: chat })).toThrow(UngovernedCallError);
    expect(() => refusing.post('/responses', { body: responses })).toThrow(/original \(unwrapped\) client/);
    expect(upstream.requests).toHaveLength(0);

    upstream.enqueue({ text: 'answer' });
    const events: GovernEvent[] = [];
    const other = governed(events).withOptions({ timeout: 30_000 });
    expect(await other.chat.completions.stream(chat).finalContent()).toBe('answer');
    expect(events).toHaveLength(1);
    expect(upstream.requests[0]!.rawBody.length).toBeLessThan(fullSize / 10);
    // Other methods and the original client are untouched: a resource's other methods still
    // reach the upstream through the governed client (here a GET the scripted upstream lacks).
    await expect(refusing.chat.completions.retrieve('chatcmpl_1')).rejects.toMatchObject({ status: 404 });
    await expect(refusing.responses.cancel('resp_1')).rejects.toMatchObject({ status: 404 });
    const models = await refusing.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['scripted-model']);
    upstream.enqueue({ text: 'as written' });
    await client.chat.completions.stream(chat).finalContent();
    expect(upstream.requests.at(-1)!.rawBody.length).toBeGreaterThan(fullSize * 0.9);
  });
});
