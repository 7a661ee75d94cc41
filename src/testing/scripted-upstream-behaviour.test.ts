import { describe, expect, it } from 'vitest';
import { THINKING_BINDING_BETA } from '../adapters/index.js';
import { createEchoScript } from './echo-script.js';
import { readSse, sseJson } from './read-sse.js';
import { anthropicBody, chatBody, post, readJson, useScriptedUpstream } from './upstream-test-kit.js';

const start = useScriptedUpstream();

describe('errors and failure modes', () => {
  it('renders errors in the OpenAI body format on OpenAI paths, with extra headers', async () => {
    const server = await start({
      script: [{ error: { status: 429, message: 'Slow down.' }, headers: { 'retry-after': '2' } }],
    });
    const response = await post(server, '/v1/chat/completions', chatBody);
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('2');
    expect(await readJson(response)).toEqual({
      error: { message: 'Slow down.', type: 'requests', param: null, code: 'rate_limit_exceeded' },
    });
  });

  it('renders errors in the Anthropic body format on /v1/messages', async () => {
    const server = await start({ script: [{ error: { status: 529, message: 'Overloaded' } }] });
    const response = await post(server, '/v1/messages', anthropicBody);
    expect(response.status).toBe(529);
    expect(await readJson(response)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
      request_id: 'req_scripted0000',
    });
  });

  it('sends raw replies exactly', async () => {
    const server = await start({
      script: [{ raw: { status: 502, headers: { 'x-test': 'yes' }, body: '<html>bad gateway' } }],
    });
    const response = await post(server, '/v1/responses', {});
    expect(response.status).toBe(502);
    expect(response.headers.get('x-test')).toBe('yes');
    expect(await response.text()).toBe('<html>bad gateway');
  });

  it('delays, hangs until the client gives up, and disconnects', async () => {
    const server = await start({
      script: [{ text: 'late', delayMs: 120 }, { hang: true }, { disconnect: true }],
    });
    const started = Date.now();
    const late = await readJson(post(server, '/v1/chat/completions', chatBody));
    expect(late.choices[0].message.content).toBe('late');
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    const hung = fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(chatBody),
      signal: AbortSignal.timeout(100),
    });
    await expect(hung).rejects.toThrow(/abort|timeout/i);
    await expect(post(server, '/v1/chat/completions', chatBody)).rejects.toThrow(/fetch failed/);
    expect(server.requests).toHaveLength(3);
  });

  it('cuts streams part-way with the provider error event, or by dropping the connection', async () => {
    const cut = (afterEvents: number, message?: string) => ({
      text: 'An answer that will not finish.',
      cutStream: { afterEvents, ...(message === undefined ? {} : { error: { status: 529, message } }) },
    });
    const server = await start({ script: [cut(3, 'Overloaded'), cut(2, 'Busy'), cut(4, 'Later'), cut(2)] });
    const stream = async (path: string, body: object) =>
      readSse(await post(server, path, { ...body, stream: true }));

    const anthropic = await stream('/v1/messages', anthropicBody);
    expect(anthropic.map((event) => event.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'error',
    ]);
    expect(JSON.parse(anthropic[3]!.data)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
      request_id: 'req_scripted0000',
    });
    const chat = sseJson(await stream('/v1/chat/completions', chatBody));
    expect(chat).toHaveLength(3);
    expect(chat[2]).toEqual({ error: { message: 'Busy', type: 'server_error', param: null, code: null } });
    const responses = await stream('/v1/responses', { model: 'gpt-test', input: 'Hi' });
    expect(responses.at(-1)?.event).toBe('error');
    expect(JSON.parse(responses.at(-1)!.data)).toEqual({
      type: 'error',
      code: null,
      message: 'Later',
      param: null,
      sequence_number: 4,
    });
    await expect(
      post(server, '/v1/chat/completions', { ...chatBody, stream: true }).then((r) => r.text()),
    ).rejects.toThrow(/terminated/);
    // The server learns of the closed connection an event-loop turn after the client does.
    for (let wait = 0; wait < 50 && server.requests[3]?.abandoned !== true; wait += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(server.requests.map((request) => request.abandoned === true)).toEqual([false, false, false, true]);
  });

  it('answers 422 when the queue is exhausted, and accepts more replies', async () => {
    const server = await start({ script: [] });
    const exhausted = await post(server, '/v1/chat/completions', chatBody);
    expect(exhausted.status).toBe(422);
    expect((await readJson(exhausted)).error.message).toContain('script exhausted at request #0');
    server.enqueue({ text: 'more' });
    expect(server.remaining()).toBe(1);
    const answer = await readJson(post(server, '/v1/chat/completions', chatBody));
    expect(answer.choices[0].message.content).toBe('more');
    expect(server.remaining()).toBe(0);
  });

  it('refuses unknown routes, bad JSON and wrong API keys', async () => {
    const server = await start({ script: [{ text: 'never' }], apiKey: 'sk-right' });
    expect((await fetch(`${server.url}/v2/nothing`)).status).toBe(404);
    const unauthorized = await post(server, '/v1/messages', anthropicBody, { 'x-api-key': 'sk-wrong' });
    expect(unauthorized.status).toBe(401);
    expect((await readJson(unauthorized)).error.type).toBe('authentication_error');
    const badJson = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-right' },
      body: '{not json',
    });
    expect(badJson.status).toBe(400);
    expect(server.remaining()).toBe(1);
    expect(server.requests.map((request) => request.body)).toEqual([undefined, anthropicBody, '{not json']);
  });
});

