/**
 * The window bounds the whole request, and sessions follow the ids clients send: through the
 * real proxy served on loopback, counting what the scripted upstream received.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Governor } from '../core/governor/governor-types.js';
import { countMessageTokens } from '../core/ledger.js';
import type { SidecarStore } from '../core/store.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { createMemoryStore } from '../stores/memory-store.js';
import { providerTokenCounters } from '../tokenizers/create-token-counter.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { RESERVE_OVER_WINDOW } from './govern-request.js';
import { createGovernorPool, type GovernorFactory } from './governor-pool.js';
import { recoveryReserve } from './recovery-budget.js';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { hashApiKey } from './session-identity.js';
import { TOKENS_BOUND_HEADER } from './stateless-lane.js';
import {
  anthropicConversation,
  authHeaders,
  chatConversation,
  ROUTE_PATHS,
  type WireRoute,
} from './testing/agent-conversation.js';
import { claudeCodeRequest, claudeCodeTools, codexRequest } from './testing/client-requests.js';
import { type ProxyFixture, type ProxyFixtureOptions, startProxyFixture } from './testing/proxy-fixture.js';
import { RECOVERY_TOOLS } from './transparent-recovery.js';
import type { JsonObject } from './wire-dialect.js';

let fixture: ProxyFixture | undefined;
let served: ServedProxy | undefined;
afterEach(async () => {
  await served?.close();
  await fixture?.close();
  served = undefined;
  fixture = undefined;
});

const counter = approximateTokenCounter;
const countJson = (value: unknown) => counter.count(JSON.stringify(value));

/** The real governors, recording the reserve each call passes them. */
function reservingPool(store: SidecarStore, reserves: number[]): GovernorFactory {
  const pool = createGovernorPool({ store, cache: 'blind' });
  return (context) => {
    const governor = pool(context);
    const reserving: Governor = {
      ...governor,
      project(sessionId, messages, options = {}) {
        reserves.push(options.reservedTokens ?? 0);
        return governor.project(sessionId, messages, options);
      },
    };
    return reserving;
  };
}

/** A proxy served on loopback; governed in this thread by `reservingPool`, or in a worker. */
async function serve(options: ProxyFixtureOptions & { reserves?: number[] }) {
  const { reserves = [], ...rest } = options;
  const script = () => ({ text: 'Reading on.' });
  if (rest.workers !== undefined) {
    fixture = await startProxyFixture({ script, reserveOutput: 'default', ...rest });
  } else {
    const store = createMemoryStore();
    const governor = reservingPool(store, reserves);
    fixture = await startProxyFixture({
      script,
      store,
      reserveOutput: 'default',
      ...rest,
      proxy: { governor, ...rest.proxy },
    });
  }
  served = await serveProxy(fixture.proxy, { port: 0 });
  return { fixture, served, reserves };
}

async function post(route: WireRoute, body: unknown, headers: Record<string, string> = {}) {
  if (served === undefined) throw new Error('no proxy served');
  return fetch(`${served.url}${ROUTE_PATHS[route]}`, {
    method: 'POST',
    headers: { ...authHeaders(route, 'sk-window-test'), ...headers },
    body: JSON.stringify(body),
  });
}

function lastUpstreamBody(): JsonObject {
  const body = fixture?.upstream.requests.at(-1)?.body;
  if (body === undefined) throw new Error('the upstream received nothing');
  return body as JsonObject;
}

describe('the next turn of a known conversation, far from the window', () => {
  it.each([
    ['on the proxy thread', undefined],
    ['in a governance worker', 1],
  ])(
    'goes upstream before its newest messages are counted, and they are counted for the next (%s)',
    async (_, workers) => {
      fixture = await startProxyFixture({
        script: () => ({ text: 'Reading on.' }),
        window: 200_000,
        tokenizer: 'per-provider',
        ...(workers === undefined ? {} : { workers }),
      });
      const body = (turns: number) => ({ model: 'gpt-4o', messages: chatConversation({ turns }) });
      const exact = (turns: number) => {
        const counter = providerTokenCounters()('openai');
        return chatDialect
          .readTranscript(body(turns))
          .reduce((sum, message) => sum + countMessageTokens(counter, message), 0);
      };
      const send = async (turns: number) => {
        const response = await fixture!.post('chat', body(turns));
        expect(response.status).toBe(200);
        await response.text();
        expect(lastUpstreamBody()).toEqual(body(turns));
        return {
          bound: response.headers.get(TOKENS_BOUND_HEADER),
          before: Number(response.headers.get('x-selfgc-tokens-before')),
          after: Number(response.headers.get('x-selfgc-tokens-after')),
        };
      };
      // A conversation the proxy has not seen is counted.
      expect(await send(6)).toEqual({ bound: null, before: exact(6), after: exact(6) });
      // Its next turn is sent on bounds: never below the counts.
      const next = await send(7);
      expect(next.bound).toBe('true');
      expect(next.before).toBeGreaterThan(exact(7));
      expect(next.after).toBe(next.before);
      expect(fixture.logs.at(-1)).toMatchObject({ tokensBound: true, tokensBefore: next.before });
      // Counted once it was sent: the same turn again is known exactly.
      expect(await send(7)).toEqual({ bound: null, before: exact(7), after: exact(7) });
      expect(fixture.logs.at(-1)?.tokensBound).toBeUndefined();
    },
  );
});

