import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { authHeaders, conversationBody, ROUTE_PATHS } from './testing/agent-conversation.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';

let fixture: ProxyFixture | undefined;
let served: ServedProxy | undefined;
afterEach(async () => {
  await served?.close();
  await fixture?.close();
  served = undefined;
  fixture = undefined;
});

/** POST a body in several chunked writes (no content-length), as a streaming client does. */
function postChunked(
  url: string,
  headers: Record<string, string>,
  chunks: ReadonlyArray<string | Uint8Array>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    for (const chunk of chunks) request.write(chunk);
    request.end();
  });
}

describe('serveProxy', () => {
  it('streams a chunked request body through a pass-through route byte for byte', async () => {
    fixture = await startProxyFixture();
    served = await serveProxy(fixture.proxy, { port: 0 });
    const text = 'é€😀'.repeat(40_000);
    const body = JSON.stringify({ model: 'claude-x', messages: [{ role: 'user', content: text }] });
    // Byte cuts that fall inside UTF-8 sequences: the proxy must pass bytes, not re-encoded text.
    const bytes = Buffer.from(body, 'utf8');
    const pieces = [bytes.subarray(0, 7), bytes.subarray(7, 100_001), bytes.subarray(100_001)];
    const answer = await postChunked(
      `${served.url}/v1/messages/count_tokens`,
      { 'x-api-key': 'sk-a', 'content-type': 'application/json' },
      pieces,
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toHaveProperty('input_tokens');
    expect(fixture.upstream.requests[0]?.rawBody === body).toBe(true);
    expect(fixture.upstream.requests[0]?.headers['transfer-encoding']).toBe('chunked');
  });

  it('governs over HTTP and refuses an over-limit chunked body with a 413 in the provider format', async () => {
    fixture = await startProxyFixture({
      script: () => ({ text: 'ok' }),
      proxy: { bodyLimitBytes: 64 * 1024 },
    });
    served = await serveProxy(fixture.proxy, { port: 0 });
    const governed = await fetch(`${served.url}${ROUTE_PATHS.chat}`, {
      method: 'POST',
      headers: authHeaders('chat', 'sk-http'),
      body: JSON.stringify(conversationBody('chat', { turns: 8 })),
    });
    expect(governed.status).toBe(200);
    expect(governed.headers.get('x-selfgc-commit')).toBeTruthy();
    expect(await governed.json()).toMatchObject({ choices: [{ message: { content: 'ok' } }] });

    const big = JSON.stringify(conversationBody('messages', { turns: 40, lines: 60 }));
    const refused = await postChunked(
      `${served.url}${ROUTE_PATHS.messages}`,
      authHeaders('messages', 'sk-http'),
      [big.slice(0, 1000), big.slice(1000)],
    );
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body)).toEqual({
      type: 'error',
      error: {
        type: 'request_too_large',
        message: 'request body is larger than the 65536-byte limit',
        code: 'selfgc_payload_too_large',
      },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(fixture.upstream.requests).toHaveLength(1);
  });

  it('a client that disconnects mid-upload leaves nothing hanging', async () => {
    fixture = await startProxyFixture();
    served = await serveProxy(fixture.proxy, { port: 0 });
    const upload = httpRequest(`${served.url}${ROUTE_PATHS.chat}`, {
      method: 'POST',
      headers: authHeaders('chat', 'sk-gone'),
    });
    upload.on('error', () => undefined);
    upload.write('{"model":"gpt-4o","messages":[');
    await new Promise((resolve) => setTimeout(resolve, 50));
    upload.destroy();
    const started = Date.now();
    while (fixture.logs.length === 0 && Date.now() - started < 3000) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(fixture.logs).toMatchObject([{ status: 499, outcome: 'cancelled', route: 'chat' }]);
    expect(fixture.upstream.requests).toHaveLength(0);
  });

  it('binds only the address it is given and closes cleanly', async () => {
    fixture = await startProxyFixture();
    served = await serveProxy(fixture.proxy, { port: 0, host: '127.0.0.1' });
    expect(served.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${served.url}/healthz`)).status).toBe(200);
    await served.close();
    await expect(fetch(`${served.url}/healthz`)).rejects.toThrow();
    served = undefined;
  });
});