describe('continuing a response (previous_response_id)', () => {
  const call = { toolCalls: [{ name: 'read_file', arguments: { path: 'a.ts' } }] };

  it('continues a stored answer whose calls the new input answers', async () => {
    const server = await start({ script: [call, { text: 'done' }] });
    const first = await readJson(post(server, '/v1/responses', { model: 'm', input: 'read a.ts' }));
    const callId = first.output[0].call_id;
    const input = [{ type: 'function_call_output', call_id: callId, output: 'x' }];
    const second = await readJson(post(server, '/v1/responses', { previous_response_id: first.id, input }));
    expect(second.output[0].content[0].text).toBe('done');
  });

  it('refuses an unknown or unstored response, a call left unanswered and an output without its call', async () => {
    const server = await start({ script: [call, call] });
    const unstored = await readJson(post(server, '/v1/responses', { input: 'read', store: false }));
    const stored = await readJson(post(server, '/v1/responses', { input: 'read' }));
    const refusals = [
      { previous_response_id: unstored.id, input: 'go on' },
      { previous_response_id: 'resp_never', input: 'go on' },
      { previous_response_id: stored.id, input: 'go on' },
      {
        previous_response_id: stored.id,
        input: [
          { type: 'function_call_output', call_id: stored.output[0].call_id, output: 'x' },
          { type: 'function_call_output', call_id: 'call_other', output: 'y' },
        ],
      },
    ];
    const errors = [];
    for (const body of refusals) {
      const response = await post(server, '/v1/responses', body);
      expect(response.status).toBe(400);
      errors.push((await readJson(response)).error.message);
    }
    expect(errors).toEqual([
      `Previous response with id '${unstored.id}' not found.`,
      "Previous response with id 'resp_never' not found.",
      `No tool output found for function call ${stored.output[0].call_id}.`,
      'No tool call found for function call output with call_id call_other.',
    ]);
    expect(server.remaining()).toBe(0);
  });
});

