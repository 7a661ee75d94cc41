/**
 * Claude Code 2.1.332 editing its own history between requests, through the proxy: tool-result
 * clearing (client side, `[Old tool result content cleared]`, and server side, `context_management`),
 * rewind, compaction, thinking blocks, and the parallel requests of one session.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { bindsThinking, THINKING_BINDING_BETA } from '../adapters/index.js';
import { StoreError } from '../core/errors.js';
import type { SidecarStore } from '../core/store.js';
import { createMemoryStore } from '../stores/memory-store.js';
import { createProxy } from './create-proxy.js';
import { SENT_AGAIN_AFTER_REFUSAL } from './handle-governed.js';
import { authHeaders, fileContent } from './testing/agent-conversation.js';
import { PROXY_ORIGIN, type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { expandKeys, pointerKeys, storeSessionOf } from './testing/recovery-pointers.js';
import { withoutBeta } from './thinking-binding.js';
import { EXPAND_TOOL } from './transparent-recovery.js';

let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

type Json = Record<string, unknown>;
type Block = Json & { type: string };

const SESSION = '0f4e2a57-2b1c-4d3e-9f8a-7b6c5d4e3f21';
const BETAS =
  'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,effort-2025-11-24';
const HEADERS = {
  'anthropic-beta': BETAS,
  'x-app': 'cli',
  'user-agent': 'claude-cli/2.1.332 (external, cli)',
  'X-Claude-Code-Session-Id': SESSION,
};
const METADATA = {
  user_id: JSON.stringify({ device_id: 'ab'.repeat(32), account_uuid: '', session_id: SESSION }),
};
/** Claude Code's system: the attribution line (stable when the base URL is not Anthropic's), then its prompt. */
const SYSTEM = [
  {
    type: 'text',
    text: 'x-anthropic-billing-header: cc_version=2.1.332.a1f; cc_entrypoint=cli; cc_gateway=env;',
  },
  {
    type: 'text',
    text: "You are Claude Code, Anthropic's official CLI for Claude.",
    cache_control: { type: 'ephemeral' },
  },
];
const TOOLS = ['Read', 'Bash', 'Edit'].map((name) => ({
  name,
  description: `${name} tool.`,
  input_schema: { type: 'object', properties: { file_path: { type: 'string' } } },
}));
const CLEARED = '[Old tool result content cleared]';
const TASK = 'Find why computeValue returns NaN for module 3 and fix it.';

function sig(turn: number, marker: string): string {
  return `EqQBCkYIBxgCKkD${marker}${turn}`.padEnd(120, 'x');
}

/** One Read step of Claude Code, with interleaved thinking: thinking, then the call; then its result. */
function readStep(turn: number, marker = 'A', thinking = true): Json[] {
  const id = `toolu_${marker}${turn}`;
  return [
    {
      role: 'assistant',
      content: [
        ...(thinking
          ? [
              {
                type: 'thinking',
                thinking: `I should read module ${turn} next (${marker}).`,
                signature: sig(turn, marker),
              },
            ]
          : []),
        { type: 'tool_use', id, name: 'Read', input: { file_path: `/repo/src/module${turn}.ts` } },
      ],
    },
    {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: id, content: fileContent(turn, 48, marker) }],
    },
  ];
}

function claudeBody(messages: Json[], extra: Json = {}): Json {
  return {
    model: 'claude-sonnet-4-5-20250929',
    max_tokens: 2048,
    system: SYSTEM,
    tools: TOOLS,
    metadata: METADATA,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    messages,
    ...extra,
  };
}

function steps(from: number, to: number, marker = 'A', thinking = true): Json[] {
  return Array.from({ length: to - from }, (_, index) => readStep(from + index, marker, thinking)).flat();
}

const task = (text = TASK): Json => ({ role: 'user', content: [{ type: 'text', text }] });

/** The escaped form of a file read inside a JSON body. */
const escaped = (turn: number, marker = 'A') => JSON.stringify(fileContent(turn, 48, marker)).slice(1, -1);

function upstreamBody(index: number): { raw: string; body: Json & { messages: Json[] } } {
  const request = fixture!.upstream.requests[index]!;
  return { raw: request.rawBody, body: request.body as Json & { messages: Json[] } };
}

/** What the API checks of thinking: the last assistant message starts with thinking when the client's did. */
function lastAssistant(messages: Json[]): Block[] {
  const last = messages.findLast((message) => message.role === 'assistant');
  return (last?.content ?? []) as Block[];
}

describe('Claude Code 2.1.332 thinking through the proxy', () => {
  it('every thinking block upstream is one the client sent, whole, and the last assistant message starts with one', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 8_000 });
    const messages = [task(), ...steps(0, 30)];
    const response = await fixture.post('messages', claudeBody(messages), { headers: HEADERS });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-commit')).toBeTruthy();
    const { body } = upstreamBody(0);
    const sentThinking = new Set(
      messages.flatMap((m) =>
        (m.content as Block[]).filter((b) => b.type === 'thinking').map((b) => JSON.stringify(b)),
      ),
    );
    for (const message of body.messages)
      for (const block of (Array.isArray(message.content) ? message.content : []) as Block[])
        if (block.type === 'thinking' || block.type === 'redacted_thinking')
          expect(sentThinking.has(JSON.stringify(block)), JSON.stringify(block)).toBe(true);
    expect(lastAssistant(body.messages)[0]?.type).toBe('thinking');
    // The server-side edit the client asked for goes up as it came.
    expect(body.context_management).toEqual({ edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] });
  });
});

