/**
 * What Codex CLI signed in with ChatGPT sends to the `openai_base_url` it is given (seen from Codex
 * 0.171.0 against a loopback server): a Responses WebSocket handshake first, then bodies in zstd
 * (`content-encoding: zstd`), which the proxy refused as "not valid UTF-8" before it read codings,
 * to `/responses` when the base has no `/v1`, as it must not for its upstream, the ChatGPT
 * backend (`https://chatgpt.com/backend-api/codex/responses`).
 */
import { request as httpRequest } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { authHeaders, conversationBody, ROUTE_PATHS } from './testing/agent-conversation.js';
import { codexRequest } from './testing/client-requests.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { agentBody, expandOf, isRecoveryRound, streamedText } from './testing/recovery-rounds.js';
import { streamGrammarProblems } from './testing/stream-grammar.js';
import { zstdRawFrame } from './testing/zstd-frame.js';
import { EXPAND_TOOL } from './transparent-recovery.js';

const fixtures: ProxyFixture[] = [];
let served: ServedProxy | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
  await Promise.all(fixtures.splice(0).map((fixture) => fixture.close()));
});

async function fixture(options: Parameters<typeof startProxyFixture>[0] = {}): Promise<ProxyFixture> {
  const started = await startProxyFixture({ script: () => ({ text: 'answered upstream' }), ...options });
  fixtures.push(started);
  return started;
}

/** A Codex turn over the 2,000-token window: governance folds it. */
const CODEX_BODY = JSON.stringify({
  ...conversationBody('responses', { turns: 12, stream: true, model: 'gpt-5-codex' }),
  store: false,
  include: ['reasoning.encrypted_content'],
  prompt_cache_key: 'thread-zstd',
});
const CODEX_HEADERS = codexRequest({ thread: 'thread-zstd' }).headers;

function post(target: ProxyFixture, body: Uint8Array | string, coding?: string): Promise<Response> {
  const headers = { ...CODEX_HEADERS, ...(coding === undefined ? {} : { 'content-encoding': coding }) };
  return target.fetch(ROUTE_PATHS.responses, { method: 'POST', headers, body });
}

const CODINGS: ReadonlyArray<[string, (bytes: Uint8Array) => Uint8Array]> = [
  ['zstd', zstdRawFrame],
  ['gzip', (bytes) => gzipSync(bytes)],
  ['deflate', (bytes) => deflateSync(bytes)],
  ['br', (bytes) => brotliCompressSync(bytes)],
  ['gzip, zstd', (bytes) => zstdRawFrame(gzipSync(bytes))],
];

