/**
 * What a client reads when something fails while the proxy recovers a streamed answer: the
 * upstream refusing the next round (its own error, as a request of the client's own would have
 * ended), the proxy's own failures (fixed words, the stable code and request id, the detail in
 * the log), a round whose error body never ends, a client that goes away, and a store that fails
 * during the lookup. Each stream ends with the route's terminal event, and the session's next
 * request is whole.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../core/errors.js';
import type { SidecarStore } from '../core/store.js';
import { guardStore } from '../stores/guard-store.js';
import { createMemoryStore } from '../stores/memory-store.js';
import type { ScriptedReply, ScriptedRequest } from '../testing/scripted-reply.js';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { authHeaders, ROUTE_PATHS, type WireRoute } from './testing/agent-conversation.js';
import { type Fault, type FaultFront, startFaultFront } from './testing/fault-front.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, type ProxyFixtureOptions, startProxyFixture } from './testing/proxy-fixture.js';
import { lastToolResult } from './testing/recovery-pointers.js';
import {
  agentBody,
  expandOf,
  isRecoveryRound,
  postRaw,
  ROUTES,
  streamEvents,
  streamedText,
} from './testing/recovery-rounds.js';
import { streamGrammarProblems } from './testing/stream-grammar.js';
import { until } from './testing/until.js';

let fixture: ProxyFixture | undefined;
let served: ServedProxy | undefined;
let front: FaultFront | undefined;
afterEach(async () => {
  await served?.close();
  await front?.close();
  await fixture?.close();
  served = undefined;
  front = undefined;
  fixture = undefined;
});

/**
 * A served proxy whose scripted model calls `expand` in its first round (after `firstText`) and
 * answers the next round with `second`; with `fault`, a server in front of the upstream gives that
 * round the fault instead.
 */
async function serveRounds(
  second: ScriptedReply,
  options: { fault?: Fault; firstText?: string; fixture?: Partial<ProxyFixtureOptions> } = {},
): Promise<string> {
  const firstText = options.firstText ?? 'Looking. ';
  let target = '';
  if (options.fault !== undefined) front = await startFaultFront(() => target, 1, options.fault);
  const upstreams = front === undefined ? {} : { upstreams: { openai: front.url, anthropic: front.url } };
  fixture = await startProxyFixture({
    window: 4000,
    ...options.fixture,
    script: (request) =>
      isRecoveryRound(request)
        ? second
        : { ...(firstText === '' ? {} : { text: firstText }), toolCalls: expandOf(request) },
    proxy: { ...upstreams, ...options.fixture?.proxy },
  });
  target = fixture.upstream.url;
  served = await serveProxy(fixture.proxy, { port: 0 });
  return served.url;
}

async function serve(
  script: (request: ScriptedRequest) => ScriptedReply,
  extra: Partial<ProxyFixtureOptions> = {},
): Promise<string> {
  fixture = await startProxyFixture({ window: 4000, ...extra, script });
  served = await serveProxy(fixture.proxy, { port: 0 });
  return served.url;
}

function json(status: number, body: unknown): ScriptedReply {
  return { raw: { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } };
}

function lastEventOf(text: string) {
  return streamEvents(text).at(-1)!;
}