describe('thinking bound to its prefix (Claude 5.1 on) through the proxy', () => {
  it('a body governance changed asks the API to drop the thinking it invalidated, under the beta', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 8_000 });
    const messages = [task(), ...steps(0, 30)];
    const post = (model: string, turns = messages) =>
      fixture!.post('messages', claudeBody(turns, { model }), { headers: HEADERS });
    expect((await post('claude-fable-5-1')).headers.get('x-selfgc-commit')).toBeTruthy();
    const bound = fixture.upstream.requests[0]!;
    expect((bound.body as Json).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 1024,
      block_binding: { prefix_mismatch_behavior: 'drop_block' },
    });
    expect(bound.headers['anthropic-beta']).toBe(`${BETAS},${THINKING_BINDING_BETA}`);
    // A model that checks no prefix gets the body as governance left it, the client's betas.
    expect((await post('claude-sonnet-4-5-20250929')).status).toBe(200);
    const unbound = fixture.upstream.requests[1]!;
    expect(JSON.stringify((unbound.body as Json).messages)).not.toBe(JSON.stringify(messages));
    expect((unbound.body as Json).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(unbound.headers['anthropic-beta']).toBe(BETAS);
    // A request governance left as it came goes as it came.
    expect((await post('claude-fable-5-1', [task(), ...steps(0, 2)])).status).toBe(200);
    const untouched = fixture.upstream.requests[2]!;
    expect((untouched.body as Json).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(untouched.headers['anthropic-beta']).toBe(BETAS);
  });
});

describe('thinking bound to its prefix, when the store goes down after a fold', () => {
  it('the stateless lane asks to drop what the fold invalidated, though it sends the conversation as it came', async () => {
    const memory = createMemoryStore();
    let down = false;
    const unlessDown =
      <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        if (down) throw new StoreError('connect ECONNREFUSED');
        return call(...args);
      };
    const store: SidecarStore = {
      ...memory,
      readSession: unlessDown(memory.readSession.bind(memory)),
      writeState: unlessDown(memory.writeState.bind(memory)),
      writeCommit: unlessDown(memory.writeCommit.bind(memory)),
      putPayloads: unlessDown(memory.putPayloads.bind(memory)),
    };
    // The scripted model thinks, and its thinking is bound to the prefix the proxy sent.
    fixture = await startProxyFixture({
      store,
      window: 12_000,
      script: (request) => ({
        thinking: 'Module 3 next.',
        toolCalls: [{ name: 'Read', arguments: { file_path: `/repo/src/module${request.index}.ts` } }],
      }),
    });
    const body = (messages: Json[]) =>
      claudeBody(messages, { model: 'claude-opus-5-5', thinking: { type: 'adaptive' } });
    const opening = [task(), ...steps(0, 12, 'A', false)];
    const first = await fixture.post('messages', body(opening), { headers: HEADERS });
    expect(first.status).toBe(200);
    expect(first.headers.get('x-selfgc-commit')).toBeTruthy();
    const answer = (await first.json()) as { content: Block[] };
    const call = answer.content.find((block) => block.type === 'tool_use')!;
    const goOn = [
      ...opening,
      { role: 'assistant', content: answer.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'x' }] },
    ];
    down = true;
    const second = await fixture.post('messages', body(goOn), { headers: HEADERS });
    expect(await second.text()).not.toContain('bound to a different conversation');
    expect(second.status).toBe(200);
    expect(second.headers.get('x-selfgc-governance')).toBe('fail-open');
    // The lane left the conversation as it came: only the thinking setting and the beta differ.
    const sent = upstreamBody(1).body;
    expect(sent.messages).toEqual(goOn);
    expect(sent.thinking).toEqual({
      type: 'adaptive',
      block_binding: { prefix_mismatch_behavior: 'drop_block' },
    });
    expect(fixture.upstream.requests[1]!.headers['anthropic-beta']).toBe(`${BETAS},${THINKING_BINDING_BETA}`);
  });
});

/**
 * The scripted model of a recovery round: asked which value, it thinks and expands the first
 * pointer of the view, once; then it thinks and answers.
 */
function expandsOnce(): { script: (request: { rawBody: string }) => Json; rounds: () => number } {
  let rounds = 0;
  return {
    script: (request) => {
      const key = pointerKeys(request.rawBody)[0];
      if (rounds === 0 && key !== undefined && request.rawBody.includes('Which value')) {
        rounds += 1;
        return {
          thinking: 'I need the folded reads back.',
          toolCalls: [{ name: EXPAND_TOOL, arguments: { id: key } }],
        };
      }
      return { thinking: 'Now I can answer.', text: 'value3_9' };
    },
    rounds: () => rounds,
  };
}

/** The 24 turns of a conversation whose model thinks before each read, through `fixture`. */
async function thinkingConversation(model: string): Promise<{ messages: Json[]; committed: boolean[] }> {
  const messages: Json[] = [task()];
  const committed: boolean[] = [];
  for (let turn = 0; turn < 24; turn += 1) {
    const response = await fixture!.post('messages', claudeBody(messages, { model }), { headers: HEADERS });
    expect(response.status).toBe(200);
    committed.push(response.headers.get('x-selfgc-commit') !== null);
    const answer = (await response.json()) as { content: Block[] };
    const call = answer.content.find((block) => block.type === 'tool_use')!;
    messages.push(
      { role: 'assistant', content: answer.content },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: call.id, content: fileContent(turn, 48, 'T') }],
      },
    );
  }
  return { messages, committed };
}

/** The scripted model of `thinkingConversation`: signature-only thinking, then the next read. */
const readsOn = (request: { body: unknown }) => {
  const turn = (request.body as { messages: unknown[] }).messages.length;
  return {
    thinking: '',
    toolCalls: [{ name: 'Read', arguments: { file_path: `/repo/src/module${turn}.ts` } }],
  };
};

