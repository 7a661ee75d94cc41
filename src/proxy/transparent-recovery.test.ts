import { afterEach, describe, expect, it } from 'vitest';
import { THINKING_BINDING_BETA } from '../adapters/index.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { countMessageTokens } from '../core/ledger.js';
import { recoveryKeyOf } from '../core/session-state.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { ScriptedRequest } from '../testing/scripted-reply.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { responsesDialect } from './responses-dialect.js';
import { hashApiKey } from './session-identity.js';
import { UNFINISHED_TURN_NOTE } from './stream-merger.js';
import { conversationBody, fileContent, type WireRoute } from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import {
  type ExpandPage,
  expandKeys,
  filesOutOf,
  lastToolResult,
  pointerKeys,
  readExpandPage,
  storeSessionOf,
} from './testing/recovery-pointers.js';
import { until } from './testing/until.js';
import { answerInternalCall, EARLIER_RESULT_NOTE, EXPAND_TOOL, SEARCH_TOOL } from './transparent-recovery.js';
import type { WireDialect } from './wire-dialect.js';

const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];
const TURNS = 8;
/** The proxy fixture's window. */
const WINDOW = 2000;
const DIALECTS: Record<WireRoute, WireDialect> = {
  chat: chatDialect,
  responses: responsesDialect,
  messages: anthropicMessagesDialect,
};
const PARAMETERS = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
const DESCRIPTION = 'Read a file of the project and return its whole text, line by line.';
/** One client tool, as each route defines it. */
const TOOL_DEFINITIONS: Record<WireRoute, Record<string, unknown>> = {
  chat: {
    type: 'function',
    function: { name: 'read_file', description: DESCRIPTION, parameters: PARAMETERS },
  },
  responses: { type: 'function', name: 'read_file', description: DESCRIPTION, parameters: PARAMETERS },
  messages: { name: 'read_file', description: DESCRIPTION, input_schema: PARAMETERS },
};
let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

/** Requests after the first of a recovery carry the scripted model's own call ids in their history. */
function isRecoveryRound(request: ScriptedRequest): boolean {
  return request.rawBody.includes('_scripted0');
}

/** The first recovery pointer the upstream was shown: any key, an output's or a span's. */
function pointerIn(request: ScriptedRequest): string {
  const [key] = pointerKeys(request.rawBody);
  if (key === undefined) throw new Error('no recovery pointer in the request');
  return key;
}

/** Indexes of the file contents a request carries in full. */
function filesIn(request: ScriptedRequest | undefined): number[] {
  const raw = request?.rawBody ?? '';
  return Array.from({ length: TURNS }, (_, turn) => turn).filter((turn) =>
    raw.includes(JSON.stringify(fileContent(turn)).slice(1, -1)),
  );
}

/** The conversation's tokens in a request body, counted as the governor counts a view. */
function measured(route: WireRoute, body: unknown): number {
  return DIALECTS[route]
    .readTranscript(body as Record<string, unknown>)
    .reduce((sum, message) => sum + countMessageTokens(approximateTokenCounter, message), 0);
}

