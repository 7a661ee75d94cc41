/**
 * Every path of the Anthropic SDK that sends a conversation, against a real SDK client and a
 * scripted upstream on loopback: what the upstream received is the governed view and fits the
 * window, or the call is refused before anything is sent.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type AnthropicMessagesPrompt,
  fromAnthropicMessages,
  toAnthropicMessages,
} from '../adapters/index.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { createMemoryStore } from '../stores/index.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/index.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import { governAnthropic } from './anthropic-client.js';
import type { GovernEvent } from './govern-request.js';
import { conversationTokens, oversizedSession, WINDOW } from './testing/oversized-session.js';
import { UngovernedCallError } from './ungoverned-call-error.js';

let upstream: ScriptedUpstream;
let client: Anthropic;

beforeEach(async () => {
  upstream = await startScriptedUpstream({ script: [], apiKey: 'sk-ant-test' });
  client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: upstream.url, maxRetries: 0 });
});

afterEach(async () => {
  await upstream.close();
});

const counter = createTokenCounter('anthropic');
const session = toAnthropicMessages(oversizedSession());
const system = session.system as string;
const messages = session.messages as unknown as MessageParam[];
const fullSize = JSON.stringify({ system, messages }).length;

function governed(events: GovernEvent[]) {
  const governor = createGovernor({
    provider: 'anthropic',
    window: WINDOW,
    store: createMemoryStore(),
    tokenCounter: counter,
  });
  return governAnthropic(client, { governor, sessionId: 'helpers', onGovern: (event) => events.push(event) });
}

type Governed = ReturnType<typeof governed>;
const base = { model: 'claude-test', max_tokens: 256, system, messages };
const format = { type: 'json_schema' as const, schema: { type: 'object', properties: { verdict: {} } } };

/** Each path sends one request and returns the answer's text as the caller reads it. */
const PATHS: Record<string, (client: Governed) => Promise<string>> = {
  'messages.create': async (governed) => {
    const message = await governed.messages.create(base);
    return message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
  },
  'messages.create (stream: true)': async (governed) => {
    let text = '';
    for await (const event of await governed.messages.create({ ...base, stream: true }))
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    return text;
  },
  'messages.stream': async (governed) => {
    const stream = governed.messages.stream(base);
    let text = '';
    stream.on('text', (delta) => {
      text += delta;
    });
    const final = await stream.finalText();
    expect(final).toBe(text);
    return text;
  },
  'messages.create (withResponse)': async (governed) => {
    const { data, response } = await governed.messages.create(base).withResponse();
    expect(response.status).toBe(200);
    return data.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
  },
  'messages.parse': async (governed) => {
    const message = await governed.messages.parse({ ...base, output_config: { format } });
    expect(message.parsed_output).toEqual({ verdict: 'answer' });
    return 'answer';
  },
};

describe('governAnthropic on an oversized session', () => {
  for (const [path, send] of Object.entries(PATHS)) {
    it(`${path} sends the governed view, within the window`, async () => {
      upstream.enqueue(path === 'messages.parse' ? { json: { verdict: 'answer' } } : { text: 'answer' });
      const events: GovernEvent[] = [];
      expect(await send(governed(events))).toBe('answer');

      expect(upstream.requests).toHaveLength(1);
      const [event] = events;
      if (event?.status !== 'governed') throw new Error(`expected a governed event, got ${event?.status}`);
      const received = upstream.requests[0]!.body as AnthropicMessagesPrompt;
      expect(received.messages).toEqual(toAnthropicMessages(event.result.view).messages);
      const tokens = conversationTokens(counter, fromAnthropicMessages(received).messages);
      expect(tokens).toBeLessThanOrEqual(WINDOW);
      expect(upstream.requests[0]!.rawBody.length).toBeLessThan(fullSize / 10);
      expect(upstream.requests[0]!.rawBody).toContain('[folded ');
    });
  }

  it('messages.countTokens counts the view that create sends', async () => {
    upstream.enqueue({ text: 'answer' });
    const events: GovernEvent[] = [];
    const counting = governed(events);
    const count = await counting.messages.countTokens({ model: 'claude-test', system, messages });
    await counting.messages.create(base);

    const [counted, created] = upstream.requests.map((request) => request.body as AnthropicMessagesPrompt);
    expect(upstream.requests.map((request) => request.path)).toEqual([
      '/v1/messages/count_tokens',
      '/v1/messages',
    ]);
    expect(counted?.messages).toEqual(created?.messages);
    expect(count.input_tokens).toBeLessThan(WINDOW);
    expect(events.map((event) => event.status)).toEqual(['governed', 'governed']);
  });

  it('governs the clients withOptions() returns', async () => {
    upstream.enqueue({ text: 'answer' });
    const events: GovernEvent[] = [];
    const other = governed(events).withOptions({ timeout: 30_000 });
    expect(await other.messages.stream(base).finalText()).toBe('answer');
    expect(events).toHaveLength(1);
    expect(upstream.requests[0]!.rawBody.length).toBeLessThan(fullSize / 10);
  });

  it('refuses what it cannot govern before anything is sent', async () => {
    const refusing = governed([]);
    const refusals: Array<[string, () => unknown]> = [
      ['beta.messages.create', () => refusing.beta.messages.create(base)],
      ['beta.messages.stream', () => refusing.beta.messages.stream(base)],
      ['beta.messages.parse', () => refusing.beta.messages.parse(base)],
      ['beta.messages.countTokens', () => refusing.beta.messages.countTokens({ model: 'm', messages })],
      ['beta.messages.toolRunner', () => refusing.beta.messages.toolRunner({ ...base, tools: [] })],
      ['messages.batches.create', () => refusing.messages.batches.create({ requests: [] })],
      ['beta.messages.batches.create', () => refusing.beta.messages.batches.create({ requests: [] })],
      ['post /v1/messages', () => refusing.post('/v1/messages', { body: base })],
      ['request /v1/messages', () => refusing.request({ method: 'post', path: '/v1/messages', body: base })],
    ];
    for (const [call, send] of refusals) {
      const thrown = (() => {
        try {
          send();
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(thrown, call).toBeInstanceOf(UngovernedCallError);
      expect(thrown).toMatchObject({ code: 'bad-input', call });
      expect(String((thrown as Error).message)).toContain('original (unwrapped) client');
    }
    // A raw request given as a promise is checked when it resolves.
    await expect(
      refusing.request(Promise.resolve({ method: 'post' as const, path: '/v1/messages', body: base })),
    ).rejects.toBeInstanceOf(UngovernedCallError);
    expect(upstream.requests).toHaveLength(0);

    // Raw requests elsewhere, and the unwrapped client, are untouched.
    const models = await refusing.get<{ data: Array<{ id: string }> }>('/v1/models');
    expect(models.data.map((model) => model.id)).toEqual(['scripted-model']);
    upstream.enqueue({ text: 'as written' });
    await client.messages.create(base);
    expect(upstream.requests.at(-1)!.rawBody.length).toBeGreaterThan(fullSize * 0.9);
  });
});