describe('thinking bound to its prefix, over a conversation the model thinks in', () => {
  it('loses thinking only where a commit changed the prefix, and is never refused', async () => {
    // The model thinks before each read, as Claude Code's model does: signature-only blocks.
    fixture = await startProxyFixture({ window: 8_000, script: readsOn });
    const { committed } = await thinkingConversation('claude-opus-5-5');
    const dropped = fixture.upstream.requests.map((request) => request.thinkingDropped ?? []);
    expect(fixture.upstream.requests).toHaveLength(24);
    // Some commit invalidated thinking (the case the setting is for); a request without a commit
    // invalidated none that was valid before it (the thinking a commit invalidated stays so).
    expect(dropped.some((signatures) => signatures.length > 0)).toBe(true);
    const newlyDropped = dropped.map((signatures, at) =>
      signatures.filter((signature) => at === 0 || !dropped[at - 1]!.includes(signature)),
    );
    expect(newlyDropped.filter((signatures, at) => signatures.length > 0 && !committed[at])).toEqual([]);
  });
});

describe('thinking bound to its prefix, in a request the proxy sends as it came', () => {
  it('refused for thinking bound to the governed prefix, it goes once more asking to drop what is invalid', async () => {
    fixture = await startProxyFixture({ window: 8_000, script: readsOn });
    const { messages, committed } = await thinkingConversation('claude-opus-5-5');
    expect(committed.some(Boolean)).toBe(true);
    // The same client history through a proxy that governs nothing (the conversation's state
    // gone): the thinking produced after the commit is bound to what the commit sent.
    const plain = createProxy({
      upstreams: { anthropic: fixture.upstream.url, openai: fixture.upstream.url },
      window: 8_000,
    });
    const before = fixture.upstream.requests.length;
    const response = await plain.handle(
      new Request(`${PROXY_ORIGIN}/v1/messages`, {
        method: 'POST',
        headers: { ...authHeaders('messages', 'sk-test-key'), ...HEADERS },
        body: JSON.stringify(claudeBody(messages, { model: 'claude-opus-5-5' })),
      }),
    );
    expect(await response.text()).not.toContain('bound to a different conversation');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-warnings')).toContain(SENT_AGAIN_AFTER_REFUSAL);
    const [refused, again] = fixture.upstream.requests.slice(before);
    expect(fixture.upstream.requests).toHaveLength(before + 2);
    expect((refused!.body as Json).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(refused!.headers['anthropic-beta']).toBe(BETAS);
    // Sent again as it came, but for the setting and its beta; the API dropped the bound thinking.
    expect((again!.body as Json).messages).toEqual(messages);
    expect((again!.body as Json).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 1024,
      block_binding: { prefix_mismatch_behavior: 'drop_block' },
    });
    expect(again!.headers['anthropic-beta']).toBe(`${BETAS},${THINKING_BINDING_BETA}`);
    expect(again!.thinkingDropped?.length).toBeGreaterThan(0);
  });
});

describe('thinking bound to its prefix, in a request with thinking off', () => {
  it('refused for thinking a commit invalidated, it goes once more without its thinking', async () => {
    fixture = await startProxyFixture({ window: 8_000, script: readsOn });
    const { messages, committed } = await thinkingConversation('claude-opus-5-5');
    expect(committed.some(Boolean)).toBe(true);
    // A side request over the same history with thinking off: no setting to ask for.
    const before = fixture.upstream.requests.length;
    const response = await fixture.post(
      'messages',
      claudeBody([...messages, task('Sum up the work so far.')], {
        model: 'claude-opus-5-5',
        thinking: { type: 'disabled' },
      }),
      { headers: HEADERS },
    );
    expect(await response.text()).not.toContain('bound to a different conversation');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-warnings')).toContain(SENT_AGAIN_AFTER_REFUSAL);
    const [refused, again] = fixture.upstream.requests.slice(before);
    expect(fixture.upstream.requests).toHaveLength(before + 2);
    const thinkingIn = (request: typeof refused) =>
      JSON.stringify((request!.body as Json).messages).match(/"type":"thinking"/g)?.length ?? 0;
    expect(thinkingIn(refused)).toBeGreaterThan(0);
    expect(thinkingIn(again)).toBe(0);
    expect((again!.body as Json).thinking).toEqual({ type: 'disabled' });
    expect(again!.headers['anthropic-beta']).toBe(BETAS);
  });
});