describe('a compressed request body', () => {
  it.each(CODINGS)(
    '%s: governed as the same body sent plain, and sent upstream decoded',
    async (coding, compress) => {
      const plain = await fixture();
      const plainAnswer = await post(plain, CODEX_BODY);
      expect(plainAnswer.status).toBe(200);
      await plainAnswer.text();
      const compressed = await fixture();
      const answer = await post(compressed, compress(new TextEncoder().encode(CODEX_BODY)), coding);
      expect(answer.status).toBe(200);
      expect(await answer.text()).toContain('answered upstream');

      // Governed, not passed through: the window is too small for the turn as sent.
      expect(answer.headers.get('x-selfgc-governance')).toBe(plainAnswer.headers.get('x-selfgc-governance'));
      expect(answer.headers.get('x-selfgc-governance')).not.toBe('passthrough');
      expect(Number(answer.headers.get('x-selfgc-tokens-after'))).toBeLessThan(
        Number(answer.headers.get('x-selfgc-tokens-before')),
      );
      const [sent] = compressed.upstream.requests;
      expect(sent?.rawBody).toBe(plain.upstream.requests[0]?.rawBody);
      expect(sent?.headers['content-encoding']).toBeUndefined();
      expect(compressed.logs[0]?.error).toBeUndefined();
    },
  );

  it('zstd through a governance worker thread: the decoded chunks move to the worker', async () => {
    const plain = await fixture({ workers: 1 });
    const plainAnswer = await post(plain, CODEX_BODY);
    await plainAnswer.text();
    const compressed = await fixture({ workers: 1 });
    const answer = await post(compressed, zstdRawFrame(new TextEncoder().encode(CODEX_BODY)), 'zstd');
    expect(answer.status).toBe(200);
    await answer.text();
    expect(answer.headers.get('x-selfgc-governance')).not.toBe('passthrough');
    expect(compressed.upstream.requests[0]?.rawBody).toBe(plain.upstream.requests[0]?.rawBody);
  });

  it('in a coding the proxy does not know: sent upstream as it came, flagged, counted and logged', async () => {
    const proxy = await fixture();
    const answer = await post(proxy, CODEX_BODY, 'x-custom');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-selfgc-governance')).toBe('passthrough');
    expect(answer.headers.get('x-selfgc-passthrough')).toBe('unreadable-encoding');
    expect(await answer.text()).toContain('answered upstream');
    const [sent] = proxy.upstream.requests;
    expect(sent?.rawBody).toBe(CODEX_BODY);
    expect(sent?.headers['content-encoding']).toBe('x-custom');
    const labels = { arm: 'governed', reason: 'unreadable-encoding' };
    expect(sampleSum(await proxy.metrics(), 'selfgc_proxy_passthrough_total', labels)).toBe(1);
    expect(proxy.logs[0]).toMatchObject({
      passthrough: 'unreadable-encoding',
      unreadable: 'content-encoding: x-custom',
    });
  });

  it('that is not what its coding says: a 400 naming the coding, and nothing upstream', async () => {
    const proxy = await fixture();
    const answer = await post(proxy, CODEX_BODY, 'zstd');
    expect(answer.status).toBe(400);
    const body = (await answer.json()) as { error: { message: string; code: string } };
    expect(body.error).toMatchObject({
      message: 'request body is not valid zstd data',
      code: 'selfgc_bad_input',
    });
    expect(proxy.upstream.requests).toHaveLength(0);
  });

  it('that inflates past the body limit: a 413, and nothing upstream', async () => {
    const proxy = await fixture({ proxy: { bodyLimitBytes: 1 << 20 } });
    const answer = await post(proxy, gzipSync(new Uint8Array(16 << 20)), 'gzip');
    expect(answer.status).toBe(413);
    expect(proxy.upstream.requests).toHaveLength(0);
  });
});

