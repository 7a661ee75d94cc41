import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { Wire } from '../testing/upstream-test-kit.js';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { hashApiKey } from './session-identity.js';
import type { WireRoute } from './testing/agent-conversation.js';
import { type ProxyFixture, type ProxyFixtureOptions, startProxyFixture } from './testing/proxy-fixture.js';
import { expandKeys, lastToolResult, pointerKeys } from './testing/recovery-pointers.js';
import { agentBody, expandOf, isRecoveryRound, ROUTES } from './testing/recovery-rounds.js';
import { type Accumulated, streamWithSdk } from './testing/sdk-stream.js';
import { streamGrammarProblems } from './testing/stream-grammar.js';
import { until } from './testing/until.js';
import { EXPAND_TOOL, SEARCH_TOOL } from './transparent-recovery.js';

/** What each route's SDK reports for an answer that ends without a tool call. */
const FINISHED: Record<WireRoute, string> = { chat: 'stop', responses: 'completed', messages: 'end_turn' };
const CALLED: Record<WireRoute, string> = {
  chat: 'tool_calls',
  responses: 'completed',
  messages: 'tool_use',
};

let fixture: ProxyFixture | undefined;
let served: ServedProxy | undefined;
afterEach(async () => {
  await served?.close();
  await fixture?.close();
  served = undefined;
  fixture = undefined;
});

async function serve(options: ProxyFixtureOptions): Promise<string> {
  // Room for a page of recovered content beside the view, the client's tools and the reserve.
  fixture = await startProxyFixture({ window: 4_000, ...options });
  served = await serveProxy(fixture.proxy, { port: 0 });
  return served.url;
}

function expectCoherent(route: WireRoute, result: Accumulated): void {
  expect(streamGrammarProblems(route, result.raw)).toEqual([]);
}