describe('a next round the upstream refuses with an HTTP error', () => {
  it.each([
    [529, 'overloaded_error'],
    [429, 'rate_limit_error'],
  ])('messages: a %s reaches the client as the upstream error type %s', async (status, type) => {
    // The first round only calls the proxy's tool (no text yet), as a model often does.
    const url = await serveRounds({ error: { status, message: 'try later' } }, { firstText: '' });
    const result = await postRaw(url, 'messages', { ...agentBody('messages'), stream: true });
    const last = lastEventOf(result.text);
    // Claude Code retries a mid-stream error whose message holds `"type":"overloaded_error"`
    // (its test for a 529); an error of another type and no status it does not retry.
    expect(last.event).toBe('error');
    expect(last.data).toMatchObject({ type: 'error', error: { type, message: 'try later' } });
  });

  it('messages: a 529 whose error names no type is an overload', async () => {
    const url = await serveRounds(json(529, { error: { message: 'Overloaded' } }), { firstText: '' });
    const result = await postRaw(url, 'messages', { ...agentBody('messages'), stream: true });
    expect(lastEventOf(result.text).data.error).toEqual({ type: 'overloaded_error', message: 'Overloaded' });
  });

  it('responses: a 429 whose error code is a number (OpenRouter) ends with the rate-limit code', async () => {
    const url = await serveRounds(json(429, { error: { code: 429, message: 'Rate limit exceeded' } }));
    const result = await postRaw(url, 'responses', { ...agentBody('responses'), stream: true });
    const last = lastEventOf(result.text);
    expect(last.event).toBe('response.failed');
    expect(last.data.response.error).toEqual({ code: 'rate_limit_exceeded', message: 'Rate limit exceeded' });
  });

  it.each(ROUTES)(
    '%s: an error body nested too deep to walk ends the stream with an error made from its status',
    async (route) => {
      const depth = 20_000;
      const body = `{"type":"error","error":{"type":"api_error","message":"boom","param":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
      const url = await serveRounds({
        raw: { status: 500, headers: { 'content-type': 'application/json' }, body },
      });
      const result = await postRaw(url, route, { ...agentBody(route), stream: true });
      expect(result.ending).toBe('end');
      expect(result.text.trimEnd().split('\n\n').at(-1)).toContain('upstream answered 500');
      expect(fixture!.logs[0]).toMatchObject({ outcome: 'failed' });
    },
  );

  it('chat: a 429 keeps the upstream error code', async () => {
    const url = await serveRounds({ error: { status: 429, message: 'Rate limited' } });
    const result = await postRaw(url, 'chat', { ...agentBody('chat'), stream: true });
    expect(lastEventOf(result.text).data.error).toMatchObject({
      code: 'rate_limit_exceeded',
      message: 'Rate limited',
    });
  });

  it('responses: a 429 ends the response with response.failed holding the upstream error code', async () => {
    const url = await serveRounds({
      error: { status: 429, message: 'Rate limited. Please try again in 2s.' },
    });
    const result = await postRaw(url, 'responses', { ...agentBody('responses'), stream: true });
    const events = streamEvents(result.text);
    const last = events.at(-1)!;
    // Codex reads a failure (its retry delay, quota and context-window codes) only from
    // `response.failed`; the OpenAI SDK's stream ends at the `error` event before it.
    expect(last.event).toBe('response.failed');
    expect(last.data.response).toMatchObject({
      id: events[0]!.data.response.id,
      status: 'failed',
      error: { code: 'rate_limit_exceeded', message: 'Rate limited. Please try again in 2s.' },
    });
    expect(JSON.stringify(last.data.response.output)).not.toContain('selfgc_');
    expect(events.at(-2)).toMatchObject({ event: 'error', data: { code: 'rate_limit_exceeded' } });
    expect(events.map((event) => event.data.sequence_number)).toEqual(events.map((_, index) => index));
  });

  it.each(ROUTES)("%s: a refusal is the upstream's, not counted as the proxy's error", async (route) => {
    const url = await serveRounds({ error: { status: 429, message: 'slow' } });
    await postRaw(url, route, { ...agentBody(route), stream: true });
    expect(sampleSum(await fixture!.metrics(), 'selfgc_proxy_errors_total')).toBe(0);
    expect(fixture!.logs[0]).toMatchObject({ outcome: 'failed' });
    expect(fixture!.logs[0]).not.toHaveProperty('error');
  });
});

describe("the proxy's own failure mid-stream", () => {
  it.each(ROUTES)(
    '%s: an upstream that refuses the connection: fixed words, the stable code and request id, the detail logged',
    async (route: WireRoute) => {
      const url = await serveRounds({ text: 'never sent' }, { fault: { kind: 'refused' } });
      const result = await postRaw(url, route, { ...agentBody(route), stream: true });
      expect(result.status).toBe(200);
      expect(front!.count()).toBe(1);
      const requestId = result.headers.get('x-selfgc-request-id')!;
      const tail = result.text.trimEnd().split('\n\n').at(-1)!;
      expect(tail).not.toContain('ECONNREFUSED');
      expect(tail).not.toContain(`:${new URL(front!.url).port}`);
      expect(tail).toContain('selfgc_upstream_failure');
      expect(tail).toContain(requestId);
      const entry = fixture!.logs.find((logged) => logged.requestId === requestId);
      expect(entry).toMatchObject({ outcome: 'failed', error: 'upstream-failure' });
      expect(entry?.detail).toContain('ECONNREFUSED');
      const samples = await fixture!.metrics();
      expect(sampleSum(samples, 'selfgc_proxy_errors_total', { code: 'upstream-failure' })).toBe(1);
    },
  );

  it.each(ROUTES)(
    '%s: a next round whose error body never ends is given up at the upstream timeout',
    async (route: WireRoute) => {
      const url = await serveRounds(
        { text: 'never sent' },
        {
          fault: { kind: 'stalled-error-body', status: 500 },
          fixture: { proxy: { upstreamTimeoutMs: 500 } },
        },
      );
      const result = await postRaw(url, route, { ...agentBody(route), stream: true }, { limitMs: 4000 });
      expect(result.ending).toBe('end');
      expect(result.ms).toBeLessThan(3000);
      // On Responses, both the error event and `response.failed` end the stream.
      const tail = result.text
        .trimEnd()
        .split('\n\n')
        .slice(route === 'responses' ? -2 : -1)
        .join('\n\n');
      expect(tail).toContain('selfgc_upstream_timeout');
      expect(tail).toContain(result.headers.get('x-selfgc-request-id')!);
      expect(fixture!.logs[0]).toMatchObject({ outcome: 'failed', error: 'upstream-timeout' });
    },
  );
});

describe('an upstream error event', () => {
  it.each(ROUTES)('%s: in the first round, before any call, passes through as it came', async (route) => {
    const url = await serve(() => ({
      text: 'Starting to answer here.',
      cutStream: { afterEvents: 4, error: { status: 529, message: 'Overloaded' } },
    }));
    const result = await postRaw(url, route, { ...agentBody(route), stream: true });
    expect(result.ending).toBe('end');
    expect(result.text.trimEnd().split('\n\n').at(-1)).toContain('Overloaded');
    expect(result.text).not.toContain('selfgc_');
    expect(fixture!.upstream.requests).toHaveLength(1);
  });

  it("responses: a response.failed in the next round reaches the client with the items it got, not the round's", async () => {
    const url = await serve((request) => {
      if (!isRecoveryRound(request)) return { text: 'Looking. ', toolCalls: expandOf(request) };
      const created = {
        id: 'resp_two',
        object: 'response',
        created_at: 1,
        status: 'in_progress',
        output: [],
      };
      const failed = {
        ...created,
        status: 'failed',
        error: { code: 'server_error', message: 'The model failed' },
        output: [{ type: 'function_call', name: 'selfgc_expand', call_id: 'x', arguments: '{}' }],
      };
      const body =
        `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: created, sequence_number: 0 })}\n\n` +
        `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', response: failed, sequence_number: 1 })}\n\n`;
      return { raw: { status: 200, headers: { 'content-type': 'text/event-stream' }, body } };
    });
    const result = await postRaw(url, 'responses', { ...agentBody('responses'), stream: true });
    const events = streamEvents(result.text);
    const last = events.at(-1)!;
    expect(last.event).toBe('response.failed');
    expect(last.data.response.error.code).toBe('server_error');
    expect(last.data.response.id).toBe(events[0]!.data.response.id);
    expect(JSON.stringify(last.data.response.output)).not.toContain('selfgc_');
    expect(events.map((event) => event.data.sequence_number)).toEqual(events.map((_, index) => index));
  });
});

