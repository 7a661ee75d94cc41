import { afterEach, describe, expect, it } from 'vitest';
import { parseSse } from '../testing/read-sse.js';
import { estimateInputTokens } from '../testing/scripted-reply.js';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { authHeaders, conversationBody, ROUTE_PATHS, type WireRoute } from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { until } from './testing/until.js';

const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];
const REPLY = 'Streaming through the proxy, one small delta after another, until the end.';
let fixture: ProxyFixture | undefined;
let served: ServedProxy | undefined;
afterEach(async () => {
  await served?.close();
  await fixture?.close();
  served = undefined;
  fixture = undefined;
});

/** The text deltas of a stream, whatever the provider's event shape. */
function streamedText(route: WireRoute, events: ReturnType<typeof parseSse>): string {
  const payloads = events.filter((event) => event.data !== '[DONE]').map((event) => JSON.parse(event.data));
  if (route === 'chat') return payloads.map((payload) => payload.choices?.[0]?.delta?.content ?? '').join('');
  if (route === 'responses') {
    return payloads
      .filter((payload) => payload.type === 'response.output_text.delta')
      .map((payload) => payload.delta)
      .join('');
  }
  return payloads
    .filter((payload) => payload.delta?.type === 'text_delta')
    .map((payload) => payload.delta.text)
    .join('');
}

describe('streaming through node:http', () => {
  it.each(ROUTES)(
    '%s: SSE chunks reach the client one by one, before the stream ends, with usage counted',
    async (route) => {
      fixture = await startProxyFixture({
        script: () => ({ text: REPLY }),
        chunkDelayMs: 8,
        streamChunkChars: 6,
        cachedInputTokens: 5,
      });
      served = await serveProxy(fixture.proxy, { port: 0 });
      const body = {
        ...conversationBody(route, { turns: 8, stream: true }),
        ...(route === 'chat' ? { stream_options: { include_usage: true } } : {}),
      };
      const started = Date.now();
      const response = await fetch(`${served.url}${ROUTE_PATHS[route]}`, {
        method: 'POST',
        headers: authHeaders(route, 'sk-stream'),
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      expect(response.headers.get('x-selfgc-commit')).toBeTruthy();
      expect(Number(response.headers.get('x-selfgc-tokens-after'))).toBeLessThan(
        Number(response.headers.get('x-selfgc-tokens-before')),
      );

      const arrivals: number[] = [];
      const decoder = new TextDecoder();
      let text = '';
      for await (const chunk of response.body!) {
        arrivals.push(Date.now() - started);
        text += decoder.decode(chunk, { stream: true });
      }
      // Buffering would deliver everything at once at the end; a pass-through spreads it out.
      expect(arrivals.length).toBeGreaterThan(10);
      expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThan(60);
      expect(streamedText(route, parseSse(text))).toBe(REPLY);

      await until(() => fixture!.logs.length === 1);
      const sent = fixture.upstream.requests[0]!.body;
      const samples = await fixture.metrics();
      expect(sampleSum(samples, 'selfgc_proxy_input_tokens_total', { arm: 'governed' })).toBe(
        estimateInputTokens(sent),
      );
      expect(sampleSum(samples, 'selfgc_proxy_cached_input_tokens_total', { arm: 'governed' })).toBe(5);
      expect(fixture.logs[0]).toMatchObject({ route, stream: true, status: 200, cachedTokens: 5 });
      expect(fixture.logs[0]).not.toHaveProperty('outcome');
    },
  );

  it('a client that disconnects mid-stream cancels the upstream stream', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: REPLY.repeat(20) }), chunkDelayMs: 20 });
    served = await serveProxy(fixture.proxy, { port: 0 });
    const client = new AbortController();
    const response = await fetch(`${served.url}${ROUTE_PATHS.chat}`, {
      method: 'POST',
      headers: authHeaders('chat', 'sk-gone'),
      body: JSON.stringify(conversationBody('chat', { turns: 2, stream: true })),
      signal: client.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    client.abort();
    await until(() => fixture!.logs.length === 1);
    expect(fixture.logs[0]).toMatchObject({ outcome: 'cancelled', status: 200 });
    // The whole answer would take ≥ 190 deltas × 20 ms; the request ended long before.
    expect(fixture.logs[0]!.latencyMs).toBeLessThan(1500);
  });
});
