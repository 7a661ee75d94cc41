import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamError } from '../core/errors.js';
import type { ScriptedReply } from '../testing/scripted-reply.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { ANTHROPIC_JSON_INSTRUCTION } from './anthropic-client.js';
import { extractJson } from './extract-json.js';
import { createLlmClient } from './llm-client.js';
import type { LlmClientOptions, LlmProvider } from './llm-types.js';

let upstream: ScriptedUpstream | undefined;

afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

/** A client of `server` whose retry waits are recorded and instant. */
function clientFor(
  server: ScriptedUpstream,
  provider: LlmProvider,
  overrides: Partial<LlmClientOptions> = {},
) {
  const waits: number[] = [];
  const client = createLlmClient({
    provider,
    baseUrl: provider === 'openai' ? `${server.url}/v1` : server.url,
    apiKey: 'sk-test',
    model: provider === 'openai' ? 'gpt-test' : 'claude-test',
    random: () => 0.5,
    sleep: async (ms) => {
      waits.push(ms);
    },
    ...overrides,
  });
  return { client, waits };
}

async function setup(
  provider: LlmProvider,
  replies: ScriptedReply[],
  overrides: Partial<LlmClientOptions> = {},
) {
  upstream = await startScriptedUpstream({ script: replies });
  return { ...clientFor(upstream, provider, overrides), server: upstream };
}

const ask = {
  system: 'You plan context operations.',
  messages: [{ role: 'user' as const, content: 'Plan.' }],
};

async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}