describe('after a failed or abandoned round, the same session', () => {
  it.each(ROUTES)(
    '%s: a client that goes away during the next round stops it; its next request is whole',
    async (route) => {
      let hang = true;
      const url = await serve(
        (request) =>
          isRecoveryRound(request)
            ? hang
              ? { text: 'Second round text that goes on and on and on.' }
              : { text: 'Found it.' }
            : { text: 'Looking. ', toolCalls: expandOf(request) },
        { chunkDelayMs: 15, streamChunkChars: 4 },
      );
      const session = { 'x-selfgc-session': `abort-${route}` };
      const client = new AbortController();
      const response = await fetch(`${url}${ROUTE_PATHS[route]}`, {
        method: 'POST',
        headers: { ...authHeaders(route, 'sk-test-key'), ...session },
        body: JSON.stringify({ ...agentBody(route), stream: true }),
        signal: client.signal,
      });
      const reader = response.body!.getReader();
      let seen = '';
      const started = Date.now();
      while (!seen.includes('Seco') && Date.now() - started < 5000) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += new TextDecoder().decode(value);
      }
      expect(seen).toContain('Seco');
      client.abort();
      await until(() => fixture!.upstream.requests[1]?.abandoned === true);
      await until(() => fixture!.logs.length === 1);
      expect(fixture!.logs[0]).toMatchObject({ status: 200, outcome: 'cancelled' });

      hang = false;
      const before = fixture!.upstream.requests.length;
      const next = await postRaw(url, route, { ...agentBody(route), stream: true }, { headers: session });
      expect(next.ending).toBe('end');
      expect(streamGrammarProblems(route, next.text)).toEqual([]);
      expect(streamedText(route, next.text)).toBe('Looking. Found it.');
      expect(fixture!.upstream.requests.length - before).toBe(2);
      expect(fixture!.upstream.requests.at(-1)!.rawBody).not.toContain('Second round');
    },
  );

  it.each(ROUTES)('%s: a turn sent again after its next round broke off is answered whole', async (route) => {
    let fail = true;
    const url = await serve((request) =>
      isRecoveryRound(request)
        ? fail
          ? { text: 'Broken.', cutStream: { afterEvents: 4 } }
          : { text: 'Found it.' }
        : { text: 'Looking. ', toolCalls: expandOf(request) },
    );
    const session = { 'x-selfgc-session': `retry-${route}` };
    const first = await postRaw(url, route, { ...agentBody(route), stream: true }, { headers: session });
    expect(first.text.trimEnd().split('\n\n').at(-1)).toContain('selfgc_upstream_failure');
    fail = false;
    const again = await postRaw(url, route, { ...agentBody(route), stream: true }, { headers: session });
    expect(streamGrammarProblems(route, again.text)).toEqual([]);
    expect(streamedText(route, again.text)).toBe('Looking. Found it.');
  });
});

