/**
 * Fail open on what the adapters cannot read: a conversation of a shape they do not know goes
 * upstream ungoverned, as the client's own bytes, flagged, counted and logged, never refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseSse } from '../testing/read-sse.js';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { authHeaders, ROUTE_PATHS, type WireRoute } from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';

let fixture: ProxyFixture | undefined;
let served: ServedProxy | undefined;
afterEach(async () => {
  await served?.close();
  await fixture?.close();
  served = undefined;
  fixture = undefined;
});

/**
 * Bodies the provider may well take but the adapters cannot read, in each route's own spacing:
 * a legacy `function` message (Chat), a thinking block with no signature (Messages: a
 * compatible provider's model, as DeepSeek's, takes one; Claude does not), a text part with no
 * text (Responses).
 */
const UNREADABLE: Record<WireRoute, string> = {
  chat: `{"model": "gpt-4o",
  "messages": [{"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "function_call": {"name": "weather", "arguments": "{\\"city\\": \\"Paris\\"}"}},
    {"role": "function", "name": "weather", "content": "18 °C"}]}`,
  messages: `{"model": "deepseek-v4-pro", "max_tokens": 256,
  "messages": [{"role": "user", "content": "hi"},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "greet"}, {"type": "text", "text": "Hello."}]},
    {"role": "user", "content": "again"}]}`,
  responses: `{"model": "gpt-5", "input": [{"role": "user", "content": [{"type": "input_text"}]}]}`,
};

const WHERE: Record<WireRoute, RegExp> = {
  chat: /openai-chat message 2/,
  messages: /anthropic message 1: content\.0/,
  responses: /openai-responses item 0: content\.0/,
};

