import { describe, expect, it } from 'vitest';
import { readSse, sseJson } from './read-sse.js';
import { estimateInputTokens } from './scripted-reply.js';
import {
  anthropicBody,
  chatBody,
  post,
  readJson,
  useScriptedUpstream,
  type Wire,
} from './upstream-test-kit.js';

const start = useScriptedUpstream();

describe('POST /v1/chat/completions', () => {
  it('answers a chat.completion with estimated usage and configured cached tokens', async () => {
    const server = await start({ script: [{ text: 'Hello, heap.' }], cachedInputTokens: 3 });
    const response = await post(server, '/v1/chat/completions', chatBody);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('req_scripted0000');
    const body = await readJson(response);
    expect(body).toMatchObject({
      id: 'chatcmpl-scripted0000',
      object: 'chat.completion',
      model: 'gpt-test',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello, heap.' }, finish_reason: 'stop' }],
    });
    const promptTokens = estimateInputTokens(chatBody);
    expect(promptTokens).toBeGreaterThan(0);
    expect(body.usage).toMatchObject({
      prompt_tokens: promptTokens,
      completion_tokens: 3,
      total_tokens: promptTokens + 3,
      prompt_tokens_details: { cached_tokens: 3 },
    });
  });

  it('renders tool calls and json answers', async () => {
    const server = await start({
      script: [
        { toolCalls: [{ name: 'read_file', arguments: { path: 'src/a.ts' } }] },
        { json: { ops: [] } },
      ],
    });
    const tools = await readJson(post(server, '/v1/chat/completions', chatBody));
    expect(tools.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        content: null,
        tool_calls: [
          {
            id: 'call_scripted0000_0',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path":"src/a.ts"}' },
          },
        ],
      },
    });
    const json = await readJson(post(server, '/v1/chat/completions', chatBody));
    expect(json.choices[0].message.content).toBe('{"ops":[]}');
  });

  it('streams chunks, a usage chunk when asked, and data: [DONE]', async () => {
    const text = 'Streaming é and 🧠 through fragmented frames.';
    const server = await start({
      script: [{ text, toolCalls: [{ id: 'call_1', name: 'bash', arguments: '{"cmd":"ls -la"}' }] }],
      streamChunkChars: 5,
    });
    const response = await post(server, '/v1/chat/completions', {
      ...chatBody,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events = await readSse(response);
    expect(events.every((item) => item.event === undefined)).toBe(true);
    expect(events.at(-1)?.data).toBe('[DONE]');
    const chunks = sseJson(events) as Wire[];
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice: Wire) => choice.delta));
    expect(deltas[0]).toMatchObject({ role: 'assistant', content: '' });
    expect(deltas.map((delta) => delta.content ?? '').join('')).toBe(text);
    const argumentText = deltas
      .flatMap((delta) => delta.tool_calls ?? [])
      .map((call) => call.function.arguments);
    expect(argumentText.join('')).toBe('{"cmd":"ls -la"}');
    expect(deltas.find((delta) => delta.tool_calls)?.tool_calls[0]).toMatchObject({ index: 0, id: 'call_1' });
    const finish = chunks.flatMap((chunk) => chunk.choices).find((choice) => choice.finish_reason !== null);
    expect(finish?.finish_reason).toBe('tool_calls');
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage.prompt_tokens).toBe(estimateInputTokens(server.requests[0]?.body));
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
  });

  it('omits usage from the stream unless include_usage is set', async () => {
    const server = await start({ script: [{ text: 'no usage' }] });
    const chunks = sseJson(
      await readSse(await post(server, '/v1/chat/completions', { ...chatBody, stream: true })),
    );
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.every((chunk) => !('usage' in chunk))).toBe(true);
  });
});

