import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam, TextBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toAnthropicMessages } from '../adapters/index.js';
import { BadInputError } from '../core/errors.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { longSession } from '../core/testing/long-session.js';
import { createMemoryStore } from '../stores/index.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/index.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import { governAnthropic } from './anthropic-client.js';
import type { GovernEvent } from './govern-request.js';

let upstream: ScriptedUpstream;
let client: Anthropic;

beforeEach(async () => {
  upstream = await startScriptedUpstream({ script: [], apiKey: 'sk-ant-test' });
  client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: upstream.url, maxRetries: 0 });
});

afterEach(async () => {
  await upstream.close();
});

function governorWith(window: number) {
  return createGovernor({
    provider: 'anthropic',
    window,
    store: createMemoryStore(),
    tokenCounter: createTokenCounter('anthropic'),
  });
}

// The session's own system prompt is replaced by blocks with `cache_control`, which must survive.
const system: TextBlockParam[] = [
  { type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } },
];
const messages = toAnthropicMessages(longSession({ rounds: 10, lines: 12 }))
  .messages as unknown as MessageParam[];
type Block = { type: string; id?: string; tool_use_id?: string; content?: unknown };
type SentBody = {
  system?: unknown;
  max_tokens: number;
  messages: Array<{ role: string; content: string | Block[] }>;
};
const sent = (index: number) => upstream.requests[index]?.body as SentBody;
const blocks = (body: SentBody) =>
  body.messages.flatMap((message) => (typeof message.content === 'string' ? [] : message.content));

describe('governAnthropic', () => {
  it('sends the governed view with the system prompt on top, tool uses and results still paired', async () => {
    upstream.enqueue({ text: 'Reviewed.' });
    const events: GovernEvent[] = [];
    const governed = governAnthropic(client, {
      governor: governorWith(2000),
      sessionId: 'review',
      onGovern: (event) => events.push(event),
    });
    const message = await governed.messages.create({
      model: 'claude-test',
      max_tokens: 256,
      system,
      messages,
    });

    expect(message.content).toMatchObject([{ type: 'text', text: 'Reviewed.' }]);
    const body = sent(0);
    expect(body.max_tokens).toBe(256);
    expect(body.system).toEqual(system);
    expect(body.messages).toHaveLength(messages.length);
    expect(upstream.requests[0]!.rawBody.length).toBeLessThan(
      JSON.stringify({ system, messages }).length * 0.8,
    );
    const uses = blocks(body)
      .filter((block) => block.type === 'tool_use')
      .map((block) => block.id);
    const results = blocks(body).filter((block) => block.type === 'tool_result');
    expect(results.map((block) => block.tool_use_id)).toEqual(uses);
    expect(JSON.stringify(results)).toMatch(
      /\[folded function:read_file:\d+: read_file path=src\/handlers\//,
    );
    expect(body.messages.at(-1)).toEqual(messages.at(-1));
    expect(events).toMatchObject([
      { status: 'governed', result: { commit: { trigger: expect.any(String) } } },
    ]);
  });

  it('governs a streamed create and a request without a system prompt', async () => {
    upstream.enqueue({ text: 'Streamed answer.' }, { text: 'No system.' });
    const governed = governAnthropic(client, { governor: governorWith(2000), sessionId: 'stream' });
    const stream = await governed.messages.create({
      model: 'claude-test',
      max_tokens: 256,
      system,
      messages,
      stream: true,
    });
    let text = '';
    for await (const event of stream)
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    expect(text).toBe('Streamed answer.');
    expect(JSON.stringify(sent(0).messages)).toContain('[folded function:read_file:');

    const reply = await governAnthropic(client, {
      governor: governorWith(2000),
      sessionId: 'bare',
    }).messages.create({
      model: 'claude-test',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(reply.content).toMatchObject([{ text: 'No system.' }]);
    expect(sent(1)).not.toHaveProperty('system');
    expect(sent(1).messages).toEqual([{ role: 'user', content: 'Hello' }]);
  });

  it('leaves the original client and other methods alone, and refuses what it cannot read', async () => {
    upstream.enqueue({ text: 'Ungoverned.' });
    const governed = governAnthropic(client, { governor: governorWith(2000), sessionId: 'other' });
    await client.messages.create({ model: 'claude-test', max_tokens: 256, system, messages });
    expect(sent(0).messages).toEqual(messages);
    const count = await governed.messages.countTokens({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(count.input_tokens).toBeGreaterThan(0);

    const unknownBlock = [
      { role: 'user', content: [{ type: 'hologram', data: '…' }] },
    ] as unknown as MessageParam[];
    await expect(
      governed.messages.create({ model: 'claude-test', max_tokens: 16, messages: unknownBlock }),
    ).rejects.toBeInstanceOf(BadInputError);
    expect(upstream.requests).toHaveLength(2);
  });
});