describe('createLlmClient (openai-compatible)', () => {
  it('sends a chat completion and maps text and usage, cached tokens included', async () => {
    const { client, server } = await setup('openai', [
      { text: 'A plan.', usage: { inputTokens: 120, outputTokens: 9, cachedInputTokens: 64 } },
    ]);
    const answer = await client.complete({ ...ask, maxTokens: 300, temperature: 0 });
    expect(answer.text).toBe('A plan.');
    expect(answer.usage).toEqual({
      inputTokens: 120,
      outputTokens: 9,
      cachedInputTokens: 64,
      cacheWriteInputTokens: 0,
    });
    expect(answer.raw).toMatchObject({ object: 'chat.completion' });
    const request = server.requests[0];
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer sk-test');
    expect(request?.body).toEqual({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'You plan context operations.' },
        { role: 'user', content: 'Plan.' },
      ],
      stream: false,
      max_tokens: 300,
      temperature: 0,
    });
  });

  it('asks for json_object in JSON mode and reads the structured answer', async () => {
    const { client, server } = await setup('openai', [
      { json: { operations: [{ op: 'fold', id: 'function:bash:2' }] } },
    ]);
    const answer = await client.complete({ ...ask, json: true });
    expect(server.requests[0]?.body).toMatchObject({ response_format: { type: 'json_object' } });
    expect(extractJson(answer.text)).toEqual({ operations: [{ op: 'fold', id: 'function:bash:2' }] });
  });

  it('retries a 500 with exponential backoff and jitter, then succeeds', async () => {
    const serverError = { error: { status: 500, message: 'The server had an error' } };
    const { client, waits, server } = await setup(
      'openai',
      [serverError, serverError, { text: 'third time' }],
      {
        retryBaseMs: 100,
      },
    );
    const answer = await client.complete(ask);
    expect(answer.text).toBe('third time');
    expect(server.requests).toHaveLength(3);
    expect(waits).toEqual([75, 150]);
  });

  it('honours retry-after on a 429', async () => {
    const { client, waits } = await setup('openai', [
      { error: { status: 429, message: 'Rate limit reached' }, headers: { 'retry-after': '2' } },
      { text: 'after the wait' },
    ]);
    expect((await client.complete(ask)).text).toBe('after the wait');
    expect(waits).toEqual([2000]);
  });

  it('does not retry a 400 and reports the provider message on one line', async () => {
    const { client, server, waits } = await setup('openai', [
      { error: { status: 400, message: "'messages' must contain\nthe word 'json'" } },
      { text: 'never sent' },
    ]);
    const error = await failure(client.complete(ask));
    expect(error.status).toBe(400);
    expect(error.code).toBe('upstream-failure');
    expect(error.message).toBe(
      "openai upstream answered 400: invalid_request_error: 'messages' must contain the word 'json'",
    );
    expect(server.requests).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('gives up after maxRetries with the last error', async () => {
    const overloaded = { error: { status: 503, message: 'overloaded' } };
    const { client, server } = await setup('openai', [overloaded, overloaded, overloaded], { maxRetries: 1 });
    const error = await failure(client.complete(ask));
    expect(error.status).toBe(503);
    expect(server.requests).toHaveLength(2);
  });

  it('retries a dropped connection as a network error', async () => {
    const { client, server, waits } = await setup('openai', [{ disconnect: true }, { text: 'reconnected' }]);
    expect((await client.complete(ask)).text).toBe('reconnected');
    expect(server.requests).toHaveLength(2);
    expect(waits).toHaveLength(1);
  });

  it('reports an unreachable server as a network error once retries run out', async () => {
    const closed = await startScriptedUpstream({ script: [] });
    await closed.close();
    const client = createLlmClient({
      provider: 'openai',
      baseUrl: `${closed.url}/v1`,
      model: 'gpt-test',
      maxRetries: 1,
      sleep: async () => {},
    });
    const error = await failure(client.complete(ask));
    expect(error.message).toMatch(/^openai upstream: network error: fetch failed \(.*ECONNREFUSED/);
    expect(error.status).toBeUndefined();
  });

  it('times out a hanging upstream with a timeout error', async () => {
    const { client } = await setup('openai', [{ hang: true }], { timeoutMs: 150 });
    const error = await failure(client.complete(ask));
    expect(error.code).toBe('upstream-timeout');
    expect(error.message).toBe('openai upstream timed out after 150 ms');
  });

  it('the deadline covers retry waits too', async () => {
    upstream = await startScriptedUpstream({
      script: [{ error: { status: 500, message: 'down' } }, { text: 'late' }],
    });
    const client = createLlmClient({
      provider: 'openai',
      baseUrl: `${upstream.url}/v1`,
      model: 'gpt-test',
      timeoutMs: 100,
      retryBaseMs: 5_000,
    });
    const started = Date.now();
    const error = await failure(client.complete(ask));
    expect(error.code).toBe('upstream-timeout');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(upstream.requests).toHaveLength(1);
  });

  it('stops when the caller aborts', async () => {
    const { client } = await setup('openai', [{ hang: true }]);
    const controller = new AbortController();
    const pending = client.complete({ ...ask, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('session ended')), 50);
    const error = await failure(pending);
    expect(error.code).toBe('upstream-failure');
    expect(error.message).toBe('openai upstream request aborted by the caller');
    expect((error.cause as Error).message).toBe('session ended');
  });

  it('rejects a 200 that is not JSON, has no choices, or is a refusal', async () => {
    const refusal = {
      choices: [{ message: { role: 'assistant', content: null, refusal: 'I cannot help.' } }],
    };
    const { client } = await setup('openai', [
      { raw: { body: '<html>proxy page' } },
      { raw: { body: { ok: true } } },
      { raw: { body: refusal } },
    ]);
    expect((await failure(client.complete(ask))).message).toContain('non-JSON body: <html>proxy page');
    expect((await failure(client.complete(ask))).message).toContain('without choices');
    expect((await failure(client.complete(ask))).message).toBe('openai upstream refused: I cannot help.');
  });
});

describe('createLlmClient (anthropic)', () => {
  it('sends a Messages request with its headers and sums the three input counts', async () => {
    const { client, server } = await setup('anthropic', [
      {
        thinking: 'hidden',
        text: 'Plan ready.',
        usage: { inputTokens: 1000, outputTokens: 12, cachedInputTokens: 800, cacheWriteInputTokens: 150 },
      },
    ]);
    const answer = await client.complete({ ...ask, temperature: 0.2 });
    expect(answer.text).toBe('Plan ready.');
    expect(answer.usage).toEqual({
      inputTokens: 1000,
      outputTokens: 12,
      cachedInputTokens: 800,
      cacheWriteInputTokens: 150,
    });
    const request = server.requests[0];
    expect(request?.path).toBe('/v1/messages');
    expect(request?.headers['x-api-key']).toBe('sk-test');
    expect(request?.headers['anthropic-version']).toBe('2023-06-01');
    expect(request?.body).toEqual({
      model: 'claude-test',
      max_tokens: 4096,
      system: 'You plan context operations.',
      messages: [{ role: 'user', content: 'Plan.' }],
      temperature: 0.2,
    });
  });

  it('adds the JSON instruction to the system prompt in JSON mode, and accepts a /v1 base URL', async () => {
    upstream = await startScriptedUpstream({
      script: [{ text: 'Here it is:\n```json\n{"operations": []}\n```' }],
    });
    const { client } = clientFor(upstream, 'anthropic', { baseUrl: `${upstream.url}/v1/` });
    const answer = await client.complete({ messages: ask.messages, json: true, maxTokens: 50 });
    expect(extractJson(answer.text)).toEqual({ operations: [] });
    expect(upstream.requests[0]?.path).toBe('/v1/messages');
    expect(upstream.requests[0]?.body).toMatchObject({ system: ANTHROPIC_JSON_INSTRUCTION, max_tokens: 50 });
  });

  it('reports the Anthropic error type and message, retrying overloaded_error', async () => {
    const { client, server } = await setup('anthropic', [
      { error: { status: 529, message: 'Overloaded' } },
      { error: { status: 401, message: 'invalid x-api-key' } },
    ]);
    const error = await failure(client.complete(ask));
    expect(error.message).toBe('anthropic upstream answered 401: authentication_error: invalid x-api-key');
    expect(error.status).toBe(401);
    expect(server.requests).toHaveLength(2);
  });

  it('follows x-should-retry over the status', async () => {
    const { client, server } = await setup('anthropic', [
      { error: { status: 500, message: 'do not retry' }, headers: { 'x-should-retry': 'false' } },
    ]);
    expect((await failure(client.complete(ask))).status).toBe(500);
    expect(server.requests).toHaveLength(1);
  });
});

describe.each(['openai', 'anthropic'] as const)('createLlmClient with a fork (%s)', (provider) => {
  const fork = {
    ...(provider === 'anthropic' ? { system: [{ type: 'text', text: 'You are the agent.' }] } : {}),
    messages: [
      ...(provider === 'openai' ? [{ role: 'system', content: 'You are the agent.' }] : []),
      { role: 'user', content: 'Fix the parser.' },
      { role: 'assistant', content: 'Done.' },
    ],
    tools: [{ name: 'read_file' }],
  };

  it("sends the fork's tools, system and messages as given, its own messages after them", async () => {
    const { client, server } = await setup(provider, [{ json: { operations: [] } }]);
    await client.complete({ fork, messages: [{ role: 'user', content: 'Plan, in JSON.' }], json: true });
    const body = server.requests[0]?.body as Record<string, unknown>;
    expect(body.messages).toEqual([...fork.messages, { role: 'user', content: 'Plan, in JSON.' }]);
    expect(body.tools).toEqual(fork.tools);
    // The agent's system prompt stays as it is: no JSON line added to it.
    if (provider === 'anthropic') expect(body.system).toEqual(fork.system);
    else expect(body).not.toHaveProperty('system');
  });

  it('refuses a system prompt of its own with a fork', async () => {
    const { client, server } = await setup(provider, []);
    await expect(
      client.complete({ fork, system: 'Plan.', messages: [{ role: 'user', content: 'Plan.' }] }),
    ).rejects.toThrow("a forked request keeps the agent's system prompt: pass no system");
    expect(server.requests).toHaveLength(0);
  });
});