describe('thinking bound to its prefix, on a platform without the binding controls', () => {
  it.each([
    ['on its own thread', undefined],
    ['in a governance worker', 1],
  ])(
    'refused for the beta the proxy added, a request goes once more without the setting and the beta (%s)',
    async (_, workers) => {
      fixture = await startProxyFixture({
        window: 8_000,
        thinkingBinding: false,
        script: readsOn,
        ...(workers === undefined ? {} : { workers }),
      });
      const { committed } = await thinkingConversation('claude-opus-5-5');
      expect(committed.some(Boolean)).toBe(true);
      const requests = fixture.upstream.requests;
      const carriesBeta = (request: (typeof requests)[number]) =>
        request.headers['anthropic-beta']?.includes(THINKING_BINDING_BETA) === true;
      // The first changed request was refused, and went again without the proxy's additions; the
      // key's later ones went without them at once.
      const added = requests.filter(carriesBeta);
      expect(added).toHaveLength(1);
      const next = requests[added[0]!.index + 1]!;
      expect(next.headers['anthropic-beta']).toBe(BETAS);
      expect((next.body as Json).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
      expect((next.body as Json).messages).toEqual((added[0]!.body as Json).messages);
      expect(requests).toHaveLength(25);
      // Another key's namespace learns it for itself.
      const other = await fixture.post(
        'messages',
        claudeBody([task(), ...steps(0, 30)], { model: 'claude-opus-5-5' }),
        {
          apiKey: 'sk-other-key',
          headers: HEADERS,
        },
      );
      expect(other.status).toBe(200);
      expect(other.headers.get('x-selfgc-warnings')).toContain(SENT_AGAIN_AFTER_REFUSAL);
      expect(requests.slice(25).map(carriesBeta)).toEqual([true, false]);
      // So does another model of the first key (a platform refuses a beta for a model).
      const fable = await fixture.post(
        'messages',
        claudeBody([task(), ...steps(0, 30)], { model: 'claude-fable-5-1' }),
        { headers: HEADERS },
      );
      expect(fable.headers.get('x-selfgc-warnings')).toContain(SENT_AGAIN_AFTER_REFUSAL);
      expect(requests.slice(27).map(carriesBeta)).toEqual([true, false]);
    },
  );

  it('behind a gateway that drops the beta header, the field it refuses goes too', async () => {
    const dropsBeta: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      withoutBeta(headers, THINKING_BINDING_BETA);
      return fetch(input, { ...init, headers });
    };
    fixture = await startProxyFixture({ window: 8_000, script: readsOn, proxy: { fetch: dropsBeta } });
    const messages = [task(), ...steps(0, 30)];
    const response = await fixture.post('messages', claudeBody(messages, { model: 'claude-fable-5-1' }), {
      headers: HEADERS,
    });
    expect(await response.text()).not.toContain('Extra inputs are not permitted');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-warnings')).toContain(SENT_AGAIN_AFTER_REFUSAL);
    const [refused, again] = fixture.upstream.requests;
    expect(fixture.upstream.requests).toHaveLength(2);
    expect((refused!.body as Json).thinking).toMatchObject({
      block_binding: { prefix_mismatch_behavior: 'drop_block' },
    });
    expect((again!.body as Json).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
  });

  it('a beta the client sent itself stays, and so does its refusal', async () => {
    fixture = await startProxyFixture({ window: 8_000, thinkingBinding: false, script: readsOn });
    const messages = [task(), ...steps(0, 30)];
    const response = await fixture.post('messages', claudeBody(messages, { model: 'claude-fable-5-1' }), {
      headers: { ...HEADERS, 'anthropic-beta': `${BETAS},${THINKING_BINDING_BETA}` },
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('invalid beta flag');
    expect(response.headers.get('x-selfgc-warnings') ?? '').not.toContain(SENT_AGAIN_AFTER_REFUSAL);
    expect(fixture.upstream.requests).toHaveLength(1);
  });

  it('a setting the client sent itself without the beta stays, and so does its refusal', async () => {
    fixture = await startProxyFixture({ window: 8_000, script: readsOn });
    const thinking = {
      type: 'enabled',
      budget_tokens: 1024,
      block_binding: { prefix_mismatch_behavior: 'drop_block' },
    };
    const response = await fixture.post(
      'messages',
      claudeBody([task()], { model: 'claude-fable-5-1', thinking }),
      { headers: HEADERS },
    );
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('Extra inputs are not permitted');
    expect(response.headers.get('x-selfgc-warnings') ?? '').not.toContain(SENT_AGAIN_AFTER_REFUSAL);
    expect(fixture.upstream.requests).toHaveLength(1);
    // Nor does the key's namespace take it for a platform that refuses the beta: its changed
    // requests go with the setting and the beta at once, never refused.
    const { committed } = await thinkingConversation('claude-opus-5-5');
    expect(committed.some(Boolean)).toBe(true);
    expect(fixture.logs.some((entry) => entry.warnings?.includes(SENT_AGAIN_AFTER_REFUSAL))).toBe(false);
    expect(fixture.upstream.requests).toHaveLength(25);
  });

  it('a refusal the proxy knows no remedy for reaches the client byte for byte', async () => {
    // A byte order mark and a byte that is not UTF-8: reading the answer as text would lose both.
    const text = new TextEncoder().encode('{"type":"error","error":{"message":"bad \u00ff"}}');
    const refusal = new Uint8Array([0xef, 0xbb, 0xbf, ...text, 0xff]);
    const refuses: typeof fetch = async () =>
      new Response(refusal, { status: 400, headers: { 'content-type': 'application/json' } });
    fixture = await startProxyFixture({ window: 8_000, script: readsOn, proxy: { fetch: refuses } });
    const response = await fixture.post('messages', claudeBody([task()], { model: 'claude-fable-5-1' }), {
      headers: HEADERS,
    });
    expect(response.status).toBe(400);
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(refusal);
  });

  it('a refusal whose text does not come in time is a timeout, its time counted upstream', async () => {
    // A 400 whose body never ends, until the call is aborted.
    const stalls: typeof fetch = async (_, init) =>
      new Response(
        new ReadableStream({
          start(controller) {
            init?.signal?.addEventListener('abort', () => controller.error(init.signal!.reason));
          },
        }),
        { status: 400, headers: { 'content-type': 'application/json' } },
      );
    fixture = await startProxyFixture({
      window: 8_000,
      script: readsOn,
      proxy: { fetch: stalls, upstreamTimeoutMs: 150 },
    });
    const response = await fixture.post('messages', claudeBody([task()], { model: 'claude-fable-5-1' }), {
      headers: HEADERS,
    });
    expect(response.status).toBe(504);
    expect(fixture.logs[0]?.error).toBe('upstream-timeout');
    expect(fixture.logs[0]?.upstreamMs).toBeGreaterThanOrEqual(100);
  });

  it("a recovery round after the refusal goes without the proxy's additions", async () => {
    const model = expandsOnce();
    fixture = await startProxyFixture({ window: 8_000, thinkingBinding: false, script: model.script });
    const messages = [
      task(),
      ...steps(0, 30),
      { role: 'user', content: [{ type: 'text', text: 'Which value does module 3 compute on line 9?' }] },
    ];
    const response = await fixture.post(
      'messages',
      claudeBody(messages, { model: 'claude-opus-5-5', stream: true }),
      { headers: HEADERS },
    );
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('value3_9');
    const betas = fixture.upstream.requests.map((request) => request.headers['anthropic-beta']);
    expect(betas).toEqual([`${BETAS},${THINKING_BINDING_BETA}`, BETAS, BETAS]);
    expect(model.rounds()).toBe(1);
  });
});

describe('bindsThinking', () => {
  it('takes Claude models from 5.1 on, by version, under any provider prefix', () => {
    const binds = [
      'claude-fable-5-1',
      'claude-opus-5-5',
      'anthropic.claude-sonnet-5-5-v1:0',
      'us.anthropic.claude-opus-5-5-v1:0',
      'claude-opus-5-5@20261001',
      'anthropic/claude-opus-5.5',
      'claude-fable-6-0',
      'claude-opus-6',
      'claude-opus-6-20270101',
    ];
    const free = [
      'claude-sonnet-4-5-20250929',
      'claude-opus-5-20260901',
      'claude-opus-5',
      'anthropic/claude-opus-4.6',
      'claude-3-5-sonnet-20241022',
      'gpt-5.1',
      'scripted-model',
    ];
    expect(binds.filter(bindsThinking)).toEqual(binds);
    expect(free.filter(bindsThinking)).toEqual([]);
  });
});

/** Claude Code's microcompaction: every Read result but the last `keep` replaced in place. */
function microcompacted(messages: Json[], keep: number, replacement = CLEARED): Json[] {
  const ids = messages.flatMap((m) =>
    m.role === 'assistant'
      ? (m.content as Block[]).filter((b) => b.type === 'tool_use').map((b) => String(b.id))
      : [],
  );
  const clear = new Set(ids.slice(0, -keep));
  return messages.map((m) =>
    m.role !== 'user' || !Array.isArray(m.content)
      ? m
      : {
          ...m,
          content: (m.content as Block[]).map((b) =>
            b.type === 'tool_result' && clear.has(String(b.tool_use_id)) ? { ...b, content: replacement } : b,
          ),
        },
  );
}

/** Anchors of file reads (`value7_12`) in a raw body that the client's own body does not hold. */
function foreignAnchors(raw: string, clientRaw: string): string[] {
  return [...new Set(raw.match(/value\d+_\d+/g) ?? [])].filter((anchor) => !clientRaw.includes(anchor));
}

describe('Claude Code 2.1.332 microcompaction through the proxy', () => {
  it('results the client cleared in place come back neither in the view, its indexes, nor through expand', async () => {
    let expandKey: string | undefined;
    fixture = await startProxyFixture({
      window: 8_000,
      script: (request) => {
        const raw = request.rawBody;
        if (
          expandKey !== undefined &&
          raw.includes(CLEARED) &&
          !raw.includes(`"name":"${EXPAND_TOOL}","input"`)
        )
          // With thinking enabled the model opens each answer with thinking.
          return {
            thinking: 'The first key holds what I need.',
            toolCalls: [{ name: EXPAND_TOOL, arguments: { id: expandKey } }],
          };
        return { text: 'Reading on.' };
      },
    });
    const before = [task(), ...steps(0, 30)];
    const first = await fixture.post('messages', claudeBody(before), { headers: HEADERS });
    expect(first.status).toBe(200);
    await first.text();
    const shown = pointerKeys(upstreamBody(0).raw);
    expect(shown.length).toBeGreaterThan(0);
    const session = storeSessionOf(first);
    // The model remembers the first key it saw; the client clears all but the last five results.
    expandKey = shown[0];
    const after = [
      ...microcompacted([...before, ...steps(30, 32)], 5),
      { role: 'user', content: [{ type: 'text', text: 'Go on with module 3.' }] },
    ];
    const clientBody = claudeBody(after);
    const third = await fixture.post('messages', clientBody, { headers: HEADERS });
    expect(third.status).toBe(200);
    const answer = await third.text();
    const count = fixture.upstream.requests.length;
    const view = upstreamBody(1).raw;
    const clientRaw = JSON.stringify(clientBody);
    // Nothing of the cleared reads in the view or its fold indexes.
    for (let turn = 0; turn < 27; turn += 1) expect(view, `read ${turn}`).not.toContain(escaped(turn));
    expect(foreignAnchors(view, clientRaw)).toEqual([]);
    // Nor behind any key the view offers.
    const offered = await expandKeys(fixture.store, session, pointerKeys(view));
    for (const [key, text] of offered)
      for (let turn = 0; turn < 27; turn += 1)
        expect(text ?? '', key).not.toContain(fileContent(turn, 48, 'A'));
    // Nor behind the key the model saw before the clearing.
    const recovered = fixture.upstream.requests
      .slice(2, count)
      .map((request) => request.rawBody)
      .join('\n');
    for (let turn = 0; turn < 27; turn += 1) expect(recovered, `expand ${turn}`).not.toContain(escaped(turn));
    expect(answer).not.toContain('value0_1 ');
  });
});

describe('Claude Code 2.1.332 rewind through the proxy', () => {
  it('after /rewind to the second prompt, nothing of the abandoned branch is shown or recoverable', async () => {
    let expandKeysSeen: string[] = [];
    let rewound = false;
    fixture = await startProxyFixture({
      window: 8_000,
      script: (request) => {
        const raw = request.rawBody;
        const key = expandKeysSeen.find((candidate) => !raw.includes(`{"id":"${candidate}"}`));
        if (rewound && key !== undefined)
          return {
            thinking: 'A key from before the rewind.',
            toolCalls: [{ name: EXPAND_TOOL, arguments: { id: key } }],
          };
        return { text: 'Reading on.' };
      },
    });
    const head = [
      task(),
      ...steps(0, 10),
      { role: 'assistant', content: [{ type: 'text', text: 'Done with the first part.' }] },
    ];
    const prompt = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });
    const branchA = [...head, prompt('Now read the modules from 10 on.'), ...steps(10, 30)];
    const first = await fixture.post('messages', claudeBody(branchA), { headers: HEADERS });
    expect(first.status).toBe(200);
    await first.text();
    const session = storeSessionOf(first);
    expandKeysSeen = pointerKeys(upstreamBody(0).raw);
    expect(expandKeysSeen.length).toBeGreaterThan(0);
    rewound = true;
    // Double-Esc back to the second prompt, which the user words otherwise; the work goes on anew.
    const branchB = [...head, prompt('Now read the modules from 40 on instead.'), ...steps(40, 60, 'B')];
    const clientBody = claudeBody(branchB);
    const second = await fixture.post('messages', clientBody, { headers: HEADERS });
    expect(second.status).toBe(200);
    await second.text();
    const requests = fixture.upstream.requests.slice(1).map((request) => request.rawBody);
    const clientRaw = JSON.stringify(clientBody);
    for (const raw of requests) {
      for (let turn = 10; turn < 30; turn += 1) {
        expect(raw, `A read ${turn}`).not.toContain(escaped(turn, 'A'));
        expect(raw, `A anchor ${turn}`).not.toContain(`value${turn}_`);
      }
    }
    expect(foreignAnchors(requests[0]!, clientRaw)).toEqual([]);
    const offered = await expandKeys(fixture.store, session, pointerKeys(requests[0]!));
    for (const [key, text] of offered)
      for (let turn = 10; turn < 30; turn += 1) expect(text ?? '', key).not.toContain(`module${turn}.ts (A)`);
  });
});

/** Claude Code 2.1.332's compaction prompt (`t4n` + `o4n` + `i4n` in the binary), shortened in the middle. */
const COMPACT_PROMPT =
  'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n' +
  '- You already have all the context you need in the conversation above.\n' +
  '- Tool calls will be REJECTED and will waste your only turn \u2014 you will fail the task.\n\n' +
  "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.\n" +
  '\nREMINDER: Do NOT call any tools. Respond with plain text only \u2014 an <analysis> block followed by a <summary> block. Tool calls will be rejected and you will fail the task.';
const SUMMARY_HEAD =
  'This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.';

describe('Claude Code 2.1.332 /compact through the proxy', () => {
  // Claude Code puts a change of effort (a system message of no text, `output_config`) before
  // the assistant turn it applies to: after the prompt, the request's last message.
  it.each([
    ['', []],
    [
      ', an effort directive after the prompt',
      [{ role: 'system', content: [], output_config: { effort: 'high' } }],
    ],
  ])(
    'the compaction request fits and holds no pointers into a session the summary cannot reach%s',
    async (_, after) => {
      let summary = '';
      const window = 8_000;
      fixture = await startProxyFixture({
        window,
        script: (request) => {
          const raw = request.rawBody;
          if (raw.includes('Your task is to create a detailed summary')) {
            // The model copies the ids it was shown into its summary, as models do.
            const keys = pointerKeys(raw);
            summary = `${SUMMARY_HEAD}\n\nSummary: modules 0 to 31 read; module 3 divides by zero. Details: ${keys.join(', ')}.`;
            return { text: `<summary>${summary}</summary>` };
          }
          return { text: 'Reading on.' };
        },
      });
      const history = [
        task(),
        ...steps(0, 30),
        { role: 'assistant', content: [{ type: 'text', text: 'Read them all.' }] },
      ];
      const main = await fixture.post('messages', claudeBody(history), { headers: HEADERS });
      expect(main.status).toBe(200);
      await main.text();
      // `/compact`: the same system, tools and history (a fork of the main loop), the prompt appended.
      const compaction = claudeBody([
        ...history,
        { role: 'user', content: [{ type: 'text', text: COMPACT_PROMPT }] },
        ...after,
      ]);
      const compacted = await fixture.post('messages', compaction, { headers: HEADERS });
      expect(compacted.status).toBe(200);
      await compacted.text();
      const { raw: compactRaw, body: compactBody } = upstreamBody(1);
      expect(Number(compacted.headers.get('x-selfgc-tokens-after'))).toBeLessThanOrEqual(window);
      const keysInCompaction = pointerKeys(compactRaw);
      const toolNames = (compactBody.tools as Json[]).map((t) => String(t.name));
      // As Codex's compaction request: the model may call no tool, and what it writes outlives this session.
      expect(toolNames.filter((name) => name.startsWith('selfgc_'))).toEqual([]);
      expect(keysInCompaction).toEqual([]);
    },
  );
});

const SUGGESTION = '[SUGGESTION MODE: Suggest what the user might naturally type next into Claude Code.]';

describe('Claude Code 2.1.332 forks of the main loop through the proxy', () => {
  it('a prompt suggestion between two turns of the main loop neither diverges it nor commits for it', async () => {
    fixture = await startProxyFixture({ window: 8_000, script: () => ({ text: 'Reading on.' }) });
    const history: Json[] = [
      task(),
      ...steps(0, 30),
      { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
    ];
    const send = async (messages: Json[]) => {
      const response = await fixture!.post('messages', claudeBody(messages), { headers: HEADERS });
      expect(response.status).toBe(200);
      await response.text();
      return response;
    };
    for (let turn = 0; turn < 6; turn += 1) {
      await send(history);
      // While the user types: the fork (same system, tools, history), its prompt appended.
      await send([...history, { role: 'user', content: [{ type: 'text', text: SUGGESTION }] }]);
      history.push(
        { role: 'user', content: [{ type: 'text', text: `Now look at module ${40 + turn}.` }] },
        ...readStep(40 + turn),
        { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
      );
    }
    const sessions = new Set(fixture.logs.map((entry) => entry.session));
    const diverged = fixture.logs.filter((entry) => entry.divergedAt !== undefined).length;
    const commits = fixture.logs.filter((entry) => entry.commit !== undefined).length;
    expect(sessions.size).toBe(1);
    expect(diverged).toBe(0);
    expect(commits).toBeLessThanOrEqual(6);
  });
});

describe('Claude Code 2.1.332 forks racing the main loop through the proxy', () => {
  it.each([0, 2])(
    'a fork sent while the main loop goes on keeps the main state (%i governance threads)',
    async (workers) => {
      fixture = await startProxyFixture({
        window: 8_000,
        script: () => ({ text: 'Reading on.', delayMs: 5 }),
        ...(workers > 0 ? { workers } : {}),
      });
      const history: Json[] = [task(), ...steps(0, 30)];
      const send = async (messages: Json[]) => {
        const response = await fixture!.post('messages', claudeBody(messages), { headers: HEADERS });
        expect(response.status).toBe(200);
        await response.text();
        return response;
      };
      await send(history);
      for (let turn = 0; turn < 8; turn += 1) {
        const fork = [
          ...history,
          { role: 'assistant', content: [{ type: 'text', text: 'Checked.' }] },
          {
            role: 'user',
            content: [{ type: 'text', text: `${SUGGESTION} (${turn})` }],
          },
        ];
        history.push(...readStep(40 + turn));
        await Promise.all([send([...history]), send(fork)]);
      }
      const diverged = fixture.logs.filter((entry) => entry.divergedAt !== undefined);
      expect(fixture.logs.some((entry) => entry.commit !== undefined)).toBe(true);
      expect(diverged.every((entry) => entry.droppedStates === 0)).toBe(true);
    },
  );
});

describe('Claude Code 2.1.332 thinking in a latest turn over the window', () => {
  it('parallel reads after a redacted thinking block: the rescue folds results, the assistant message stays as sent', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 6_000 });
    const ids = [0, 1, 2, 3, 4].map((turn) => `toolu_P${turn}`);
    const assistant = {
      role: 'assistant',
      content: [
        {
          type: 'redacted_thinking',
          data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP',
        },
        { type: 'thinking', thinking: 'Read all five at once.', signature: sig(99, 'P') },
        { type: 'text', text: 'Reading the five modules.' },
        ...ids.map((id, turn) => ({
          type: 'tool_use',
          id,
          name: 'Read',
          input: { file_path: `/repo/src/module${turn}.ts` },
        })),
      ],
    };
    const results = {
      role: 'user',
      content: ids.map((id, turn) => ({
        type: 'tool_result',
        tool_use_id: id,
        content: fileContent(turn, 160, 'P'),
      })),
    };
    const body = claudeBody([task(), assistant, results]);
    const response = await fixture.post('messages', body, { headers: HEADERS });
    expect(response.status).toBe(200);
    const sent = upstreamBody(0).body;
    expect(sent.messages[1]).toEqual(assistant);
  });
});