describe('POST /v1/responses', () => {
  const responsesBody = { model: 'gpt-test', input: 'List the heap.', instructions: 'Be brief.' };

  it('answers a response object with output items and usage', async () => {
    const server = await start({
      script: [{ text: 'Done.', toolCalls: [{ name: 'fold', arguments: '{"id":"function:bash:3"}' }] }],
      cachedInputTokens: () => 2,
    });
    const body = await readJson(post(server, '/v1/responses', responsesBody));
    expect(body).toMatchObject({
      id: 'resp_scripted0000',
      object: 'response',
      status: 'completed',
      instructions: 'Be brief.',
      output: [
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] },
        {
          type: 'function_call',
          call_id: 'call_scripted0000_0',
          name: 'fold',
          arguments: '{"id":"function:bash:3"}',
        },
      ],
      usage: { input_tokens: estimateInputTokens(responsesBody), input_tokens_details: { cached_tokens: 2 } },
    });
  });

  it('streams named, sequence-numbered events ending in response.completed', async () => {
    const server = await start({ script: [{ text: 'Folded the build log.' }], streamChunkChars: 4 });
    const events = await readSse(await post(server, '/v1/responses', { ...responsesBody, stream: true }));
    const payloads = sseJson(events);
    expect(events.map((item) => item.event)).toEqual(payloads.map((payload) => payload.type));
    expect(payloads.map((payload) => payload.sequence_number)).toEqual(payloads.map((_, index) => index));
    const types = payloads.map((payload) => payload.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.some((item) => item.data === '[DONE]')).toBe(false);
    const text = payloads
      .filter((payload) => payload.type === 'response.output_text.delta')
      .map((p) => p.delta);
    expect(text.join('')).toBe('Folded the build log.');
    const completed = payloads.at(-1) as { response: { status: string; usage: { output_tokens: number } } };
    expect(completed.response.status).toBe('completed');
    expect(completed.response.usage.output_tokens).toBe(6);
  });

  it('answers a compaction with its one compaction item, whole or streamed', async () => {
    const trigger = { ...responsesBody, input: [{ type: 'compaction_trigger' }] };
    const server = await start({
      script: [{ compaction: 'summary-state' }, { compaction: 'summary-state' }],
    });
    const body = await readJson(post(server, '/v1/responses', trigger));
    expect(body).toMatchObject({
      status: 'completed',
      output: [{ type: 'compaction', id: 'cmp_scripted0000', encrypted_content: 'summary-state' }],
    });
    const payloads = sseJson(
      await readSse(await post(server, '/v1/responses', { ...trigger, stream: true })),
    );
    expect(payloads.map((payload) => payload.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(payloads[3]).toMatchObject({ item: { type: 'compaction', encrypted_content: 'summary-state' } });
  });

  it('marks a truncated answer incomplete', async () => {
    const server = await start({ script: [{ text: 'cut', stopReason: 'length' }] });
    const body = await readJson(post(server, '/v1/responses', responsesBody));
    expect(body).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  });
});

describe('POST /v1/messages', () => {
  it('answers a message with thinking, text and tool_use blocks and cache usage', async () => {
    const server = await start({
      script: [
        {
          thinking: 'The log is consumed.',
          text: 'Folding.',
          toolCalls: [{ name: 'fold', arguments: { id: 'function:bash:3' } }],
          usage: { inputTokens: 100, outputTokens: 7, cachedInputTokens: 60, cacheWriteInputTokens: 30 },
        },
      ],
    });
    const response = await post(server, '/v1/messages', anthropicBody, { 'anthropic-version': '2023-06-01' });
    expect(response.headers.get('request-id')).toBe('req_scripted0000');
    const body = await readJson(response);
    expect(body).toMatchObject({
      id: 'msg_scripted0000',
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      stop_reason: 'tool_use',
      content: [
        { type: 'thinking', thinking: 'The log is consumed.' },
        { type: 'text', text: 'Folding.' },
        { type: 'tool_use', id: 'toolu_scripted0000_0', name: 'fold', input: { id: 'function:bash:3' } },
      ],
      usage: {
        input_tokens: 10,
        cache_read_input_tokens: 60,
        cache_creation_input_tokens: 30,
        output_tokens: 7,
      },
    });
    expect(body.content[0].signature.length).toBeGreaterThan(0);
  });

  it('streams the Messages event sequence with every delta type', async () => {
    const server = await start({
      script: [
        { thinking: 'Think first.', text: 'Hi.', toolCalls: [{ name: 'expand', arguments: { id: 'x:1' } }] },
      ],
      streamChunkChars: 3,
    });
    const events = await readSse(await post(server, '/v1/messages', { ...anthropicBody, stream: true }));
    const payloads = sseJson(events);
    expect(events.map((item) => item.event)).toEqual(payloads.map((payload) => payload.type));
    const order = [...new Set(payloads.map((payload) => payload.type))];
    expect(order).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const deltas = payloads.filter((payload) => payload.type === 'content_block_delta') as Array<{
      index: number;
      delta: Record<string, string>;
    }>;
    const joined = (type: string, field: string) =>
      deltas
        .filter((item) => item.delta.type === type)
        .map((item) => item.delta[field])
        .join('');
    expect(joined('thinking_delta', 'thinking')).toBe('Think first.');
    expect(joined('signature_delta', 'signature').length).toBeGreaterThan(0);
    expect(joined('text_delta', 'text')).toBe('Hi.');
    expect(JSON.parse(joined('input_json_delta', 'partial_json'))).toEqual({ id: 'x:1' });
    const starts = payloads.filter((payload) => payload.type === 'content_block_start');
    expect(starts.map((start) => (start.content_block as { type: string }).type)).toEqual([
      'thinking',
      'text',
      'tool_use',
    ]);
    const messageDelta = payloads.find((payload) => payload.type === 'message_delta');
    expect(messageDelta).toMatchObject({
      delta: { stop_reason: 'tool_use' },
      usage: { cache_read_input_tokens: 0 },
    });
  });

  it('counts tokens without consuming the script', async () => {
    const server = await start({ script: [] });
    const body = await readJson(post(server, '/v1/messages/count_tokens', anthropicBody));
    expect(body).toEqual({ input_tokens: estimateInputTokens(anthropicBody) });
    expect(server.requests[0]?.path).toBe('/v1/messages/count_tokens');
  });
});
