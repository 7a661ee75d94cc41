import { afterEach, describe, expect, it } from 'vitest';
import { estimateInputTokens } from '../testing/scripted-reply.js';
import type { Wire } from '../testing/upstream-test-kit.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { CLIENT_COMPACTION, raiseStreamUsage } from './client-compaction-signal.js';
import { responsesDialect } from './responses-dialect.js';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { conversationBody, type WireRoute } from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, type ProxyFixtureOptions, startProxyFixture } from './testing/proxy-fixture.js';
import { agentBody, expandOf, isRecoveryRound, ROUTES } from './testing/recovery-rounds.js';
import { streamWithSdk } from './testing/sdk-stream.js';
import { streamOf } from './testing/text-stream.js';
import { until } from './testing/until.js';

let fixture: ProxyFixture | undefined;
let served: ServedProxy | undefined;
afterEach(async () => {
  await served?.close();
  await fixture?.close();
  served = undefined;
  fixture = undefined;
});

async function serve(options: ProxyFixtureOptions): Promise<string> {
  fixture = await startProxyFixture({ window: 4_000, cachedInputTokens: 7, ...options });
  served = await serveProxy(fixture.proxy, { port: 0 });
  return served.url;
}

/** The prompt a client reads from an answer's usage, as it counts it for its own compaction. */
function promptOf(route: WireRoute, answer: Wire): number {
  const { usage } = answer;
  if (route === 'messages')
    return (
      usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0)
    );
  return route === 'responses' ? usage.input_tokens : usage.prompt_tokens;
}

/** The total a Responses or Chat answer reports, which Codex reads as its context's size. */
function totalOf(route: WireRoute, answer: Wire): number | undefined {
  return route === 'messages' ? undefined : answer.usage.total_tokens;
}