describe('thinking blocks on Messages', () => {
  const thinkingCall = {
    thinking: 'Read a.ts first.',
    toolCalls: [{ name: 'read_file', arguments: { path: 'a.ts' } }],
  };
  type Block = { type: string; [field: string]: unknown };

  /**
   * The model's answer (its thinking, its call), and how to go on after it: the call's result,
   * after the assistant message given.
   */
  async function answered(server: Awaited<ReturnType<typeof start>>, thinking: object) {
    const opening = [{ role: 'user', content: 'read a.ts' }];
    const body = { ...anthropicBody, thinking, messages: opening };
    const [given, call] = (await readJson(post(server, '/v1/messages', body))).content as Block[];
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: call!.id, content: 'x' }] };
    const goOn = (content: Block[]) =>
      post(server, '/v1/messages', {
        ...body,
        messages: [...opening, { role: 'assistant', content }, result],
      });
    return { given: given!, call: call!, goOn };
  }

  it('takes thinking back as it gave it, and refuses it changed, out of place or left out', async () => {
    const server = await start({ script: [thinkingCall, { text: 'done' }] });
    const { given, call, goOn } = await answered(server, { type: 'enabled', budget_tokens: 1024 });
    expect(given).toMatchObject({ type: 'thinking', thinking: 'Read a.ts first.' });
    const refusals = [[{ ...given, thinking: 'Read b.ts first.' }, call], [call, given], [given], [call]];
    const errors = [];
    for (const content of refusals) {
      const response = await goOn(content);
      expect(response.status).toBe(400);
      errors.push((await readJson(response)).error.message);
    }
    expect(errors).toEqual([
      'messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.',
      'messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found tool_use.',
      'messages.1: The final block in an assistant message cannot be `thinking`.',
      expect.stringMatching(
        /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`\. When `thinking` is enabled, a final `assistant` message must start with a thinking block/,
      ),
    ]);
    expect((await readJson(goOn([given, call]))).content[0].text).toBe('done');
  });

  it('refuses thinking changed in an earlier assistant message as an invalid signature', async () => {
    const server = await start({ script: [thinkingCall, { text: 'done' }] });
    const { given, call } = await answered(server, { type: 'enabled', budget_tokens: 1024 });
    const response = await post(server, '/v1/messages', {
      ...anthropicBody,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [
        { role: 'user', content: 'read a.ts' },
        { role: 'assistant', content: [{ ...given, thinking: 'Read b.ts first.' }, call] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'x' }] },
        { role: 'assistant', content: 'Read.' },
        { role: 'user', content: 'and now?' },
      ],
    });
    expect(response.status).toBe(400);
    expect((await readJson(response)).error.message).toBe(
      'messages.1.content.0: Invalid `signature` in `thinking` block',
    );
  });

  it('for a model that binds thinking, refuses a block behind a changed prefix unless asked to drop it', async () => {
    const server = await start({ script: [thinkingCall, { text: 'done' }, { text: 'done' }] });
    const system = [{ type: 'text', text: 'You read files.', cache_control: { type: 'ephemeral' } }];
    const opening = [{ role: 'user', content: 'read a.ts' }];
    const body = { ...anthropicBody, model: 'claude-fable-5-1', system, messages: opening };
    const given = (await readJson(post(server, '/v1/messages', body))).content as Block[];
    const call = given.find((block) => block.type === 'tool_use')!;
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'x' }] };
    const goOn = (changes: object, headers: Record<string, string> = {}) =>
      post(
        server,
        '/v1/messages',
        { ...body, messages: [...opening, { role: 'assistant', content: given }, result], ...changes },
        headers,
      );
    // The same prefix, its cache breakpoint moved: the block stands.
    expect((await goOn({ system: [{ type: 'text', text: 'You read files.' }] })).status).toBe(200);
    expect(server.requests.at(-1)!.thinkingDropped).toBeUndefined();
    const changed = { system: [{ type: 'text', text: 'You read files, briefly.' }] };
    const bound = await goOn(changed);
    expect(bound.status).toBe(400);
    expect((await readJson(bound)).error.message).toBe(
      'messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".',
    );
    const dropping = {
      ...changed,
      thinking: { type: 'adaptive', block_binding: { prefix_mismatch_behavior: 'drop_block' } },
    };
    const unannounced = await goOn(dropping);
    expect((await readJson(unannounced)).error.message).toBe(
      'thinking.adaptive.block_binding: Extra inputs are not permitted',
    );
    expect((await goOn(dropping, { 'anthropic-beta': `x-beta,${THINKING_BINDING_BETA}` })).status).toBe(200);
    expect(server.requests.at(-1)!.thinkingDropped).toEqual([given[0]!.signature]);
    expect(server.remaining()).toBe(0);
  });

  it("refuses a Claude model's thinking without its signature, or redacted thinking without its data", async () => {
    const server = await start({ script: [{ text: 'done' }] });
    const withAnswer = (content: Block[], model = anthropicBody.model) =>
      post(server, '/v1/messages', {
        ...anthropicBody,
        model,
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content },
          { role: 'user', content: 'again' },
        ],
      });
    const text = { type: 'text', text: 'Hello.' };
    const unsigned = await withAnswer([{ type: 'thinking', thinking: 'greet' }, text]);
    expect(unsigned.status).toBe(400);
    expect((await readJson(unsigned)).error.message).toBe(
      'messages.1.content.0.thinking.signature: Field required',
    );
    const dataless = await withAnswer([{ type: 'redacted_thinking' }, text]);
    expect((await readJson(dataless)).error.message).toBe(
      'messages.1.content.0.redacted_thinking.data: Field required',
    );
    // A compatible provider's model takes unsigned thinking.
    expect(
      (await withAnswer([{ type: 'thinking', thinking: 'greet' }, text], 'deepseek-v4-pro')).status,
    ).toBe(200);
  });

  it('on a platform without the binding controls, refuses their beta and checks no prefix', async () => {
    const server = await start({ thinkingBinding: false, script: [thinkingCall, { text: 'done' }] });
    const opening = [{ role: 'user', content: 'read a.ts' }];
    const body = { ...anthropicBody, model: 'claude-fable-5-1', messages: opening };
    const given = (await readJson(post(server, '/v1/messages', body))).content as Block[];
    const call = given.find((block) => block.type === 'tool_use')!;
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'x' }] };
    const changed = {
      ...body,
      system: 'You read files, briefly.',
      messages: [...opening, { role: 'assistant', content: given }, result],
    };
    const announced = await post(server, '/v1/messages', changed, {
      'anthropic-beta': THINKING_BINDING_BETA,
    });
    expect(announced.status).toBe(400);
    expect((await readJson(announced)).error.message).toBe('invalid beta flag');
    // The prefix changed, and the block stands.
    expect((await post(server, '/v1/messages', changed)).status).toBe(200);
    expect(server.requests.at(-1)!.thinkingDropped).toBeUndefined();
  });

  it('leaves signatures it never issued unchecked, and a call without thinking when thinking is adaptive', async () => {
    const server = await start({ script: [thinkingCall, { text: 'done' }, { text: 'done' }] });
    const { call, goOn } = await answered(server, { type: 'adaptive' });
    const foreign = { type: 'thinking', thinking: 'anything', signature: 'c2lnLTE=' };
    expect((await goOn([foreign, call])).status).toBe(200);
    expect((await goOn([call])).status).toBe(200);
  });
});

describe('script and request log', () => {
  it('calls a script function with each request and records path, headers and body', async () => {
    const server = await start({
      script: (request) => ({
        text: `#${request.index} ${request.path} ${(request.body as { model: string }).model}`,
      }),
    });
    await post(server, '/v1/chat/completions', chatBody, { authorization: 'Bearer sk-a' });
    const second = await readJson(post(server, '/v1/messages', anthropicBody, { 'x-api-key': 'sk-b' }));
    expect(second.content[0].text).toBe('#1 /v1/messages claude-test');
    expect(server.requests.map((request) => [request.index, request.method, request.path])).toEqual([
      [0, 'POST', '/v1/chat/completions'],
      [1, 'POST', '/v1/messages'],
    ]);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-a');
    expect(server.requests[1]?.headers['x-api-key']).toBe('sk-b');
    expect(server.requests[1]?.body).toEqual(anthropicBody);
    expect(server.requests[1]?.rawBody).toBe(JSON.stringify(anthropicBody));
  });

  it('lists models in the format the caller speaks', async () => {
    const server = await start({ script: [], models: ['m-1', 'm-2'] });
    const openai = await readJson(fetch(`${server.url}/v1/models`));
    expect(openai).toMatchObject({ object: 'list', data: [{ id: 'm-1', object: 'model' }, { id: 'm-2' }] });
    const anthropic = await readJson(
      fetch(`${server.url}/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } }),
    );
    expect(anthropic).toMatchObject({ data: [{ type: 'model', id: 'm-1' }, { id: 'm-2' }], has_more: false });
  });

  it('reports script failures as a 500 with the reason', async () => {
    const server = await start({ script: [{ toolCalls: [{ name: 'bash', arguments: 'not json' }] }] });
    const response = await post(server, '/v1/messages', anthropicBody);
    expect(response.status).toBe(500);
    expect((await readJson(response)).error.message).toContain('arguments of tool call "bash" are not JSON');
  });
});

describe('createEchoScript', () => {
  it('echoes the latest user text on every path and content shape', async () => {
    const server = await start({ script: createEchoScript() });
    const chat = await readJson(
      post(server, '/v1/chat/completions', {
        model: 'm',
        messages: [
          { role: 'user', content: 'first' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: [{ type: 'text', text: 'second' }] },
        ],
      }),
    );
    expect(chat.choices[0].message.content).toBe('echo: second');
    const responses = await readJson(
      post(server, '/v1/responses', {
        model: 'm',
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'from responses' }] }],
      }),
    );
    expect(responses.output[0].content[0].text).toBe('echo: from responses');
    const messages = await readJson(
      post(server, '/v1/messages', {
        ...anthropicBody,
        messages: [
          { role: 'user', content: 'question' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'ls', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a.ts' }] },
        ],
      }),
    );
    expect(messages.content[0].text).toBe('echo: question');
  });
});