describe('a conversation the adapters cannot read', () => {
  it.each(['chat', 'messages', 'responses'] as const)(
    '%s: goes upstream as the client sent it, flagged, counted and logged',
    async (route) => {
      fixture = await startProxyFixture({ script: () => ({ text: 'answered upstream' }) });
      const response = await fixture.post(route, UNREADABLE[route]);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-selfgc-governance')).toBe('passthrough');
      expect(response.headers.get('x-selfgc-passthrough')).toBe('unreadable-shape');
      expect(response.headers.get('x-selfgc-tokens-before')).toBeNull();
      expect(JSON.stringify(await response.json())).toContain('answered upstream');
      expect(fixture.upstream.requests[0]?.rawBody).toBe(UNREADABLE[route]);

      const samples = await fixture.metrics();
      const labels = { arm: 'governed', reason: 'unreadable-shape' };
      expect(sampleSum(samples, 'selfgc_proxy_passthrough_total', labels)).toBe(1);
      expect(sampleSum(samples, 'selfgc_proxy_errors_total')).toBe(0);
      expect(sampleSum(samples, 'selfgc_proxy_requests_total', { route, status: '200' })).toBe(1);
      expect(fixture.logs).toHaveLength(1);
      const [entry] = fixture.logs;
      expect(entry).toMatchObject({
        status: 200,
        governance: 'passthrough',
        passthrough: 'unreadable-shape',
      });
      expect(entry?.unreadable).toMatch(WHERE[route]);
      expect(entry?.error).toBeUndefined();
      // The log names where, never what the conversation says.
      for (const said of ['Paris', '18 °C', 'greet', 'Hello.'])
        expect(JSON.stringify(entry)).not.toContain(said);
    },
  );

  it('a body the provider would refuse is still a 400 that never reaches the upstream', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'never' }) });
    const response = await fixture.post(
      'messages',
      '{"model": "claude-sonnet-4-5", "messages": {"role": "user"}}',
    );
    expect(response.status).toBe(400);
    expect(fixture.upstream.requests).toHaveLength(0);
    expect(sampleSum(await fixture.metrics(), 'selfgc_proxy_passthrough_total')).toBe(0);
  });

  it("a Python agent's dumped replies (`tool_calls: null`) are read and governed, not passed through", async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'answered upstream' }) });
    const body = `{"model": "gpt-4o", "messages": [{"role": "user", "content": "List the files."},
    {"content": null, "refusal": null, "role": "assistant", "annotations": [], "audio": null, "function_call": null,
      "tool_calls": [{"id": "call_ls", "function": {"arguments": "{}", "name": "ls"}, "type": "function"}]},
    {"role": "tool", "content": "README.md", "tool_call_id": "call_ls"},
    {"content": "One file.", "refusal": null, "role": "assistant", "annotations": [], "audio": null,
      "function_call": null, "tool_calls": null},
    {"role": "user", "content": "Thanks."}]}`;
    const response = await fixture.post('chat', body);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-governance')).not.toBe('passthrough');
    expect(response.headers.get('x-selfgc-tokens-before')).not.toBeNull();
    const sent = JSON.parse(fixture.upstream.requests[0]?.rawBody ?? '{}');
    expect(sent.messages[3]).toEqual(JSON.parse(body).messages[3]);
    expect(sampleSum(await fixture.metrics(), 'selfgc_proxy_passthrough_total')).toBe(0);
  });

  it('responses: a request with no input (a stored prompt holds it) goes upstream as it came', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'answered upstream' }) });
    const body = '{"model": "gpt-5", "prompt": {"id": "pmpt_123", "variables": {"city": "Paris"}}}';
    const response = await fixture.post('responses', body);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-governance')).toBe('server-state');
    expect(fixture.upstream.requests[0]?.rawBody).toBe(body);
    // Neither is an input the provider takes.
    const refused = await fixture.post('responses', '{"model": "gpt-5", "input": {"role": "user"}}');
    expect(refused.status).toBe(400);
    expect(fixture.upstream.requests).toHaveLength(1);
  });

  it.each([
    ['responses', '{"prompt": {"id": "pmpt_123", "version": "2"}, "input": "Weather in Paris?"}'],
    ['chat', '{"messages": [{"role": "user", "content": "Weather in Paris?"}]}'],
    ['messages', '{"max_tokens": 64, "messages": [{"role": "user", "content": "Weather in Paris?"}]}'],
  ] as const)(
    '%s: a request that names no model goes upstream as it came, for the provider to take or refuse',
    async (route, body) => {
      // A Responses stored prompt names the model; a server of one model (llama.cpp, vLLM) takes none.
      fixture = await startProxyFixture({ script: () => ({ text: 'answered upstream' }) });
      const response = await fixture.post(route, body);
      expect(response.status).toBe(200);
      expect(fixture.upstream.requests[0]?.rawBody).toBe(body);
      expect(fixture.logs[0]?.error).toBeUndefined();
      // Ungoverned, and saying why, as every request governance leaves as it came.
      expect(response.headers.get('x-selfgc-governance')).toBe('no-model');
      expect(fixture.logs[0]?.governance).toBe('no-model');
    },
  );

  it('in a governance worker too: the headers, the metric and the log come back with the bytes', async () => {
    fixture = await startProxyFixture({ workers: 1, script: () => ({ text: 'answered upstream' }) });
    const response = await fixture.post('messages', UNREADABLE.messages);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-governance')).toBe('passthrough');
    expect(response.headers.get('x-selfgc-passthrough')).toBe('unreadable-shape');
    expect(fixture.upstream.requests[0]?.rawBody).toBe(UNREADABLE.messages);
    const samples = await fixture.metrics();
    expect(sampleSum(samples, 'selfgc_proxy_passthrough_total', { reason: 'unreadable-shape' })).toBe(1);
    expect(fixture.logs[0]).toMatchObject({ governance: 'passthrough', passthrough: 'unreadable-shape' });
  });

  it('streams through a proxy served on loopback as well', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'streamed upstream' }), streamChunkChars: 4 });
    served = await serveProxy(fixture.proxy, { port: 0, host: '127.0.0.1' });
    const body = UNREADABLE.chat.replace('"model": "gpt-4o",', '"model": "gpt-4o", "stream": true,');
    const response = await fetch(`${served.url}${ROUTE_PATHS.chat}`, {
      method: 'POST',
      headers: authHeaders('chat', 'sk-stream'),
      body,
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    expect(response.headers.get('x-selfgc-governance')).toBe('passthrough');
    expect(response.headers.get('x-selfgc-passthrough')).toBe('unreadable-shape');
    const deltas = parseSse(await response.text())
      .filter((event) => event.data !== '[DONE]')
      .map((event) => JSON.parse(event.data).choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(deltas).toBe('streamed upstream');
    expect(fixture.upstream.requests[0]?.rawBody).toBe(body);
    const samples = await fixture.metrics();
    expect(sampleSum(samples, 'selfgc_proxy_passthrough_total', { reason: 'unreadable-shape' })).toBe(1);
  });
});