describe('the window bounds the whole request', () => {
  it('keeps messages + tool definitions + max_tokens of a Claude Code request inside the window', async () => {
    const window = 9_000;
    const { reserves } = await serve({ window });
    const tools = claudeCodeTools(6);
    const body = {
      model: 'claude-sonnet-4-5-20250929',
      max_tokens: 3_000,
      system: 'You are Claude Code.',
      messages: anthropicConversation({ turns: 12 }),
      tools,
    };
    const clientTools = countJson(tools);
    const transcript = anthropicMessagesDialect.readTranscript(body);
    const transcriptTokens = transcript.reduce(
      (sum, message) => sum + countMessageTokens(counter, message),
      0,
    );
    // Ungoverned, the request would not fit: the test is about what governance makes of it.
    expect(transcriptTokens + clientTools + body.max_tokens).toBeGreaterThan(window);

    const response = await post('messages', body);
    expect(response.status).toBe(200);
    await response.json();

    const sent = lastUpstreamBody();
    const sentMessages = anthropicMessagesDialect
      .readTranscript(sent)
      .reduce((sum, message) => sum + countMessageTokens(counter, message), 0);
    // Recovery appends its tools after the client's: everything the upstream got is counted.
    expect((sent.tools as unknown[]).length).toBe(tools.length + RECOVERY_TOOLS.length);
    expect(sentMessages + countJson(sent.tools) + Number(sent.max_tokens)).toBeLessThanOrEqual(window);

    const recoveryTools = countJson(anthropicMessagesDialect.withTools({}, RECOVERY_TOOLS).tools);
    // Room is kept for recovery too (pages and a round's note): the view is governed into the rest.
    const recovery = recoveryReserve(window - clientTools - recoveryTools - 3_000);
    expect(recovery).toBeGreaterThan(0);
    expect(reserves).toEqual([clientTools + recoveryTools + 3_000 + recovery]);
    expect(response.headers.get('x-selfgc-output-reserve')).toBe('3000');
    const before = Number(response.headers.get('x-selfgc-tokens-before'));
    const after = Number(response.headers.get('x-selfgc-tokens-after'));
    expect(before).toBe(transcriptTokens + clientTools);
    // The headers tell the whole prompt: the view as the governor counted it, plus the tools.
    expect(after + recoveryTools + 3_000 + recovery).toBeLessThanOrEqual(window);
    // Read back from the wire, adjacent messages of one role are one message (less framing).
    expect(sentMessages + clientTools).toBeLessThanOrEqual(after);
    expect(sentMessages + clientTools).toBeGreaterThan(after - 40);
    expect(fixture?.logs.at(-1)).toMatchObject({
      tokensBefore: before,
      tokensAfter: after,
      outputReserve: 3_000,
    });
  });

  it('keeps the default reserve free when a request names no output limit, or the configured one', async () => {
    const window = 8_000;
    const { reserves } = await serve({ window });
    const body = { model: 'gpt-4o', messages: chatConversation({ turns: 10 }), stream: true };
    const response = await post('chat', body);
    expect(response.status).toBe(200);
    await response.text();
    // A quarter of a window this small, and room for the recovery tools and the pages they
    // recover (streams recover too).
    const recoveryTools = countJson(chatDialect.withTools({}, RECOVERY_TOOLS).tools);
    const recovery = (output: number) => recoveryReserve(window - output - recoveryTools);
    expect(response.headers.get('x-selfgc-output-reserve')).toBe('2000');
    expect(reserves).toEqual([2_000 + recoveryTools + recovery(2_000)]);
    const sentMessages = chatDialect
      .readTranscript(lastUpstreamBody())
      .reduce((sum, message) => sum + countMessageTokens(counter, message), 0);
    expect(sentMessages + recoveryTools + 2_000 + recovery(2_000)).toBeLessThanOrEqual(window);

    await served?.close();
    await fixture?.close();
    const configured = await serve({ window, proxy: { reserveOutput: 1_500 } });
    const again = await post('chat', body);
    await again.text();
    expect(again.headers.get('x-selfgc-output-reserve')).toBe('1500');
    expect(configured.reserves).toEqual([1_500 + recoveryTools + recovery(1_500)]);
  });

  it('says so in x-selfgc-warnings (codes only) when the reserve alone fills the window', async () => {
    await serve({ window: 3_000 });
    const body = {
      model: 'claude-sonnet-4-5-20250929',
      max_tokens: 4_000,
      messages: anthropicConversation({ turns: 3, marker: 'secret-marker' }),
    };
    const response = await post('messages', body);
    expect(response.status).toBe(200);
    await response.json();
    const warnings = response.headers.get('x-selfgc-warnings') ?? '';
    expect(warnings).toMatch(/^[a-z0-9-]+(,[a-z0-9-]+)*$/);
    const codes = warnings.split(',');
    expect(codes).toContain(RESERVE_OVER_WINDOW);
    // The governor's own warning about the view it could not fit goes out too.
    expect(codes.length).toBeGreaterThan(1);
    expect(new Set(codes).size).toBe(codes.length);
    expect(fixture?.logs.at(-1)?.warnings).toEqual(codes);
  });
});

