import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam, TextBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toolSearchRound } from '../adapters/anthropic/testing/tool-search-round.js';
import { toAnthropicMessages } from '../adapters/index.js';
import { BadInputError } from '../core/errors.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { longSession } from '../core/testing/long-session.js';
import { createMemoryStore } from '../stores/index.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/index.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import { governAnthropic } from './anthropic-client.js';
import type { GovernEvent } from './govern-request.js';
import { fileReads, recoveryOf } from './testing/recovery-pointers.js';

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
    const governor = governorWith(2000);
    const governed = governAnthropic(client, {
      governor,
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
    expect(events).toMatchObject([
      { status: 'governed', result: { commit: { trigger: expect.any(String) } } },
    ]);
    const [event] = events;
    if (event?.status !== 'governed') return;
    const body = sent(0);
    expect(body.max_tokens).toBe(256);
    expect(body.system).toEqual(system);
    // The upstream gets the governor's view (folded work after a request may merge with it).
    expect(body.messages).toEqual(toAnthropicMessages(event.result.view).messages);
    expect(body.messages.length).toBeLessThanOrEqual(messages.length);
    expect(upstream.requests[0]!.rawBody.length).toBeLessThan(
      JSON.stringify({ system, messages }).length * 0.8,
    );
    // Still a valid Messages conversation: roles alternate, from the user, and every tool use
    // that stayed is answered by its result in the next message, in order.
    expect(body.messages[0]?.role).toBe('user');
    body.messages.forEach((entry, index) => {
      if (index > 0) expect(entry.role).not.toBe(body.messages[index - 1]?.role);
    });
    const uses = blocks(body)
      .filter((block) => block.type === 'tool_use')
      .map((block) => block.id);
    const results = blocks(body).filter((block) => block.type === 'tool_result');
    // (A deep commit may fold every step before the latest turn, leaving no tool use to pair.)
    expect(results.map((block) => block.tool_use_id)).toEqual(uses);
    body.messages.forEach((entry, index) => {
      if (typeof entry.content === 'string') return;
      const asked = entry.content.filter((block) => block.type === 'tool_use').map((block) => block.id);
      if (asked.length === 0) return;
      const next = body.messages[index + 1];
      const answered = typeof next?.content === 'string' ? [] : (next?.content ?? []);
      expect(
        answered.filter((block) => block.type === 'tool_result').map((block) => block.tool_use_id),
      ).toEqual(asked);
    });
    // Whatever was folded, every file read held back is one expand away from a pointer shown.
    expect(JSON.stringify(body.messages)).toContain('[folded ');
    const recovery = await recoveryOf(governor, 'review', body.messages, fileReads(10, 12));
    expect(recovery.heldBack.length).toBeGreaterThan(0);
    expect(recovery.keys.length).toBeGreaterThan(0);
    expect(recovery).toMatchObject({ unknownKeys: [], unrecoverable: [] });
    expect(body.messages.at(-1)).toEqual(messages.at(-1));
  });

  it('sends a deferred tool loaded once the view folded the search result that loaded it', async () => {
    upstream.enqueue({ text: 'Reviewed.' });
    const schema = { type: 'object' as const, properties: {} };
    const tools = [
      { name: 'read_file', input_schema: schema },
      { name: 'TaskUpdate', input_schema: schema, defer_loading: true },
    ];
    const search = toolSearchRound('toolu_s', ['TaskUpdate']) as unknown as MessageParam[];
    const governed = governAnthropic(client, { governor: governorWith(2000), sessionId: 'deferred' });
    await governed.messages.create({
      model: 'claude-test',
      max_tokens: 256,
      system,
      tools,
      messages: [messages[0]!, ...search, ...messages.slice(1)],
    } as unknown as Parameters<typeof governed.messages.create>[0]);
    const body = upstream.requests.at(-1)!.body as SentBody & { tools: unknown[] };
    expect(JSON.stringify(body.messages)).not.toContain('tool_reference');
    expect(body.tools).toEqual([tools[0], { name: 'TaskUpdate', input_schema: schema }]);
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
    expect(JSON.stringify(sent(0).messages)).toMatch(
      /\[folded (function:read_file:\d+|conversation:user:\d+@\d+):/,
    );

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

    // A block of a type it does not know is carried whole; a malformed one of a type it reads is not.
    const unknownBlock = [
      { role: 'user', content: [{ type: 'image', source: { type: 'base64', data: '…' } }] },
    ] as unknown as MessageParam[];
    await expect(
      governed.messages.create({ model: 'claude-test', max_tokens: 16, messages: unknownBlock }),
    ).rejects.toBeInstanceOf(BadInputError);
    expect(upstream.requests).toHaveLength(2);
  });
});
