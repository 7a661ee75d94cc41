/**
 * The official SDKs, pointed at the scripted upstream on loopback, must read its answers: the
 * strongest evidence that the wire formats are the real ones.
 */

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { estimateInputTokens } from './scripted-reply.js';
import { type ScriptedUpstream, startScriptedUpstream } from './scripted-upstream.js';

let upstream: ScriptedUpstream;
let openai: OpenAI;
let anthropic: Anthropic;
const messages = [{ role: 'user' as const, content: 'Which objects can be folded?' }];

beforeEach(async () => {
  upstream = await startScriptedUpstream({ script: [], apiKey: 'sk-test', cachedInputTokens: 4 });
  openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${upstream.url}/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: 'sk-test', baseURL: upstream.url, maxRetries: 0 });
});

afterEach(async () => {
  await upstream.close();
});

describe('openai SDK', () => {
  it('reads a chat completion with tool calls and cached usage', async () => {
    upstream.enqueue({
      text: 'Fold the log.',
      toolCalls: [{ name: 'fold', arguments: { id: 'function:bash:2' } }],
    });
    const completion = await openai.chat.completions.create({ model: 'gpt-test', messages });
    const message = completion.choices[0]?.message;
    expect(message?.content).toBe('Fold the log.');
    expect(message?.tool_calls?.[0]).toMatchObject({
      function: { name: 'fold', arguments: '{"id":"function:bash:2"}' },
    });
    expect(completion.usage?.prompt_tokens_details?.cached_tokens).toBe(4);
    expect(upstream.requests[0]?.headers.authorization).toBe('Bearer sk-test');
  });

  it('streams a chat completion with include_usage through the SDK stream helper', async () => {
    upstream.enqueue({ text: 'Streaming through the SDK, with ünïcödé.' });
    const stream = openai.chat.completions.stream({
      model: 'gpt-test',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe('Streaming through the SDK, with ünïcödé.');
    expect(final.usage?.prompt_tokens).toBe(estimateInputTokens(upstream.requests[0]?.body));
  });

  it('reads a Responses answer, streamed and not', async () => {
    upstream.enqueue(
      { text: 'Plain response.' },
      { text: 'Streamed response.', toolCalls: [{ name: 'prune', arguments: '{}' }] },
    );
    const response = await openai.responses.create({ model: 'gpt-test', input: 'Plan the next collection.' });
    expect(response.output_text).toBe('Plain response.');
    expect(response.usage?.input_tokens_details.cached_tokens).toBe(4);
    const stream = openai.responses.stream({ model: 'gpt-test', input: 'Plan the next collection.' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(deltas.join('')).toBe('Streamed response.');
    expect(final.output[0]).toMatchObject({ type: 'message', content: [{ text: 'Streamed response.' }] });
    expect(final.output.find((item) => item.type === 'function_call')).toMatchObject({
      name: 'prune',
      arguments: '{}',
    });
  });

  it('surfaces a scripted error as an APIError with status, type and message', async () => {
    upstream.enqueue({ error: { status: 400, message: 'messages must not be empty', param: 'messages' } });
    const failure = openai.chat.completions.create({ model: 'gpt-test', messages });
    await expect(failure).rejects.toBeInstanceOf(OpenAI.APIError);
    await failure.catch((error: InstanceType<typeof OpenAI.APIError>) => {
      expect(error.status).toBe(400);
      expect(error.type).toBe('invalid_request_error');
      expect(error.param).toBe('messages');
      expect(error.message).toContain('messages must not be empty');
    });
  });

  it('lists models', async () => {
    const page = await openai.models.list();
    expect(page.data.map((model) => model.id)).toEqual(['scripted-model']);
  });
});

describe('anthropic SDK', () => {
  it('reads a message with thinking, text, tool_use and cache usage', async () => {
    upstream.enqueue({
      thinking: 'Consumed output.',
      text: 'Pruning.',
      toolCalls: [{ name: 'prune', arguments: { id: 'function:bash:1' } }],
      usage: { cacheWriteInputTokens: 2 },
    });
    const message = await anthropic.messages.create({ model: 'claude-test', max_tokens: 100, messages });
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text', 'tool_use']);
    expect(message.content[2]).toMatchObject({ name: 'prune', input: { id: 'function:bash:1' } });
    const total = estimateInputTokens(upstream.requests[0]?.body);
    expect(message.usage).toMatchObject({
      input_tokens: total - 4 - 2,
      cache_read_input_tokens: 4,
      cache_creation_input_tokens: 2,
    });
    // This SDK version authenticates with a bearer token and its own API version date.
    expect(upstream.requests[0]?.headers.authorization).toBe('Bearer sk-test');
    expect(upstream.requests[0]?.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('accumulates a streamed message through the SDK stream helper', async () => {
    upstream.enqueue({
      thinking: 'Think.',
      text: 'Streamed — with “quotes”.',
      toolCalls: [{ name: 'expand', arguments: { id: 'function:read_file:4', reason: 'needed again' } }],
    });
    const stream = anthropic.messages.stream({ model: 'claude-test', max_tokens: 100, messages });
    const texts: string[] = [];
    stream.on('text', (delta) => texts.push(delta));
    const final = await stream.finalMessage();
    expect(texts.join('')).toBe('Streamed — with “quotes”.');
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content[0]).toMatchObject({ type: 'thinking', thinking: 'Think.' });
    expect(final.content[2]).toMatchObject({ input: { id: 'function:read_file:4', reason: 'needed again' } });
    expect(final.usage.output_tokens).toBeGreaterThan(1);
  });

  it('surfaces a scripted error with the Anthropic error type', async () => {
    upstream.enqueue({
      error: { status: 429, message: 'Number of request tokens has exceeded your rate limit' },
    });
    const failure = anthropic.messages.create({ model: 'claude-test', max_tokens: 10, messages });
    await expect(failure).rejects.toBeInstanceOf(Anthropic.RateLimitError);
    await failure.catch((error: InstanceType<typeof Anthropic.APIError>) => {
      expect(error.status).toBe(429);
      expect(error.message).toContain('rate_limit_error');
      expect(error.requestID).toBe('req_scripted0000');
    });
  });

  it('counts tokens and lists models', async () => {
    const count = await anthropic.messages.countTokens({ model: 'claude-test', messages });
    expect(count.input_tokens).toBe(estimateInputTokens(upstream.requests[0]?.body));
    const models = await anthropic.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['scripted-model']);
  });
});