/** A memory store behind the proxy's guard whose payload reads can be made to fail or hang. */
function flakyStore(): { store: SidecarStore; mode: { value: 'ok' | 'throw' | 'hang' } } {
  const inner = createMemoryStore();
  const mode = { value: 'ok' as 'ok' | 'throw' | 'hang' };
  const wrapped = new Proxy(inner, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (name !== 'getPayload' && name !== 'searchPayloads') return value;
      return (...args: unknown[]) => {
        if (mode.value === 'throw')
          return Promise.reject(new StoreError('connect ECONNREFUSED 10.9.8.7:5432'));
        if (mode.value === 'hang') return new Promise(() => undefined);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: guardStore(wrapped, { timeoutMs: 100 }), mode };
}

describe('the store fails during the lookup', () => {
  for (const failure of ['throw', 'hang'] as const) {
    it.each(ROUTES)(
      `%s: a store that ${failure}s: the model reads a coded note and the client a whole answer`,
      async (route) => {
        const { store, mode } = flakyStore();
        const url = await serve(
          (request) => {
            if (isRecoveryRound(request)) return { text: 'Could not recover it.' };
            mode.value = failure;
            return { text: 'Looking. ', toolCalls: expandOf(request) };
          },
          { store },
        );
        const result = await postRaw(url, route, { ...agentBody(route), stream: true }, { limitMs: 4000 });
        expect(result.ending).toBe('end');
        expect(streamGrammarProblems(route, result.text)).toEqual([]);
        expect(streamedText(route, result.text)).toBe('Looking. Could not recover it.');
        expect(String(lastToolResult(fixture!.upstream.requests[1]?.body))).toBe(
          'Recovery failed (store-failure).',
        );
      },
    );
  }

  it('a client that goes away during the lookup: no next round goes upstream', async () => {
    const inner = createMemoryStore();
    let slow = false;
    const wrapped = new Proxy(inner, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (name !== 'getPayload') return value;
        return async (...args: unknown[]) => {
          if (slow) await new Promise((resolve) => setTimeout(resolve, 400));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const url = await serve(
      (request) => {
        if (isRecoveryRound(request)) return { text: 'Found it.' };
        slow = true;
        return { text: 'Looking. ', toolCalls: expandOf(request) };
      },
      { store: guardStore(wrapped, { timeoutMs: 2000 }) },
    );
    const client = new AbortController();
    const response = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: authHeaders('messages', 'sk-test-key'),
      body: JSON.stringify({ ...agentBody('messages'), stream: true }),
      signal: client.signal,
    });
    const reader = response.body!.getReader();
    let seen = '';
    while (!seen.includes('content_block_stop')) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
    }
    expect(seen).toContain('content_block_stop');
    client.abort();
    await until(() => fixture!.logs.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(fixture!.upstream.requests).toHaveLength(1);
    expect(fixture!.logs[0]).toMatchObject({ outcome: 'cancelled' });
  });
});