describe('Claude Code 2.1.332 thinking across a recovery round', () => {
  it('the round goes up with the model thinking as it streamed it; what the client gets back it can send again', async () => {
    const model = expandsOnce();
    fixture = await startProxyFixture({ window: 8_000, script: model.script });
    const messages = [
      task(),
      ...steps(0, 30),
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Done.', signature: sig(0, 'D') },
          { type: 'text', text: 'Read them all.' },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'Which value does module 3 compute on line 9?' }] },
    ];
    const response = await fixture.post('messages', claudeBody(messages, { stream: true }), {
      headers: HEADERS,
    });
    expect(response.status).toBe(200);
    const events = (await response.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Json);
    const starts = events
      .filter((event) => event.type === 'content_block_start')
      .map((event) => (event.content_block as Block).type);
    const second = upstreamBody(1).body;
    // The round keeps the client's server-side edits and thinking as they came.
    expect(second.context_management).toEqual({ edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] });
    expect(second.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    const roundAnswer = second.messages.at(-2)!.content as Block[];
    expect(roundAnswer[0]).toMatchObject({ type: 'thinking', thinking: 'I need the folded reads back.' });
    expect(starts).toEqual(['thinking', 'thinking', 'text']);
  });
});

describe('Claude Code 2.1.332 message threads (CLAUDE_CODE_TETHER_LIVE=1) through the proxy', () => {
  it('a thread continue holds only the turns since the anchor: it goes upstream as the client sent it', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 8_000 });
    // The server holds the thread up to the anchor reply; the client sends what came after it, and
    // leaves out the tools (and system) the thread already stored.
    const whole = [task(), ...steps(0, 40)];
    const { tools: _inherited, ...rest } = claudeBody(whole.slice(40), {
      thread: { type: 'continue', previous_message_id: 'msg_01Anchor' },
    });
    const raw = JSON.stringify(rest);
    const response = await fixture.post('messages', raw, {
      headers: { ...HEADERS, 'anthropic-beta': `${BETAS},message-threads-2026-08-12` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-governance')).toBe('server-state');
    expect(fixture.upstream.requests[0]!.rawBody).toBe(raw);
  });
});

