import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type OpenAIChatMessage, toOpenAIChat } from '../adapters/index.js';
import { alternatingLikeClient } from '../adapters/openai-chat/alternating-turns.js';
import { BadInputError } from '../core/errors.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { longSession } from '../core/testing/long-session.js';
import { createMemoryStore } from '../stores/index.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/index.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import type { GovernEvent } from './govern-request.js';
import { governOpenAI } from './openai-client.js';
import { fileReads, recoveryOf } from './testing/recovery-pointers.js';

let upstream: ScriptedUpstream;
let client: OpenAI;

beforeEach(async () => {
  upstream = await startScriptedUpstream({ script: [], apiKey: 'sk-test' });
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${upstream.url}/v1`, maxRetries: 0 });
});

afterEach(async () => {
  await upstream.close();
});

function governorWith(window: number) {
  return createGovernor({
    provider: 'openai',
    window,
    store: createMemoryStore(),
    tokenCounter: createTokenCounter(),
  });
}

const messages = toOpenAIChat(longSession({ rounds: 10, lines: 12 }))
  .messages as unknown as ChatCompletionMessageParam[];
type SentBody = {
  model: string;
  temperature?: number;
  messages: Array<{ role: string; content: unknown; tool_call_id?: string }>;
};
const sent = (index: number) => upstream.requests[index]?.body as SentBody;

describe('governOpenAI', () => {
  it('sends the governed view to the upstream, keeping the rest of the body and the answer', async () => {
    upstream.enqueue({ text: 'Reviewed.' });
    const events: GovernEvent[] = [];
    const governor = governorWith(2000);
    const governed = governOpenAI(client, {
      governor,
      sessionId: 'review',
      onGovern: (event) => events.push(event),
    });
    const completion = await governed.chat.completions.create({
      model: 'gpt-test',
      temperature: 0.2,
      messages,
    });

    expect(completion.choices[0]?.message.content).toBe('Reviewed.');
    expect(events).toMatchObject([
      {
        status: 'governed',
        sessionId: 'review',
        result: { commit: { planner: expect.stringMatching(/^embedded/) } },
      },
    ]);
    const [event] = events;
    if (event?.status !== 'governed') return;
    const body = sent(0);
    expect(body).toMatchObject({ model: 'gpt-test', temperature: 0.2 });
    // The upstream gets the governor's view, its user turns alternating as the client's do (a fold
    // after its request joins it): folds may merge the work after a request, never add a message.
    expect(body.messages).toEqual(
      alternatingLikeClient(
        toOpenAIChat(event.result.view).messages,
        messages as unknown as OpenAIChatMessage[],
      ),
    );
    expect(body.messages.length).toBeLessThanOrEqual(messages.length);
    expect(upstream.requests[0]!.rawBody.length).toBeLessThan(JSON.stringify(messages).length * 0.8);
    expect(body.messages[0]).toEqual(messages[0]);
    expect(body.messages.at(-1)).toEqual(messages.at(-1));
    const folded = body.messages.filter((message) => String(message.content).includes('[folded '));
    expect(folded.length).toBeGreaterThan(0);
    // Whatever the governor folded (outputs or whole stretches of work), every file read it held
    // back is one expand away, through a pointer the model is shown.
    const recovery = await recoveryOf(governor, 'review', body.messages, fileReads(10, 12));
    expect(recovery.heldBack.length).toBeGreaterThan(0);
    expect(recovery.keys.length).toBeGreaterThan(0);
    expect(recovery).toMatchObject({ unknownKeys: [], unrecoverable: [] });
  });

  it('governs a streamed create and keeps withResponse()', async () => {
    upstream.enqueue({ text: 'Streamed answer.' }, { text: 'With response.' });
    const governed = governOpenAI(client, { governor: governorWith(2000), sessionId: 'stream' });
    const stream = await governed.chat.completions.create({ model: 'gpt-test', messages, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Streamed answer.');
    expect(JSON.stringify(sent(0).messages)).toMatch(
      /\[folded (function:read_file:\d+|conversation:user:\d+@\d+):/,
    );

    const { data, response, request_id } = await governed.chat.completions
      .create({ model: 'gpt-test', messages })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('With response.');
    expect(response.status).toBe(200);
    expect(request_id).toBe('req_scripted0001');
    expect(sent(1).messages).toEqual(sent(0).messages);
  });

  it('leaves the original client and every other method alone', async () => {
    upstream.enqueue({ text: 'Ungoverned.' }, { text: 'Responses.' });
    const governed = governOpenAI(client, { governor: governorWith(2000), sessionId: 'other' });
    await client.chat.completions.create({ model: 'gpt-test', messages });
    expect(sent(0).messages).toEqual(messages);
    const response = await governed.responses.create({ model: 'gpt-test', input: 'Plan the next step.' });
    expect(response.output_text).toBe('Responses.');
    const models = await governed.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['scripted-model']);
    expect(governed.apiKey).toBe('sk-test');
    expect(governed.chat.completions).toBe(governed.chat.completions);
  });

  it('refuses messages it cannot read before any request, or with failOpen sends them as written', async () => {
    const legacy = [
      ...messages,
      { role: 'function', name: 'lookup', content: 'old-style result' },
    ] as ChatCompletionMessageParam[];
    const strict = governOpenAI(client, { governor: governorWith(2000), sessionId: 's' });
    await expect(
      strict.chat.completions.create({ model: 'gpt-test', messages: legacy }),
    ).rejects.toBeInstanceOf(BadInputError);
    expect(upstream.requests).toHaveLength(0);

    upstream.enqueue({ text: 'Served anyway.' });
    const events: GovernEvent[] = [];
    const lenient = governOpenAI(client, {
      governor: governorWith(2000),
      sessionId: 's',
      failOpen: true,
      onGovern: (event) => events.push(event),
    });
    const completion = await lenient.chat.completions.create({ model: 'gpt-test', messages: legacy });
    expect(completion.choices[0]?.message.content).toBe('Served anyway.');
    expect(sent(0).messages).toEqual(legacy);
    expect(events).toMatchObject([{ status: 'ungoverned', error: { code: 'bad-input' } }]);
  });
});
