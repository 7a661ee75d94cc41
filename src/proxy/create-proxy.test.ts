import { afterEach, describe, expect, it } from 'vitest';
import { conversationBody, type WireRoute } from './testing/agent-conversation.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';

const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];
let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

/**
 * The provider's error shape, whichever it is, with the stable code and the request id; fails
 * when the body is neither.
 */
function errorOf(route: WireRoute, body: unknown): { type: string; message: string; code: string } {
  const requestId = expect.stringMatching(/^req_[0-9a-f]{32}$/);
  if (route === 'messages') {
    expect(body).toEqual({
      type: 'error',
      error: {
        type: expect.any(String),
        message: expect.any(String),
        code: expect.stringMatching(/^selfgc_/),
      },
      request_id: requestId,
    });
    return (body as { error: { type: string; message: string; code: string } }).error;
  }
  expect(body).toEqual({
    error: {
      message: expect.any(String),
      type: expect.any(String),
      param: null,
      code: expect.stringMatching(/^selfgc_/),
    },
    request_id: requestId,
  });
  return (body as { error: { type: string; message: string; code: string } }).error;
}

describe('pass-through routes', () => {
  it('forwards model lists, token counting and unknown routes untouched, to the right upstream dialect', async () => {
    fixture = await startProxyFixture({ models: ['m-1', 'm-2'] });
    const openai = await fixture.fetch('/v1/models', { headers: { authorization: 'Bearer sk-o' } });
    expect(openai.status).toBe(200);
    expect(await openai.json()).toMatchObject({ object: 'list', data: [{ id: 'm-1' }, { id: 'm-2' }] });
    const anthropic = await fixture.fetch('/v1/models?limit=2', {
      headers: { 'x-api-key': 'sk-a', 'anthropic-version': '2023-06-01' },
    });
    expect(await anthropic.json()).toMatchObject({ has_more: false, first_id: 'm-1' });

    const countBody = '{"model":"claude-x",  "messages":[{"role":"user","content":"hi"}]}';
    const counted = await fixture.fetch('/v1/messages/count_tokens', {
      method: 'POST',
      headers: { 'x-api-key': 'sk-a', 'content-type': 'application/json' },
      body: countBody,
    });
    expect(counted.status).toBe(200);
    expect(await counted.json()).toHaveProperty('input_tokens');
    const embeddings = await fixture.fetch('/v1/embeddings', { method: 'POST', body: '{"input":"x"}' });
    expect(embeddings.status).toBe(404);
    expect(await embeddings.json()).toMatchObject({
      error: { message: expect.stringContaining('no route') },
    });

    const [, second, third, fourth] = fixture.upstream.requests;
    expect(second?.path).toBe('/v1/models');
    expect(third?.rawBody).toBe(countBody);
    expect(fourth?.path).toBe('/v1/embeddings');
    expect(fixture.logs.map((entry) => entry.route)).toEqual(Array(4).fill('pass-through'));
  });

  it('reports health, with the store probed', async () => {
    fixture = await startProxyFixture();
    const health = await fixture.fetch('/healthz');
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({
      status: 'ok',
      store: 'ok',
      storeKind: 'memory',
      breaker: 'closed',
      failOpen: true,
    });
  });
});

describe('auth headers', () => {
  it('reach the upstream unchanged on every route and never appear in logs', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'ok' }), governed: true });
    const secret = 'sk-live-very-secret-value';
    const extra = {
      'anthropic-beta': 'prompt-caching-2024-07-31',
      'openai-organization': 'org-secret-org',
      'openai-project': 'proj_secret',
    };
    for (const route of ROUTES) {
      const response = await fixture.post(route, conversationBody(route, { turns: 1 }), {
        apiKey: secret,
        headers: extra,
      });
      expect(response.status).toBe(200);
    }
    const listed = await fixture.fetch('/v1/models', { headers: { authorization: `Bearer ${secret}` } });
    await listed.text();
    const [chat, responses, messages, models] = fixture.upstream.requests;
    for (const request of [chat, responses, models])
      expect(request?.headers.authorization).toBe(`Bearer ${secret}`);
    expect(messages?.headers['x-api-key']).toBe(secret);
    expect(messages?.headers['anthropic-version']).toBe('2023-06-01');
    for (const request of [chat, responses, messages]) {
      expect(request?.headers).toMatchObject(extra);
      expect(Object.keys(request?.headers ?? {}).some((name) => name.startsWith('x-selfgc-'))).toBe(false);
    }
    const logText = JSON.stringify(fixture.logs);
    expect(fixture.logs).toHaveLength(4);
    for (const value of [secret, ...Object.values(extra), 'computeValue', 'careful coding agent']) {
      expect(logText).not.toContain(value);
    }
  });
});