/** A failed Bash step then its successful re-run, each after thinking. */
function bashSteps(turn: number): Json[] {
  const failed = `toolu_bashF${turn}`;
  const ok = `toolu_bashO${turn}`;
  const think = (text: string, n: number) => ({ type: 'thinking', thinking: text, signature: sig(n, 'S') });
  const error = `npm ERR! code ELIFECYCLE\nnpm ERR! Test failed (${turn}).\n${'  at Object.<anonymous> (/repo/test/module.test.ts:12:5)\n'.repeat(30)}`;
  return [
    {
      role: 'assistant',
      content: [
        think(`Run the tests (${turn}).`, turn * 2),
        { type: 'tool_use', id: failed, name: 'Bash', input: { command: `npm test -- module${turn}` } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: failed, is_error: true, content: error }] },
    {
      role: 'assistant',
      content: [
        think(`Install first (${turn}).`, turn * 2 + 1),
        { type: 'text', text: 'Installing, then again.' },
        { type: 'tool_use', id: ok, name: 'Bash', input: { command: `npm ci && npm test -- module${turn}` } },
      ],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: ok,
          content: `PASS test/module${turn}.test.ts\n${'  ✓ computes a value (3 ms)\n'.repeat(20)}`,
        },
      ],
    },
  ];
}