describe('sessions follow the ids clients send', () => {
  it('gives two Claude Code sessions of the same prompt two store sessions, in a governance worker', async () => {
    await serve({ workers: 1, window: 2_000 });
    // The worker governs with its own pool; only the header forwarding is under test here.
    const a = '2f6d1c7a-8e0b-4b9a-a1d3-5c4e3b2a1f00';
    const b = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
    const sessions: string[] = [];
    for (const sessionId of [a, b]) {
      const { headers } = claudeCodeRequest({ kind: 'header', sessionId });
      const body = {
        model: 'claude-sonnet-4-5-20250929',
        max_tokens: 256,
        system: 'You are Claude Code.',
        messages: anthropicConversation({ turns: 8 }),
      };
      const response = await post('messages', body, headers);
      expect(response.status).toBe(200);
      await response.json();
      sessions.push(response.headers.get('x-selfgc-session') ?? '');
    }
    // The same conversation under two ids: the ids tell them apart.
    expect(sessions.map((session) => session.split('#')[0])).toEqual([`cc:${a}`, `cc:${b}`]);
    expect(sessions[0]!.split('#')[1]).toBe(sessions[1]!.split('#')[1]);
    const keyHash = hashApiKey(new Headers({ 'x-api-key': 'sk-ant-test' }));
    for (const session of sessions) {
      expect((await fixture?.store.listCommits(`${keyHash}:${session}`))?.length).toBeGreaterThan(0);
    }
    expect(fixture?.logs.map((entry) => entry.sessionSource)).toEqual(['cc', 'cc']);
  });

  it("takes Codex's thread id in a governance worker, from the headers forwarded to it", async () => {
    await serve({ workers: 1, window: 2_000 });
    const thread = '019ee74f-22b5-7043-b5fc-697ca0fbd5a6';
    const request = codexRequest({ thread, session: '019ee74f-0000-7000-8000-000000000000' });
    const { prompt_cache_key: _key, ...body } = request.body;
    const response = await post('responses', { ...body, stream: false }, request.headers);
    expect(response.status).toBe(200);
    await response.json();
    expect(response.headers.get('x-selfgc-session')).toMatch(new RegExp(`^codex:${thread}#[0-9a-f]{16}$`));
    expect(fixture?.logs.at(-1)?.sessionSource).toBe('codex');
  });

  it("joins Claude Code's agent id in a governance worker: a subagent has a session of its own", async () => {
    await serve({ workers: 1, window: 2_000 });
    const { headers } = claudeCodeRequest({
      kind: 'header',
      sessionId: '2f6d1c7a-8e0b-4b9a-a1d3-5c4e3b2a1f00',
    });
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 256,
      messages: anthropicConversation({ turns: 2 }),
    };
    const response = await post('messages', body, {
      ...headers,
      'x-claude-code-agent-id': 'a7f7e0946fddd6292',
    });
    expect(response.status).toBe(200);
    await response.json();
    expect(response.headers.get('x-selfgc-session')).toMatch(
      /^cc:2f6d1c7a-8e0b-4b9a-a1d3-5c4e3b2a1f00\/agent:a7f7e0946fddd6292#[0-9a-f]{16}$/,
    );
  });
});