async function streamText(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

describe('what each dialect raises', () => {
  it("Messages: message_start's uncached input, so that input and cache reads and writes sum to the prompt", () => {
    const start = {
      type: 'message_start',
      message: {
        id: 'msg_1',
        usage: {
          input_tokens: 40,
          cache_read_input_tokens: 900,
          cache_creation_input_tokens: 60,
          output_tokens: 1,
        },
      },
    };
    expect(anthropicMessagesDialect.withPromptUsage(start, 5_000)).toEqual({
      type: 'message_start',
      message: {
        id: 'msg_1',
        usage: {
          input_tokens: 4_040,
          cache_read_input_tokens: 900,
          cache_creation_input_tokens: 60,
          output_tokens: 1,
        },
      },
    });
    // A delta that reports only output has no prompt to raise; one that repeats the input does.
    expect(
      anthropicMessagesDialect.withPromptUsage(
        { type: 'message_delta', usage: { output_tokens: 12 } },
        5_000,
      ),
    ).toBeUndefined();
    expect(
      anthropicMessagesDialect.withPromptUsage(
        {
          type: 'message_delta',
          usage: { input_tokens: 40, cache_read_input_tokens: 900, output_tokens: 12 },
        },
        5_000,
      ),
    ).toEqual({
      type: 'message_delta',
      usage: { input_tokens: 4_100, cache_read_input_tokens: 900, output_tokens: 12 },
    });
  });

  it('Responses and Chat: input (or prompt) tokens and the total, by the same amount', () => {
    expect(
      responsesDialect.withPromptUsage(
        {
          type: 'response.completed',
          response: {
            id: 'resp_1',
            usage: {
              input_tokens: 1_000,
              input_tokens_details: { cached_tokens: 800 },
              output_tokens: 20,
              total_tokens: 1_020,
            },
          },
        },
        5_000,
      ),
    ).toEqual({
      type: 'response.completed',
      response: {
        id: 'resp_1',
        usage: {
          input_tokens: 5_000,
          input_tokens_details: { cached_tokens: 800 },
          output_tokens: 20,
          total_tokens: 5_020,
        },
      },
    });
    expect(
      chatDialect.withPromptUsage(
        { id: 'c', choices: [], usage: { prompt_tokens: 1_000, completion_tokens: 20, total_tokens: 1_020 } },
        5_000,
      ),
    ).toEqual({
      id: 'c',
      choices: [],
      usage: { prompt_tokens: 5_000, completion_tokens: 20, total_tokens: 5_020 },
    });
  });

  it('never lowers a prompt, and leaves answers without usage alone', () => {
    expect(
      chatDialect.withPromptUsage({ usage: { prompt_tokens: 9_000, total_tokens: 9_100 } }, 5_000),
    ).toBeUndefined();
    expect(
      responsesDialect.withPromptUsage({ type: 'response.created', response: { usage: null } }, 5_000),
    ).toBeUndefined();
    expect(
      chatDialect.withPromptUsage({ choices: [{ delta: { content: 'x' } }], usage: null }, 5_000),
    ).toBeUndefined();
    expect(anthropicMessagesDialect.withPromptUsage({ type: 'ping' }, 5_000)).toBeUndefined();
  });
});

describe('raiseStreamUsage', () => {
  const usageEvent =
    'data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}';

  it('passes events without usage as they came, and raises the one with usage, whatever the chunking', async () => {
    const text =
      'data: {"choices":[{"delta":{"content":"a\\n\\nb"}}],"usage":null}\n\n' +
      ': a comment\n\n' +
      `${usageEvent}\n\n` +
      'data: [DONE]\n\n';
    const expected = text.replace(
      usageEvent,
      'data: {"choices":[],"usage":{"prompt_tokens":500,"completion_tokens":2,"total_tokens":502}}',
    );
    // Whole, byte by byte, and cut inside the usage event and inside a blank line.
    const cuts = [[text], [...text], [text.slice(0, 90), text.slice(90, 101), text.slice(101)]];
    for (const chunks of cuts)
      expect(await streamText(raiseStreamUsage(streamOf(chunks), chatDialect, 500))).toBe(expected);
  });

  it('keeps event names and CRLF line endings, and joins an event of several data lines into one', async () => {
    const text =
      'event: message_start\r\n' +
      'data: {"type":"message_start","message":{"usage":\r\n' +
      'data: {"input_tokens":3,"output_tokens":1}}}\r\n\r\n' +
      'event: ping\r\ndata: {"type":"ping"}\r\n\r\n';
    expect(await streamText(raiseStreamUsage(streamOf([text]), anthropicMessagesDialect, 50))).toBe(
      'event: message_start\r\n' +
        'data: {"type":"message_start","message":{"usage":{"input_tokens":50,"output_tokens":1}}}\r\n\r\n' +
        'event: ping\r\ndata: {"type":"ping"}\r\n\r\n',
    );
  });

  it('ends an event at a blank line whatever the line endings around it, mixed ones too', async () => {
    for (const end of ['\n\r\n', '\r\n\n', '\r\r', '\r\n\r\n']) {
      const text = `data: {"choices":[],"usage":{"prompt_tokens":1}}${end}data: [DONE]${end}`;
      for (const chunks of [[text], [...text]]) {
        const out = await streamText(raiseStreamUsage(streamOf(chunks), chatDialect, 500));
        expect(out).toContain('data: {"choices":[],"usage":{"prompt_tokens":500}}');
        expect(out.endsWith(`data: [DONE]${end}`)).toBe(true);
      }
    }
  });

  it('passes on an event the stream ends without a blank line, and one whose data is not JSON', async () => {
    const text =
      'data: {"usage": {"prompt_tokens": 1}, broken\n\ndata: {"choices":[],"usage":{"prompt_tokens":1}}';
    expect(await streamText(raiseStreamUsage(streamOf([text]), chatDialect, 50))).toBe(text);
  });
});

describe('the client-compaction signal through the proxy', () => {
  it.each(ROUTES)(
    '%s: a streamed answer to a prompt over the threshold reports that prompt, to the SDK, flagged and counted',
    async (route) => {
      const url = await serve({
        script: () => ({ text: 'Done.' }),
        proxy: { clientCompactionTokens: 1_000 },
      });
      const result = await streamWithSdk(route, url, agentBody(route));
      const before = Number(result.headers.get('x-selfgc-tokens-before'));
      expect(before).toBeGreaterThan(1_000);
      expect(result.headers.get('x-selfgc-warnings')?.split(',')).toContain(CLIENT_COMPACTION);
      expect(result.text).toBe('Done.');
      expect(promptOf(route, result.final)).toBe(before);
      const upstream = estimateInputTokens(fixture!.upstream.requests[0]!.body);
      expect(upstream).toBeLessThan(before);
      const total = totalOf(route, result.final);
      if (total !== undefined) expect(total - promptOf(route, result.final)).toBeGreaterThan(0);
      // The log and the metrics keep what the upstream reported.
      expect(fixture!.logs[0]).toMatchObject({ inputTokens: upstream, cachedTokens: 7 });
      expect(fixture!.logs[0]!.warnings).toContain(CLIENT_COMPACTION);
      const samples = await fixture!.metrics();
      expect(sampleSum(samples, 'selfgc_proxy_client_compaction_signals_total', { route })).toBe(1);
      expect(sampleSum(samples, 'selfgc_proxy_input_tokens_total', { arm: 'governed' })).toBe(upstream);
    },
  );

  it.each(ROUTES)('%s: a whole answer over the threshold reports the prompt too', async (route) => {
    await serve({ script: () => ({ text: 'Done.' }), proxy: { clientCompactionTokens: 1_000 } });
    const response = await fixture!.post(route, conversationBody(route, { turns: 8 }));
    expect(response.status).toBe(200);
    const before = Number(response.headers.get('x-selfgc-tokens-before'));
    expect(before).toBeGreaterThan(1_000);
    expect(promptOf(route, (await response.json()) as Wire)).toBe(before);
  });

  it.each(ROUTES)(
    '%s: the rounds of a transparent recovery reach the SDK with the prompt reported',
    async (route) => {
      const url = await serve({
        script: (request) =>
          isRecoveryRound(request)
            ? { text: 'Found it: value0_3 is the culprit.' }
            : { text: 'Let me look again. ', toolCalls: expandOf(request) },
        proxy: { clientCompactionTokens: 1_000 },
      });
      const result = await streamWithSdk(route, url, agentBody(route));
      expect(fixture!.upstream.requests).toHaveLength(2);
      expect(result.text).toBe('Let me look again. Found it: value0_3 is the culprit.');
      expect(promptOf(route, result.final)).toBe(Number(result.headers.get('x-selfgc-tokens-before')));
    },
  );

  it.each(ROUTES)(
    '%s: under the threshold (the default), the answer reports what the upstream did',
    async (route) => {
      const url = await serve({ script: () => ({ text: 'Done.' }) });
      const result = await streamWithSdk(route, url, agentBody(route));
      expect(result.headers.get('x-selfgc-warnings') ?? '').not.toContain(CLIENT_COMPACTION);
      expect(promptOf(route, result.final)).toBe(estimateInputTokens(fixture!.upstream.requests[0]!.body));
      const samples = await fixture!.metrics();
      expect(sampleSum(samples, 'selfgc_proxy_client_compaction_signals_total', {})).toBe(0);
    },
  );

  it.each([
    ['governed in a worker thread', { workers: 1 }, undefined],
    [
      'over governance size, through the stateless lane',
      { proxy: { governanceMaxBytes: 1_000 } },
      'over-size',
    ],
  ] as const)('a request %s is signalled too', async (_how, options, lane) => {
    const { proxy, ...rest } = options as ProxyFixtureOptions;
    await serve({
      ...rest,
      script: () => ({ text: 'Done.' }),
      proxy: { ...proxy, clientCompactionTokens: 1_000 },
    });
    const response = await fixture!.post('responses', conversationBody('responses', { turns: 8 }));
    expect(response.status).toBe(200);
    const before = Number(response.headers.get('x-selfgc-tokens-before'));
    expect(before).toBeGreaterThan(1_000);
    expect(response.headers.get('x-selfgc-warnings')?.split(',')).toContain(CLIENT_COMPACTION);
    expect(promptOf('responses', (await response.json()) as Wire)).toBe(before);
    await until(() => fixture!.logs.length === 1);
    expect(fixture!.logs[0]?.lane).toBe(lane);
  });

  it('a prompt whose huge texts the stateless lane sized by their bytes is judged by its approximate count', async () => {
    // Four outputs of 210,000 characters, each over what the lane counts exactly: counted by their
    // bytes they would make over a million tokens of a prompt of about 210,000.
    const output = 'log line: request served in 12 ms\n'.repeat(6_000);
    const messages: Wire[] = [{ role: 'user', content: 'Read the four logs.' }];
    for (let index = 0; index < 4; index += 1) {
      const call = {
        id: `call_${index}`,
        type: 'function',
        function: { name: 'read', arguments: `{"n":${index}}` },
      };
      messages.push(
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: output },
      );
    }
    messages.push({ role: 'user', content: 'Which one was slowest?' });
    const body = { model: 'gpt-4o', messages };
    const lane = { window: 400_000, script: () => ({ text: 'Done.' }) };
    await serve({ ...lane, proxy: { governanceMaxBytes: 1_000, clientCompactionTokens: 1_000_000 } });
    const quiet = await fixture!.post('chat', body);
    expect(quiet.status).toBe(200);
    expect(Number(quiet.headers.get('x-selfgc-tokens-before'))).toBeGreaterThan(1_000_000);
    expect(quiet.headers.get('x-selfgc-tokens-bound')).toBe('true');
    expect(quiet.headers.get('x-selfgc-warnings') ?? '').not.toContain(CLIENT_COMPACTION);
    await fixture!.close();
    await served!.close();
    // Over a threshold the approximate count passes, that count is what the client reads.
    await serve({ ...lane, proxy: { governanceMaxBytes: 1_000, clientCompactionTokens: 200_000 } });
    const signalled = await fixture!.post('chat', body);
    const reported = promptOf('chat', (await signalled.json()) as Wire);
    expect(reported).toBe(Math.ceil(JSON.stringify(body).length / 4));
    expect(signalled.headers.get('x-selfgc-warnings')).toContain(CLIENT_COMPACTION);
  });

  it('an error answer over the threshold goes as it came, usage and all', async () => {
    const error = {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'bad request' },
      usage: { input_tokens: 3 },
    };
    await serve({
      script: () => ({ raw: { status: 400, body: error } }),
      proxy: { clientCompactionTokens: 1_000 },
    });
    const response = await fixture!.post('messages', conversationBody('messages', { turns: 8 }));
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual(error);
    // It reported nothing: neither flagged nor counted as a signal.
    expect(response.headers.get('x-selfgc-warnings') ?? '').not.toContain(CLIENT_COMPACTION);
    await until(() => fixture!.logs.length === 1);
    expect(fixture!.logs[0]!.warnings ?? []).not.toContain(CLIENT_COMPACTION);
    const samples = await fixture!.metrics();
    expect(sampleSum(samples, 'selfgc_proxy_client_compaction_signals_total', {})).toBe(0);
  });

  it('a request that fails upstream is neither flagged nor counted', async () => {
    await serve({ script: () => ({ disconnect: true }), proxy: { clientCompactionTokens: 1_000 } });
    const response = await fixture!.post('chat', conversationBody('chat', { turns: 8 }));
    expect(response.status).toBeGreaterThanOrEqual(500);
    expect(response.headers.get('x-selfgc-warnings') ?? '').not.toContain(CLIENT_COMPACTION);
    await until(() => fixture!.logs.length === 1);
    expect(fixture!.logs[0]!.warnings ?? []).not.toContain(CLIENT_COMPACTION);
    const samples = await fixture!.metrics();
    expect(sampleSum(samples, 'selfgc_proxy_client_compaction_signals_total', {})).toBe(0);
  });
});