describe('Claude Code 2.1.332 thinking where steps are pruned', () => {
  it.each([4_000, 6_000, 8_000, 12_000])(
    'no assistant message upstream is left with thinking alone or nothing (window %i)',
    async (window) => {
      fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window });
      const messages = [task()];
      for (let turn = 0; turn < 8; turn += 1) {
        if (turn > 0) messages.push({ role: 'user', content: [{ type: 'text', text: `Now part ${turn}.` }] });
        messages.push(...bashSteps(turn), ...readStep(turn), {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: `Part ${turn} done.`, signature: sig(turn, 'E') },
            { type: 'text', text: `Part ${turn} done.` },
          ],
        });
      }
      messages.push(
        { role: 'user', content: [{ type: 'text', text: 'And the last part.' }] },
        ...bashSteps(9),
      );
      const response = await fixture.post('messages', claudeBody(messages), { headers: HEADERS });
      expect(response.status).toBe(200);
      const sent = upstreamBody(0).body.messages;
      for (const message of sent) {
        if (message.role !== 'assistant') continue;
        const blocks = message.content as Block[];
        expect(
          blocks.some((b) => b.type !== 'thinking' && b.type !== 'redacted_thinking'),
          JSON.stringify(blocks),
        ).toBe(true);
      }
      for (const message of sent)
        for (const block of (Array.isArray(message.content) ? message.content : []) as Block[])
          if (block.type === 'thinking') expect(block.signature, JSON.stringify(block)).toMatch(/^EqQB/);
    },
  );
});