describe('transparent recovery', () => {
  it.each(ROUTES)(
    '%s: an expand round trip is answered from the sidecar and hidden from the client',
    async (route) => {
      fixture = await startProxyFixture({
        script: (request) =>
          request.index === 0
            ? {
                text: 'Let me look again.',
                toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }],
              }
            : { text: 'Found it: value0_3 is the culprit.' },
      });
      const response = await fixture.post(route, conversationBody(route, { turns: TURNS }));
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toContain('Found it: value0_3 is the culprit.');
      expect(text).not.toContain('selfgc_');
      expect(text).not.toContain('Let me look again.');

      const [first, second] = fixture.upstream.requests;
      expect(fixture.upstream.requests).toHaveLength(2);
      expect(first?.rawBody).toContain(EXPAND_TOOL);
      // The model asked for the first pointer it was shown, whatever it names (an output or the
      // work after a request): the answer is the sidecar's exact text from its start, whole or
      // the first page of it, and with it come back into the model's view the files that page
      // holds, and only those.
      const key = pointerIn(first!);
      const expanded = (await expandKeys(fixture.store, storeSessionOf(response), [key])).get(key);
      expect(expanded).toBeDefined();
      const page = readExpandPage(lastToolResult(second?.body) ?? '');
      expect(page.start).toBe(0);
      expect(page.total).toBe(expanded!.length);
      expect(page.text).toBe(expanded!.slice(0, page.end));
      const recovered = filesIn(second).filter((turn) => !filesIn(first).includes(turn));
      const heldByPage = filesOutOf(first!.rawBody, TURNS).filter((turn) =>
        page.text.includes(fileContent(turn)),
      );
      expect(recovered).toEqual(heldByPage);
      // The request after the expand stays in the window, and the headers say what it carried:
      // the view's tokens plus what recovery appended, counted as the governor counts.
      expect(measured(route, second?.body)).toBeLessThanOrEqual(WINDOW);
      expect(fixture.logs).toHaveLength(1);
      const recoveredTokens = measured(route, second?.body) - measured(route, first?.body);
      expect(fixture.logs[0]).toMatchObject({ status: 200, recoveryCalls: 1, recoveredTokens });
      expect(Number(response.headers.get('x-selfgc-tokens-after'))).toBe(fixture.logs[0]?.tokensAfter);
      const samples = await fixture.metrics();
      expect(sampleSum(samples, 'selfgc_proxy_recovery_calls_total', { tool: EXPAND_TOOL })).toBe(1);
      expect(sampleSum(samples, 'selfgc_proxy_upstream_seconds_count')).toBe(2);
    },
  );

  it.each(ROUTES)(
    '%s: after recovery the tokens sent still count the whole prompt, what recovery appended on top',
    async (route) => {
      // A tool definition beside the messages, as every agent sends: part of the prompt too.
      const body = { ...conversationBody(route, { turns: TURNS }), tools: [TOOL_DEFINITIONS[route]] };
      const plain = await startProxyFixture({ script: () => ({ text: 'Nothing to recover.' }) });
      let unrecovered: number;
      try {
        const response = await plain.post(route, body);
        expect(response.status).toBe(200);
        unrecovered = Number(response.headers.get('x-selfgc-tokens-after'));
      } finally {
        await plain.close();
      }
      fixture = await startProxyFixture({
        script: (request) =>
          request.index === 0
            ? { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }] }
            : { text: 'Recovered.' },
      });
      const response = await fixture.post(route, body);
      expect(await response.text()).toContain('Recovered.');
      const [entry] = fixture.logs;
      expect(entry?.recoveredTokens).toBeGreaterThan(0);
      // The same view as without recovery (the system prompt and tools beside the messages
      // included), plus what recovery appended.
      expect(entry?.tokensAfter).toBe(unrecovered + entry!.recoveredTokens!);
      expect(Number(response.headers.get('x-selfgc-tokens-after'))).toBe(entry?.tokensAfter);
    },
  );

  it('counts what went upstream when a later round finds no room and is not sent', async () => {
    fixture = await startProxyFixture({
      script: (request) =>
        isRecoveryRound(request)
          ? {
              // More calls than the room left could answer even with a note each.
              text: 'Enough.',
              toolCalls: Array.from({ length: 200 }, () => ({
                name: EXPAND_TOOL,
                arguments: { id: pointerIn(request) },
              })),
            }
          : { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }] },
    });
    const response = await fixture.post('chat', conversationBody('chat', { turns: TURNS }));
    expect(await response.text()).toContain('Enough.');
    const [first, second] = fixture.upstream.requests;
    expect(fixture.upstream.requests).toHaveLength(2);
    const recoveredTokens = measured('chat', second?.body) - measured('chat', first?.body);
    expect(fixture.logs[0]).toMatchObject({ recoveryCalls: 1, recoveredTokens });
  });

  it('answers search_context with matching object ids and snippets', async () => {
    fixture = await startProxyFixture({
      script: (request) =>
        request.index === 0
          ? { toolCalls: [{ name: SEARCH_TOOL, arguments: { query: 'value1_30' } }] }
          : { text: 'ok' },
    });
    const response = await fixture.post('messages', conversationBody('messages', { turns: TURNS }));
    expect(await response.json()).toMatchObject({ content: [{ type: 'text', text: 'ok' }] });
    const second = fixture.upstream.requests[1]?.body as { messages: Array<{ content: unknown }> };
    const [result] = second.messages.at(-1)!.content as Array<{ type: string; content: string }>;
    expect(result?.type).toBe('tool_result');
    // One `<id>: <snippet>` line a hit, best first, whatever granularity the sidecar keeps (an
    // output, or the work after a request): each id is a payload of this session that matches the
    // query, and its snippet is cut from that payload's text.
    const hits = (result?.content ?? '').split('\n').map((line) => /^(\S+): (.+)$/.exec(line));
    expect(hits.length).toBeGreaterThan(0);
    const records = await fixture.store.listPayloads(storeSessionOf(response));
    const flat = (text: string) => text.replace(/\s+/g, ' ');
    for (const hit of hits) {
      const record = records.find((candidate) => recoveryKeyOf(candidate.objectId) === hit?.[1]);
      expect(record, hit?.[0]).toBeDefined();
      expect(record!.searchText).toMatch(/\bvalue1\b|\b30\b/);
      const snippet = hit![2]!.replace(/^…|…$/g, '');
      expect(flat(record!.searchText)).toContain(snippet);
      expect(snippet).toMatch(/\bvalue1\b|\b30\b/);
    }
    // The best hit holds the very identifier searched for.
    expect(records.find((record) => recoveryKeyOf(record.objectId) === hits[0]?.[1])?.searchText).toContain(
      'value1_30',
    );
  });

  it('stops after three rounds and forbids tools on the last call', async () => {
    fixture = await startProxyFixture({
      script: (request) => ({ toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }] }),
    });
    const response = await fixture.post('chat', conversationBody('chat', { turns: TURNS }));
    const bodies = fixture.upstream.requests.map((request) => request.body as Record<string, unknown>);
    expect(bodies).toHaveLength(4);
    expect(bodies.map((body) => body.tool_choice)).toEqual([undefined, undefined, undefined, 'none']);
    // Each page fills the room: an earlier page gives way to the later one, and every request fits.
    for (const body of bodies.slice(1)) expect(lastToolResult(body)).not.toMatch(/no room left/);
    const results = (body: Record<string, unknown>) =>
      (body.messages as Array<{ role: string; content: unknown }>)
        .filter((message) => message.role === 'tool')
        .map((message) => message.content);
    expect(results(bodies[2]!).slice(-2)[0]).toBe(EARLIER_RESULT_NOTE);
    expect(results(bodies[3]!).slice(-3, -1)).toEqual([EARLIER_RESULT_NOTE, EARLIER_RESULT_NOTE]);
    for (const body of bodies) expect(measured('chat', body)).toBeLessThanOrEqual(WINDOW);
    // The scripted model ignores tool_choice: its last call does not reach the client.
    const answer = (await response.json()) as { choices: Array<{ message: object }> };
    expect(answer.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant' } });
    expect(answer.choices[0]?.message).not.toHaveProperty('tool_calls');
  });

  // A client that forces a call must get one: the last round keeps its choice instead of turning
  // tools off, and a proxy call made anyway still never reaches it.
  it.each([
    ['messages', { type: 'any' }],
    ['messages', { type: 'tool', name: 'read_file' }],
    ['chat', 'required'],
    ['chat', { type: 'function', function: { name: 'read_file' } }],
    [
      'chat',
      {
        type: 'allowed_tools',
        allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'read_file' } }] },
      },
    ],
    ['responses', 'required'],
    ['responses', { type: 'function', name: 'read_file' }],
    [
      'responses',
      { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'read_file' }] },
    ],
  ] as const)(
    '%s: the last round of a client that forces a call (%j) still may call its tools',
    async (route, choice) => {
      const readFile = { name: 'read_file', arguments: { path: 'src/module3.ts' } };
      fixture = await startProxyFixture({
        script: (request) =>
          request.index < 3
            ? { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }] }
            : { toolCalls: [readFile] },
      });
      const body = {
        ...conversationBody(route, { turns: TURNS }),
        tools: [TOOL_DEFINITIONS[route]],
        tool_choice: choice,
      };
      const response = await fixture.post(route, body);
      expect(response.status).toBe(200);
      const choices = fixture.upstream.requests.map(
        (request) => (request.body as { tool_choice?: unknown }).tool_choice,
      );
      expect(choices).toEqual([choice, choice, choice, choice]);
      expect(DIALECTS[route].toolCallsOf(await response.json()).map((call) => call.name)).toEqual([
        'read_file',
      ]);
    },
  );

  it.each(ROUTES)(
    '%s: a turn calling a proxy tool and a client tool gives the client only its own call',
    async (route) => {
      const readFile = { name: 'read_file', arguments: { path: 'src/module3.ts' } };
      fixture = await startProxyFixture({
        script: (request) =>
          request.index === 0
            ? { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }, readFile] }
            : { text: 'Reading it again.', toolCalls: [readFile] },
      });
      const response = await fixture.post(route, conversationBody(route, { turns: TURNS }));
      const text = await response.text();
      expect(text).toContain('read_file');
      expect(text).toContain('_scripted0001_0');
      expect(text).not.toContain('selfgc_');
      expect(fixture.upstream.requests).toHaveLength(2);
      // The proxy's call went upstream with its result; the client call of that turn did not.
      const second = fixture.upstream.requests[1]!.rawBody;
      expect(second).toContain('_scripted0000_0');
      expect(second).not.toContain('_scripted0000_1');
    },
  );

  /** A Messages conversation as a client with thinking on sends it: each model turn opens with its thinking. */
  function withThinking(body: Record<string, unknown>): Record<string, unknown> {
    const messages = (body.messages as Array<{ role: string; content: unknown }>).map((message, index) =>
      message.role !== 'assistant'
        ? message
        : {
            ...message,
            content: [
              { type: 'thinking', thinking: `Turn ${index}.`, signature: `client-signature-${index}` },
              ...(Array.isArray(message.content)
                ? message.content
                : [{ type: 'text', text: message.content }]),
            ],
          },
    );
    return { ...body, thinking: { type: 'enabled', budget_tokens: 1024 }, messages };
  }

  // With thinking on, the API refuses a last assistant message (before the tool results) that does
  // not open with a thinking block. A round's answer continues the turn the first one opened, and
  // without interleaved thinking it opens with none: the client must get the turn's thinking.
  it('messages: with thinking on, the answer after a round keeps the thinking that opened the turn', async () => {
    const readFile = { name: 'read_file', arguments: { path: 'src/module3.ts' } };
    fixture = await startProxyFixture({
      script: (request) =>
        request.index === 0
          ? {
              thinking: 'The fold hides module 3; expand it.',
              toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }],
            }
          : { text: 'Reading it again.', toolCalls: [readFile] },
    });
    const body = {
      ...withThinking(conversationBody('messages', { turns: TURNS })),
      tools: [TOOL_DEFINITIONS.messages],
    };
    const response = await fixture.post('messages', body);
    expect(response.status).toBe(200);
    const answer = (await response.json()) as {
      content: Array<Record<string, unknown>>;
      stop_reason: string;
    };
    expect(answer.content.map((block) => block.type)).toEqual(['thinking', 'text', 'tool_use']);
    // The block the model wrote, whole (its signature too), as it went upstream in the round.
    const opened = (
      fixture.upstream.requests[1]!.body as { messages: Array<{ content: unknown[] }> }
    ).messages.at(-2)!.content[0];
    expect(answer.content[0]).toEqual(opened);
    expect(answer.content[0]).toMatchObject({ thinking: 'The fold hides module 3; expand it.' });
    expect(answer.stop_reason).toBe('tool_use');
  });

  // A turn the API cut short is no turn that waits for its calls' results: a refusal (the client
  // must take the refused turn back before it goes on, and would be refused again if the proxy
  // went on), or the output limit, which may have cut the call itself. The client gets it as the
  // API ended it, without the proxy's call, and no round goes on.
  it.each([false, true])(
    'messages: an answer cut short by the output limit is not continued (streamed: %s)',
    async (stream) => {
      fixture = await startProxyFixture({
        script: (request) => ({
          text: 'Expanding the fold.',
          toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }],
          stopReason: 'length',
        }),
      });
      const response = await fixture.post('messages', conversationBody('messages', { turns: TURNS, stream }));
      const text = await response.text();
      expect(response.status).toBe(200);
      expect(fixture.upstream.requests).toHaveLength(1);
      expect(text).toContain('max_tokens');
      expect(text).not.toContain('selfgc_');
    },
  );

  // The same on the OpenAI routes: a Chat turn that finished for `length` or `content_filter`, a
  // Responses one left `incomplete` (the output limit, the content filter).
  it.each([
    ['chat', false, '"finish_reason":"length"'],
    ['chat', true, '"finish_reason":"length"'],
    ['responses', false, '"status":"incomplete"'],
    ['responses', true, '"status":"incomplete"'],
  ] as const)(
    '%s: an answer cut short by the output limit is not continued (streamed: %s)',
    async (route, stream, cut) => {
      fixture = await startProxyFixture({
        script: (request) => ({
          text: 'Expanding the fold.',
          toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }],
          stopReason: 'length',
        }),
      });
      const response = await fixture.post(route, conversationBody(route, { turns: TURNS, stream }));
      const text = await response.text();
      expect(response.status).toBe(200);
      expect(fixture.upstream.requests).toHaveLength(1);
      expect(text).toContain(cut);
      expect(text).not.toContain('selfgc_');
    },
  );

  it('messages: a refused answer is not continued, and the client learns it was refused', async () => {
    fixture = await startProxyFixture({
      script: (request) => ({
        raw: {
          body: {
            id: 'msg_refused',
            type: 'message',
            role: 'assistant',
            model: 'claude-sonnet-4-5',
            content: [
              { type: 'text', text: 'Expanding the fold.' },
              { type: 'tool_use', id: 'toolu_r1', name: EXPAND_TOOL, input: { id: pointerIn(request) } },
            ],
            stop_reason: 'refusal',
            stop_sequence: null,
            stop_details: { type: 'refusal', category: 'cyber', explanation: 'Declined.' },
            usage: { input_tokens: 900, output_tokens: 20 },
          },
        },
      }),
    });
    const response = await fixture.post('messages', conversationBody('messages', { turns: TURNS }));
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { content: Array<{ type: string }>; stop_reason: string };
    expect(fixture.upstream.requests).toHaveLength(1);
    expect(answer.stop_reason).toBe('refusal');
    expect(answer.content.map((block) => block.type)).toEqual(['text']);
  });

  // The rounds used up, or no room for another: the last answer still calls the proxy.
  it('messages: an answer whose last round only called the proxy does not end in thinking', async () => {
    fixture = await startProxyFixture({
      script: (request) => ({
        ...(request.index === 0 ? { thinking: 'The fold hides module 3; expand it.' } : {}),
        toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }],
      }),
    });
    const body = withThinking(conversationBody('messages', { turns: TURNS }));
    const response = await fixture.post('messages', body);
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { content: Array<{ type: string; text?: string }> };
    expect(fixture.upstream.requests.length).toBeGreaterThan(1);
    // It opens with the turn's thinking and ends in a note, not in thinking, nor empty.
    expect(answer.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(answer.content[1]?.text).toBe(UNFINISHED_TURN_NOTE);
    expect(JSON.stringify(answer)).not.toContain('selfgc_');
  });

  // From Claude 5.1 on, a thinking block is bound to what came before it. The model thinks in each
  // round, and a later round's room may take an earlier result's place, which changes what the
  // thinking since followed: each round asks the API to drop what that invalidated, though the
  // first body, with no thinking in it yet, needed nothing.
  it.each([false, true])(
    'messages: rounds on a model that binds thinking ask to drop what a round invalidated (streamed: %s)',
    async (stream) => {
      fixture = await startProxyFixture({
        script: (request) => ({
          thinking: `Page ${request.index} read; on to the next.`,
          toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }],
        }),
      });
      const body = {
        ...conversationBody('messages', { turns: TURNS, model: 'claude-opus-5-5', stream }),
        thinking: { type: 'adaptive' },
      };
      const response = await fixture.post('messages', body);
      const text = await response.text();
      expect(response.status).toBe(200);
      expect(text).not.toContain('bound to a different conversation');
      expect(text).not.toContain('"type":"error"');
      const requests = fixture.upstream.requests;
      expect(requests).toHaveLength(4);
      const thinkingOf = (index: number) => (requests[index]!.body as { thinking?: unknown }).thinking;
      expect(thinkingOf(0)).toEqual({ type: 'adaptive' });
      expect(requests[0]!.headers['anthropic-beta']).toBeUndefined();
      // The last round's room took the first round's result: the thinking after it followed that.
      expect(requests[3]!.rawBody).toContain(JSON.stringify(EARLIER_RESULT_NOTE));
      for (const index of [1, 2, 3]) {
        expect(thinkingOf(index)).toEqual({
          type: 'adaptive',
          block_binding: { prefix_mismatch_behavior: 'drop_block' },
        });
        expect(requests[index]!.headers['anthropic-beta']).toBe(THINKING_BINDING_BETA);
      }
    },
  );

  it('chat: an answer whose last round, after a round, says nothing and calls nothing ends in the note', async () => {
    fixture = await startProxyFixture({
      script: (request) =>
        request.index === 0
          ? { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }] }
          : {},
    });
    const response = await fixture.post('chat', conversationBody('chat', { turns: TURNS }));
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { choices: Array<{ message: { content: unknown } }> };
    expect(fixture.upstream.requests).toHaveLength(2);
    expect(answer.choices[0]?.message.content).toBe(UNFINISHED_TURN_NOTE);
  });

  it.each([
    ['keeps items', {}],
    ['keeps none (store: false)', { store: false }],
  ])(
    'responses: when the provider %s, a last round that still calls the proxy leaves no reasoning alone',
    async (_, store) => {
      fixture = await startProxyFixture({
        script: (request) => ({ toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request) } }] }),
      });
      const body = {
        ...conversationBody('responses', { turns: TURNS }),
        include: ['reasoning.encrypted_content'],
        ...store,
      };
      const response = await fixture.post('responses', body);
      expect(response.status).toBe(200);
      const answer = (await response.json()) as { output: Array<{ type: string }> };
      expect(fixture.upstream.requests.length).toBeGreaterThan(1);
      expect(JSON.stringify(answer)).not.toContain('selfgc_');
      // A reasoning item passed back by id needs the item that followed it: the proxy's call.
      expect(answer.output.map((item) => item.type)).toEqual('store' in store ? ['reasoning'] : []);
    },
  );

  it('adds no tools when turned off, nor to a chat request for several choices, and then promises no route', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'ok' }), proxy: { recovery: false } });
    await fixture.post('messages', conversationBody('messages', { turns: TURNS }));
    // Folds still name what they hold, but promise no expand the client cannot make.
    const plain = /kept as \\"((?:function|conversation):[^"\\]+)\\"/;
    expect(fixture.upstream.requests[0]?.rawBody).toMatch(plain);
    expect(fixture.upstream.requests[0]?.rawBody).not.toContain('expand(');
    expect(fixture.upstream.requests[0]?.rawBody).not.toContain(EXPAND_TOOL);
    await fixture.close();
    fixture = await startProxyFixture({ script: () => ({ text: 'ok' }) });
    await fixture.post('chat', { ...conversationBody('chat', { turns: TURNS }), n: 2 });
    await fixture.post('chat', { ...conversationBody('chat', { turns: TURNS }), n: 1 });
    expect(fixture.upstream.requests.map((request) => request.rawBody.includes(EXPAND_TOOL))).toEqual([
      false,
      true,
    ]);
    expect(fixture.upstream.requests[0]?.rawBody).toMatch(plain);
    expect(fixture.upstream.requests[0]?.rawBody).not.toContain('expand(');
    expect(fixture.upstream.requests[1]?.rawBody).toContain('expand(');
  });

  it('adds no tools to a Responses request run in the background, which the client reads back itself', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'ok' }) });
    const body = conversationBody('responses', { turns: TURNS });
    await fixture.post('responses', { ...body, background: true });
    await fixture.post('responses', { ...body, background: false });
    expect(fixture.upstream.requests.map((request) => request.rawBody.includes(EXPAND_TOOL))).toEqual([
      false,
      true,
    ]);
    expect(fixture.upstream.requests[0]?.rawBody).not.toContain('expand(');
  });

  it('adds no tools to a Messages thread, whose continues inherit them and go upstream unanswered by the proxy', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'ok' }) });
    const body = conversationBody('messages', { turns: TURNS });
    // Claude Code's message threads: the server keeps the tools of the request that created the
    // thread, and a continue (sent as it came, `server-state`) is answered with them.
    await fixture.post('messages', { ...body, thread: { type: 'create' } });
    await fixture.post('messages', body);
    expect(fixture.upstream.requests.map((request) => request.rawBody.includes(EXPAND_TOOL))).toEqual([
      false,
      true,
    ]);
    expect(fixture.upstream.requests[0]?.rawBody).not.toContain('expand(');
  });

  it.each([false, true])(
    'pages through a payload over the rounds of one request, each page in the same room (streamed: %s)',
    async (stream) => {
      const window = 3000;
      fixture = await startProxyFixture({
        window,
        script: (request) => {
          const offset = isRecoveryRound(request)
            ? readExpandPage(lastToolResult(request.body) ?? '').next
            : 0;
          if (offset === undefined) return { text: 'read it all' };
          return { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request), offset } }] };
        },
      });
      const response = await fixture.post('chat', conversationBody('chat', { turns: TURNS, stream }));
      expect(await response.text()).toContain(stream ? 'data: [DONE]' : '"finish_reason":"stop"');
      const bodies = fixture.upstream.requests.map((request) => request.body as Record<string, unknown>);
      // Three rounds at most: the first body, then one per page.
      expect(bodies).toHaveLength(4);
      const pages = bodies.slice(1).map((body) => readExpandPage(lastToolResult(body) ?? ''));
      // Each page starts where the one before it ended, and is about as long: the pages before it
      // gave way instead of filling the room.
      expect(pages.map((page) => page.start)).toEqual([0, pages[0]!.end, pages[1]!.end]);
      expect(pages[2]!.next).toBeDefined();
      for (const page of pages.slice(1)) expect(page.text.length).toBeGreaterThan(pages[0]!.text.length / 2);
      const results = (body: Record<string, unknown>) =>
        (body.messages as Array<{ role: string; content: unknown }>)
          .filter((message) => message.role === 'tool')
          .map((message) => message.content);
      // A page is as long as the room kept for recovery: the view's slack does not make one longer.
      for (const page of pages.slice(1)) expect(page.text.length).toBeLessThan(pages[0]!.text.length * 1.2);
      expect(results(bodies[3]!).at(-3)).toBe(EARLIER_RESULT_NOTE);
      for (const body of bodies) expect(measured('chat', body)).toBeLessThanOrEqual(window);
      const key = pointerIn(fixture.upstream.requests[0]!);
      const expanded = (await expandKeys(fixture.store, storeSessionOf(response), [key])).get(key) ?? '';
      expect(pages.map((page) => page.text).join('')).toBe(expanded.slice(0, pages[2]!.end));
    },
  );

  it.each([false, true])(
    'pages a payload larger than the room over later requests, each inside the window (streamed: %s)',
    async (stream) => {
      const window = 6000;
      let offset = 0;
      fixture = await startProxyFixture({
        window,
        script: (request) =>
          isRecoveryRound(request)
            ? { text: 'noted' }
            : { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerIn(request), offset } }] },
      });
      const pages: ExpandPage[] = [];
      let session = '';
      for (let turn = 0; turn < 6 && (turn === 0 || pages.at(-1)?.next !== undefined); turn += 1) {
        const sent = fixture.upstream.requests.length;
        const response = await fixture.post(
          'messages',
          conversationBody('messages', { turns: TURNS, stream }),
        );
        await response.text();
        session = storeSessionOf(response);
        const [question, recovery] = fixture.upstream.requests.slice(sent);
        const page = readExpandPage(lastToolResult(recovery?.body) ?? '');
        expect(page.start).toBe(offset);
        pages.push(page);
        offset = page.next ?? page.end;
        expect(measured('messages', question?.body)).toBeLessThanOrEqual(window);
        expect(measured('messages', recovery?.body)).toBeLessThanOrEqual(window);
        await until(() => fixture!.logs.length === turn + 1);
        const recoveredTokens = measured('messages', recovery?.body) - measured('messages', question?.body);
        expect(fixture.logs[turn]?.recoveredTokens).toBe(recoveredTokens);
      }
      // More than one page, each ending where the next starts, together the exact payload.
      expect(pages.length).toBeGreaterThan(1);
      expect(pages.at(-1)?.next).toBeUndefined();
      const key = pointerIn(fixture.upstream.requests[0]!);
      const expanded = (await expandKeys(fixture.store, session, [key])).get(key);
      expect(pages.map((page) => page.text).join('')).toBe(expanded);
    },
  );

  it("never answers from another key's sidecar", async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'ok' }) });
    const session = { 'x-selfgc-session': 'same-name' };
    await fixture.post('chat', conversationBody('chat', { turns: TURNS }), {
      apiKey: 'sk-a',
      headers: session,
    });
    const id = pointerIn(fixture.upstream.requests[0]!);
    const governor = createGovernor({ provider: 'openai', window: 2000, store: fixture.store });
    const call = { id: 'c1', name: EXPAND_TOOL, arguments: JSON.stringify({ id }) };
    const namespaced = (key: string) =>
      `${hashApiKey(new Headers({ authorization: `Bearer ${key}` }))}:same-name`;
    const room = { tokens: 100_000, counter: approximateTokenCounter };
    expect(await answerInternalCall(governor, namespaced('sk-a'), call, room)).toContain('computeValue');
    expect(await answerInternalCall(governor, namespaced('sk-b'), call, room)).toBe(
      `No object ${id} is kept for this conversation.`,
    );
  });
});