describe('transparent recovery of streamed answers', () => {
  it.each(ROUTES)(
    '%s: an expand call is answered and the rounds reach the SDK as one answer',
    async (route) => {
      const url = await serve({
        streamChunkChars: 5,
        script: (request) =>
          isRecoveryRound(request)
            ? { text: 'Found it: value0_3 is the culprit.' }
            : { text: 'Let me look again. ', toolCalls: expandOf(request) },
      });
      const result = await streamWithSdk(route, url, agentBody(route));
      expect(result.text).toBe('Let me look again. Found it: value0_3 is the culprit.');
      expect(result.toolCalls).toEqual([]);
      expect(result.stop).toBe(FINISHED[route]);
      expectCoherent(route, result);

      const [first, second] = fixture!.upstream.requests;
      expect(fixture!.upstream.requests).toHaveLength(2);
      expect((first!.body as Wire).stream).toBe(true);
      expect(first?.rawBody).toContain(EXPAND_TOOL);
      // The result the model got is the sidecar's text for the key it asked for: whole, or its
      // first page when the window has no room for all of it.
      const [key] = pointerKeys(first!.rawBody);
      if (key === undefined) throw new Error('no recovery pointer in the request');
      const session = `${hashApiKey(new Headers({ 'x-api-key': 'sk-test-key' }))}:${result.headers.get('x-selfgc-session')}`;
      const expanded = (await expandKeys(fixture!.store, session, [key])).get(key);
      expect(expanded).toBeDefined();
      expect(second?.rawBody).toContain(JSON.stringify(expanded!.slice(0, 400)).slice(1, -1));
      expect(fixture!.logs).toHaveLength(1);
      expect(fixture!.logs[0]).toMatchObject({ stream: true, status: 200, recoveryCalls: 1 });
      expect(fixture!.logs[0]).not.toHaveProperty('outcome');
    },
  );

  it.each(ROUTES)('%s: a search call is answered from the sidecar, unseen by the client', async (route) => {
    const url = await serve({
      script: (request) =>
        isRecoveryRound(request)
          ? { text: 'value1_30 is defined in module 1.' }
          : { toolCalls: [{ name: SEARCH_TOOL, arguments: { query: 'value1_30' } }] },
    });
    const result = await streamWithSdk(route, url, agentBody(route));
    expect(result.text).toBe('value1_30 is defined in module 1.');
    expectCoherent(route, result);
    const second = fixture!.upstream.requests[1]!;
    // One `<id>: <snippet>` line a hit, as the tool result the model got.
    expect(second.rawBody).toMatch(/"(content|output)":"(function|conversation):[^"]*: …?[^"]*computeValue/);
  });

  it.each(ROUTES)(
    '%s: a turn calling a proxy tool and a client tool gives the client only its own call',
    async (route) => {
      const readFile = { name: 'read_file', arguments: { path: 'src/module3.ts' } };
      const url = await serve({
        script: (request) =>
          isRecoveryRound(request)
            ? { text: 'Reading it again.', toolCalls: [readFile] }
            : { text: 'Checking. ', toolCalls: [...expandOf(request), readFile] },
      });
      const result = await streamWithSdk(route, url, agentBody(route));
      expect(result.text).toBe('Checking. Reading it again.');
      expect(result.toolCalls).toEqual([{ name: 'read_file', arguments: { path: 'src/module3.ts' } }]);
      expect(result.stop).toBe(CALLED[route]);
      expectCoherent(route, result);
      // Upstream, the proxy's call stays paired with its result; the client call it dropped
      // (the first round's second call) is nowhere, and the model asked for it again.
      const second = fixture!.upstream.requests[1]!.rawBody;
      expect(second).toContain('_scripted0000_0');
      expect(second).not.toContain('_scripted0000_1');
    },
  );

  it('recovers the same way when governance runs in a worker thread', async () => {
    const url = await serve({
      workers: 1,
      script: (request) =>
        isRecoveryRound(request)
          ? { text: 'Found it.' }
          : { text: 'Looking. ', toolCalls: expandOf(request) },
    });
    const result = await streamWithSdk('responses', url, agentBody('responses'));
    expect(result.text).toBe('Looking. Found it.');
    expectCoherent('responses', result);
    expect(lastToolResult(fixture!.upstream.requests[1]?.body)).toMatch(/computeValue/);
    await until(() => fixture!.logs.length === 1);
    expect(fixture!.logs[0]).toMatchObject({ recoveryCalls: 1 });
    expect(fixture!.logs[0]?.recoveredTokens).toBeGreaterThan(0);
  });

  it.each([
    ['keeps items', {}, 1],
    ['keeps none (store: false)', { store: false }, 2],
  ])(
    'responses: when the provider %s, the client gets the reasoning it may pass back',
    async (_, store, reasoningItems) => {
      const url = await serve({
        script: (request) =>
          isRecoveryRound(request) ? { text: 'Found it.' } : { toolCalls: expandOf(request) },
      });
      const body = { ...agentBody('responses'), include: ['reasoning.encrypted_content'], ...store };
      const result = await streamWithSdk('responses', url, body);
      expect(result.text).toBe('Found it.');
      expectCoherent('responses', result);
      // A passed-back reasoning item must come with the item after it: with `store` on, the one
      // before the proxy's call (which the client never gets) stays with the proxy.
      const completed = JSON.parse(result.raw.trimEnd().split('\n\n').at(-1)!.split('data: ')[1]!);
      const types = completed.response.output.map((item: Wire) => item.type);
      expect(types.filter((type: string) => type === 'reasoning')).toHaveLength(reasoningItems);
      expect(types.at(-1)).toBe('message');
      expect(fixture!.upstream.requests[1]?.rawBody).toContain('"type":"reasoning"');
    },
  );

  it.each([
    ['streamed', true, {}, []],
    ['whole', false, {}, []],
    ['streamed, governed in a worker thread', true, { workers: 1 }, []],
    // A continuation is never governed: whether the adapters can read it does not matter.
    [
      'streamed, with an item the adapters cannot read',
      true,
      {},
      [{ role: 'user', content: 'Thanks.', status: null }],
    ],
  ])(
    'responses: a client continues a recovered answer (%s) by previous_response_id from the round that closed it',
    async (_, stream, options, extra) => {
      const readFile = { name: 'read_file', arguments: { path: 'src/module3.ts' } };
      const url = await serve({
        ...options,
        script: (request) => {
          if ((request.body as Wire).previous_response_id !== undefined) return { text: 'Read it.' };
          return isRecoveryRound(request)
            ? { toolCalls: [readFile] }
            : { text: 'Looking. ', toolCalls: expandOf(request) };
        },
      });
      const openai = new OpenAI({ apiKey: 'sk-test-key', baseURL: `${url}/v1`, maxRetries: 0 });
      const body = agentBody('responses');
      const answer = stream
        ? await openai.responses.stream(body).finalResponse()
        : await openai.responses.create(body);
      const call = (answer.output as Wire[]).find((item) => item.type === 'function_call')!;
      expect(call.name).toBe('read_file');
      // The streamed answer keeps the id its `response.created` gave (the first round's), the
      // whole one is the round that closed it; either way the client continues from a stored
      // response that holds its call, every proxy call answered before it.
      expect(answer.id).toBe(stream ? 'resp_scripted0000' : 'resp_scripted0001');
      const { data: next, response } = await openai.responses
        .create({
          model: body.model,
          tools: body.tools,
          previous_response_id: answer.id,
          input: [
            { type: 'function_call_output', call_id: call.call_id, output: 'export const x = 1;' },
            ...(extra as []),
          ],
        })
        .withResponse();
      expect(next.output_text).toBe('Read it.');
      // Said when the proxy named another response than the client did.
      expect(response.headers.get('x-selfgc-warnings') ?? '').toBe(stream ? 'continued-from-last-round' : '');
      expect(fixture!.upstream.requests.at(-1)?.body).toMatchObject({
        previous_response_id: 'resp_scripted0001',
      });
    },
  );

  it('stops after three rounds, forbids tools on the last call, and drops a proxy call made anyway', async () => {
    const url = await serve({
      script: (request) => ({ text: 'again ', toolCalls: expandOf(request) }),
    });
    const result = await streamWithSdk('messages', url, agentBody('messages'));
    const bodies = fixture!.upstream.requests.map((request) => request.body as Wire);
    expect(bodies.map((body) => body.tool_choice)).toEqual([
      undefined,
      undefined,
      undefined,
      { type: 'none' },
    ]);
    // The scripted model ignores tool_choice: its last call must not leak.
    expect(result.text).toBe('again again again again ');
    expect(result.toolCalls).toEqual([]);
    expect(result.stop).toBe('end_turn');
    expectCoherent('messages', result);
  });
});

describe('failures while recovering a stream', () => {
  it.each(ROUTES)(
    "%s: an upstream error mid-stream ends the client's stream with its error event",
    async (route) => {
      const url = await serve({
        script: (request) =>
          isRecoveryRound(request)
            ? {
                text: 'This answer will break.',
                cutStream: { afterEvents: 4, error: { status: 529, message: 'Overloaded' } },
              }
            : { text: 'Looking. ', toolCalls: expandOf(request) },
      });
      const failure = streamWithSdk(route, url, agentBody(route));
      await expect(failure).rejects.toThrow(/Overloaded/);
      const raw = (await failure.catch((error: { raw: string }) => error.raw)) as string;
      expect(raw).toContain('Looking.');
      expect(raw).not.toContain('selfgc_');
      expect(raw.trimEnd().split('\n\n').at(-1)).toMatch(/Overloaded/);
    },
  );

  it.each(ROUTES)('%s: an upstream that answers the next round with an error status', async (route) => {
    const url = await serve({
      script: (request) =>
        isRecoveryRound(request)
          ? { error: { status: 500, message: 'the model crashed' } }
          : { toolCalls: expandOf(request) },
    });
    const failure = streamWithSdk(route, url, agentBody(route));
    await expect(failure).rejects.toThrow(/the model crashed/);
    if (route === 'responses') {
      // Codex reads why a response failed from `response.failed` only.
      const raw = (await failure.catch((error: { raw: string }) => error.raw)) as string;
      const failed = JSON.parse(raw.trimEnd().split('\n\n').at(-1)!.split('data: ')[1]!);
      expect(failed).toMatchObject({
        type: 'response.failed',
        response: { status: 'failed', error: { code: 'server_error', message: 'the model crashed' } },
      });
    }
    expect(fixture!.logs[0]).toMatchObject({ status: 200, outcome: 'failed' });
  });

  it.each(ROUTES)('%s: an upstream connection that drops mid-stream', async (route) => {
    const url = await serve({
      script: (request) =>
        isRecoveryRound(request)
          ? { text: 'Cut short here and there.', cutStream: { afterEvents: 5 } }
          : { toolCalls: expandOf(request) },
    });
    await expect(streamWithSdk(route, url, agentBody(route))).rejects.toThrow(
      /the upstream failed or could not be reached \(request req_/,
    );
    expect(fixture!.logs[0]).toMatchObject({ outcome: 'failed', error: 'upstream-failure' });
    expect(fixture!.logs[0]!.detail).toMatch(/upstream stream/);
  });

  it('a client that goes away while the proxy recovers aborts the upstream call', async () => {
    const url = await serve({
      streamChunkChars: 64,
      script: (request) =>
        isRecoveryRound(request) ? { hang: true } : { text: 'One moment. ', toolCalls: expandOf(request) },
    });
    const client = new AbortController();
    const response = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': 'sk-test-key',
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ ...agentBody('messages'), stream: true }),
      signal: client.signal,
    });
    const reader = response.body!.getReader();
    let seen = '';
    while (!seen.includes('One moment.')) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
    }
    expect(seen).toContain('One moment.');
    await until(() => fixture!.upstream.requests.length === 2);
    client.abort();
    await until(() => fixture!.upstream.requests[1]?.abandoned === true);
    await until(() => fixture!.logs.length === 1);
    expect(fixture!.logs[0]).toMatchObject({ status: 200, outcome: 'cancelled' });
  });
});