describe('Claude Code 2.1.332 partial compaction (the recent part summarized, the earlier kept) through the proxy', () => {
  it('the conversation keeps its session; nothing of the summarized part is shown or recoverable afterwards', async () => {
    let summary = '';
    fixture = await startProxyFixture({
      window: 12_000,
      script: (request) => {
        if (request.rawBody.includes('RECENT messages only')) {
          summary = `${SUMMARY_HEAD}\n\nSummary of parts 5 to 9. Ids: ${pointerKeys(request.rawBody).join(', ')}.`;
          return { text: summary };
        }
        return { text: 'Reading on.' };
      },
    });
    const history: Json[] = [task()];
    const partStart: number[] = [];
    for (let part = 0; part < 10; part += 1) {
      if (part > 0) history.push({ role: 'user', content: [{ type: 'text', text: `Next, part ${part}.` }] });
      partStart.push(history.length - (part > 0 ? 1 : 1));
      history.push(...steps(part * 3, part * 3 + 3), {
        role: 'assistant',
        content: [{ type: 'text', text: `Part ${part} done.` }],
      });
      await (await fixture.post('messages', claudeBody(history), { headers: HEADERS })).text();
    }
    const prompt =
      'Please provide your summary based on the RECENT messages only (after the retained earlier context).';
    const compaction = await fixture.post(
      'messages',
      claudeBody([...history, { role: 'user', content: [{ type: 'text', text: prompt }] }]),
      { headers: HEADERS },
    );
    await compaction.text();
    const session = storeSessionOf(compaction);
    const quoted = pointerKeys(upstreamBody(fixture.upstream.requests.length - 1).raw);
    // Parts 0-4 kept as they were, parts 5-9 replaced by the summary; then the work goes on.
    const kept = history.slice(0, partStart[5]);
    const after = [
      ...kept,
      { role: 'user', content: [{ type: 'text', text: summary }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Understood.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Go on with module 3.' }] },
      ...steps(100, 104, 'N'),
    ];
    const next = await fixture.post('messages', claudeBody(after), { headers: HEADERS });
    expect(next.status).toBe(200);
    await next.text();
    const raw = upstreamBody(fixture.upstream.requests.length - 1).raw;
    for (let turn = 15; turn < 30; turn += 1) expect(raw, `read ${turn}`).not.toContain(escaped(turn));
    const expanded = await expandKeys(fixture.store, session, quoted);
    const stale: string[] = [];
    for (const [key, text] of expanded)
      for (let turn = 15; turn < 30; turn += 1)
        if (text?.includes(`module${turn}.ts (A)`)) stale.push(`${key}→module${turn}`);
    expect(next.headers.get('x-selfgc-session')).toBe(compaction.headers.get('x-selfgc-session'));
    expect(stale).toEqual([]);
  });
});