describe('bad input, in the provider error format', () => {
  it.each(ROUTES)(
    '%s: malformed JSON, bodies the provider would refuse and oversized bodies are 4xx and never reach the upstream',
    async (route) => {
      fixture = await startProxyFixture({ proxy: { bodyLimitBytes: 256 * 1024 } });
      // A conversation the adapters cannot read is not among them: it goes upstream ungoverned
      // (see unreadable-shapes.test.ts).
      const cases: Array<[body: string, status: number, mentions: RegExp]> = [
        ['{"model": "x", "messages": [', 400, /invalid JSON/],
        ['[1, 2]', 400, /JSON object/],
        [JSON.stringify({ model: 'gpt-4o', messages: 'hello', input: 7 }), 400, /messages|input/],
        [JSON.stringify({ ...conversationBody(route, { turns: 4, lines: 2000 }) }), 413, /262144-byte limit/],
        [
          `{"model": "x", "messages": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
          400,
          /nested deeper than 256/,
        ],
      ];
      for (const [body, status, mentions] of cases) {
        const response = await fixture.post(route, body);
        expect(response.status, body.slice(0, 60)).toBe(status);
        const error = errorOf(route, await response.json());
        expect(error.message).toMatch(mentions);
        const expectedType =
          route === 'messages' && status === 413 ? 'request_too_large' : 'invalid_request_error';
        expect(error.type).toBe(expectedType);
      }
      expect(fixture.upstream.requests).toHaveLength(0);
      const errors = fixture.logs.map((entry) => entry.error);
      expect(errors).toEqual([...Array(3).fill('bad-input'), 'payload-too-large', 'bad-input']);
    },
  );
});

describe('deeply nested JSON', () => {
  it('refuses tool arguments nested too deep inside their string with a 400, not a stack overflow', async () => {
    fixture = await startProxyFixture();
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const response = await fixture.post('chat', {
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'run it' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'bash', arguments: deep } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'done' },
      ],
    });
    expect(response.status).toBe(400);
    expect(errorOf('chat', await response.json()).message).toMatch(
      /message 1: tool call arguments nested deeper than 256 levels/,
    );
    expect(fixture.upstream.requests).toHaveLength(0);
  });
});

describe('upstream failures', () => {
  it.each(ROUTES)('%s: a 429 passes through unchanged, with retry-after', async (route) => {
    fixture = await startProxyFixture({
      script: [{ error: { status: 429, message: 'slow down' }, headers: { 'retry-after': '17' } }],
    });
    const response = await fixture.post(route, conversationBody(route, { turns: 1 }));
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('17');
    const body = await response.text();
    expect(body).toContain('slow down');
    expect(body).toBe(
      route === 'messages'
        ? JSON.stringify({
            type: 'error',
            error: { type: 'rate_limit_error', message: 'slow down' },
            request_id: 'req_scripted0000',
          })
        : JSON.stringify({
            error: { message: 'slow down', type: 'requests', param: null, code: 'rate_limit_exceeded' },
          }),
    );
  });

  it.each(ROUTES)(
    '%s: an upstream that does not answer in time is a 504 in the provider format',
    async (route) => {
      fixture = await startProxyFixture({ script: [{ hang: true }], proxy: { upstreamTimeoutMs: 150 } });
      const response = await fixture.post(route, conversationBody(route, { turns: 1, stream: true }));
      expect(response.status).toBe(504);
      const error = errorOf(route, await response.json());
      expect(error.message).toMatch(/150 ms/);
      expect(error.code).toBe('selfgc_upstream_timeout');
      expect(error.type).toBe(route === 'messages' ? 'timeout_error' : 'server_error');
      expect(fixture.logs[0]?.error).toBe('upstream-timeout');
    },
  );

  it('an unreachable upstream is a 502 in the provider format', async () => {
    fixture = await startProxyFixture({
      proxy: { upstreams: { openai: 'http://127.0.0.1:9', anthropic: 'http://127.0.0.1:9' } },
    });
    const chat = await fixture.post('chat', conversationBody('chat', { turns: 1 }));
    expect(chat.status).toBe(502);
    const requestId = chat.headers.get('x-selfgc-request-id');
    const error = errorOf('chat', await chat.json());
    // The driver's reason names the address: the log has it, the client does not.
    expect(error.message).toBe(
      `the upstream failed or could not be reached (request ${requestId}; details are in the proxy log)`,
    );
    expect(error.code).toBe('selfgc_upstream_failure');
    expect(fixture.logs[0]).toMatchObject({ requestId, error: 'upstream-failure' });
    expect(fixture.logs[0]?.detail).toMatch(/upstream unreachable: .*127\.0\.0\.1:9/);
    const models = await fixture.fetch('/v1/models', { headers: { 'x-api-key': 'k' } });
    expect(models.status).toBe(502);
    expect(errorOf('messages', await models.json()).type).toBe('api_error');
  });
});

describe('options', () => {
  it('refuses numbers that are not positive integers and a share outside [0, 1]', async () => {
    const { createProxy } = await import('./create-proxy.js');
    const upstreams = { openai: 'http://127.0.0.1:9', anthropic: 'http://127.0.0.1:9' };
    for (const [options, message] of [
      [{ window: 0 }, 'createProxy: window must be a positive integer, got 0'],
      [
        { upstreamTimeoutMs: Number.NaN },
        'createProxy: upstreamTimeoutMs must be a positive integer, got NaN',
      ],
      [{ bodyLimitBytes: -1 }, 'createProxy: bodyLimitBytes must be a positive integer, got -1'],
      [{ abSplit: { share: 2 } }, 'createProxy: abSplit.share must be a number in [0, 1], got 2'],
      [
        { tenancy: { header: 'x tenant' } },
        'createProxy: tenancy.header must be a header name, got "x tenant"',
      ],
    ] as const) {
      expect(() => createProxy({ upstreams, ...options })).toThrow(message);
    }
  });
});