/** A WebSocket handshake over real HTTP: the status line the client reads. */
function handshake(url: string, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${url}${path}`, {
      headers: {
        ...headers,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    });
    outgoing.on('upgrade', (_incoming, socket) => {
      socket.destroy();
      reject(new Error('the proxy accepted a WebSocket'));
    });
    outgoing.on('response', (incoming) => {
      incoming.resume();
      resolve(incoming.statusCode ?? 0);
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

describe('a base URL without /v1', () => {
  it('POST /responses is governed, and goes to the upstream base plus /responses', async () => {
    const proxy = await fixture();
    const headers = { ...CODEX_HEADERS, 'content-encoding': 'zstd' };
    const body = zstdRawFrame(new TextEncoder().encode(CODEX_BODY));
    const answer = await proxy.fetch('/responses', { method: 'POST', headers, body });
    expect(answer.status).toBe(200);
    await answer.text();
    expect(answer.headers.get('x-selfgc-governance')).not.toBe('passthrough');
    expect(answer.headers.get('x-selfgc-session')).toMatch(/^codex:thread-zstd/);
    expect(proxy.upstream.requests.map((sent) => sent.path)).toEqual(['/responses']);
    expect(proxy.logs[0]).toMatchObject({ path: '/responses', route: 'responses', status: 200 });
  });

  it('POST /chat/completions is governed too', async () => {
    const proxy = await fixture();
    const body = JSON.stringify(conversationBody('chat', { turns: 12 }));
    const answer = await proxy.fetch('/chat/completions', {
      method: 'POST',
      headers: authHeaders('chat', 'sk-test-key'),
      body,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-selfgc-governance')).not.toBe('passthrough');
    expect(proxy.upstream.requests.map((sent) => sent.path)).toEqual(['/chat/completions']);
  });
});

describe('a WebSocket handshake', () => {
  it('is refused with 426 in the provider error format, so Codex uses HTTP at once', async () => {
    const proxy = await fixture();
    const answer = await proxy.fetch(ROUTE_PATHS.responses, {
      headers: { ...CODEX_HEADERS, connection: 'Upgrade', upgrade: 'websocket' },
    });
    expect(answer.status).toBe(426);
    expect(await answer.json()).toMatchObject({
      error: { type: 'invalid_request_error', code: 'selfgc_upgrade_required' },
    });
    const anthropic = await proxy.fetch(ROUTE_PATHS.messages, {
      headers: { ...authHeaders('messages', 'sk-ant'), upgrade: 'WebSocket/13' },
    });
    expect(anthropic.status).toBe(426);
    expect(await anthropic.json()).toMatchObject({
      type: 'error',
      error: { code: 'selfgc_upgrade_required' },
    });
    expect(proxy.upstream.requests).toHaveLength(0);
    // A request answered as designed, not an error: every such Codex session sends one.
    expect(proxy.logs.map((entry) => [entry.route, entry.status, entry.error])).toEqual([
      ['websocket', 426, undefined],
      ['websocket', 426, undefined],
    ]);
    const samples = await proxy.metrics();
    expect(sampleSum(samples, 'selfgc_proxy_requests_total', { route: 'websocket', status: '426' })).toBe(2);
    expect(sampleSum(samples, 'selfgc_proxy_errors_total')).toBe(0);
  });

  it('over real HTTP gets the 426 as an answer, never an upgrade; the next POST is governed', async () => {
    const proxy = await fixture();
    served = await serveProxy(proxy.proxy, { port: 0 });
    expect(await handshake(served.url, ROUTE_PATHS.responses, CODEX_HEADERS)).toBe(426);
    const answer = await fetch(`${served.url}${ROUTE_PATHS.responses}`, {
      method: 'POST',
      headers: { ...CODEX_HEADERS, 'content-encoding': 'zstd' },
      body: zstdRawFrame(new TextEncoder().encode(CODEX_BODY)),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-selfgc-governance')).not.toBe('passthrough');
    await answer.text();
  });

  it('an h2c upgrade is not a WebSocket: answered as a plain request', async () => {
    const proxy = await fixture();
    const answer = await proxy.fetch(ROUTE_PATHS.responses, {
      method: 'POST',
      headers: { ...CODEX_HEADERS, upgrade: 'h2c' },
      body: CODEX_BODY,
    });
    expect(answer.status).toBe(200);
    await answer.text();
  });
});

describe('transparent recovery against the ChatGPT backend', () => {
  // Its `response.completed` holds no `output`: each item comes only in its own events.
  it("answers the proxy's call of a round whose closing response lists no items", async () => {
    const proxy = await fixture({
      window: 4_000,
      emptyClosingOutput: true,
      script: (request) =>
        isRecoveryRound(request)
          ? { text: 'Found it.' }
          : { text: 'Looking. ', toolCalls: expandOf(request) },
    });
    const body = {
      ...agentBody('responses'),
      stream: true,
      store: false,
      include: ['reasoning.encrypted_content'],
    };
    const answer = await proxy.fetch('/responses', {
      method: 'POST',
      headers: CODEX_HEADERS,
      body: JSON.stringify(body),
    });
    const raw = await answer.text();
    expect(proxy.upstream.requests).toHaveLength(2);
    expect(streamedText('responses', raw)).toBe('Looking. Found it.');
    expect(raw).not.toContain(EXPAND_TOOL);
    expect(streamGrammarProblems('responses', raw)).toEqual([]);
  });
});
