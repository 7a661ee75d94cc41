import { afterEach, describe, expect, it } from 'vitest';
import { createGovernor } from '../core/governor/create-governor.js';
import { recoveryKeyOf } from '../core/session-state.js';
import type { ScriptedRequest } from '../testing/scripted-reply.js';
import { hashApiKey } from './session-identity.js';
import { conversationBody, fileContent, type WireRoute } from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { expandKeys, filesOutOf, pointerKeys, storeSessionOf } from './testing/recovery-pointers.js';
import { answerInternalCall, EXPAND_TOOL, SEARCH_TOOL } from './transparent-recovery.js';

const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];
const TURNS = 8;
let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

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
      // work after a request): the answer is the sidecar's exact text, and with it the files
      // that pointer held come back into the model's view, and only those.
      const key = pointerIn(first!);
      const expanded = (await expandKeys(fixture.store, storeSessionOf(response), [key])).get(key);
      expect(expanded).toBeDefined();
      expect(second?.rawBody).toContain(JSON.stringify(expanded).slice(1, -1));
      const recovered = filesIn(second).filter((turn) => !filesIn(first).includes(turn));
      expect(recovered.length).toBeGreaterThan(0);
      const heldByKey = filesOutOf(first!.rawBody, TURNS).filter((turn) =>
        expanded!.includes(fileContent(turn)),
      );
      expect(recovered).toEqual(heldByKey);
      expect(fixture.logs).toHaveLength(1);
      expect(fixture.logs[0]).toMatchObject({ status: 200, recoveryCalls: 1 });
      const samples = await fixture.metrics();
      expect(sampleSum(samples, 'selfgc_proxy_recovery_calls_total', { tool: EXPAND_TOOL })).toBe(1);
      expect(sampleSum(samples, 'selfgc_proxy_upstream_seconds_count')).toBe(2);
    },
  );

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
    await fixture.post('chat', conversationBody('chat', { turns: TURNS }));
    const bodies = fixture.upstream.requests.map((request) => request.body as Record<string, unknown>);
    expect(bodies).toHaveLength(4);
    expect(bodies.map((body) => body.tool_choice)).toEqual([undefined, undefined, undefined, 'none']);
  });

  it('leaves answers that also call client tools to the client', async () => {
    fixture = await startProxyFixture({
      script: (request) => ({
        toolCalls: [
          { name: EXPAND_TOOL, arguments: { id: pointerIn(request) } },
          { name: 'read_file', arguments: { path: 'src/x.ts' } },
        ],
      }),
    });
    const response = await fixture.post('responses', conversationBody('responses', { turns: TURNS }));
    expect(await response.text()).toContain('read_file');
    expect(fixture.upstream.requests).toHaveLength(1);
  });

  it('adds no tools when turned off, and none to streaming requests', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'ok' }) });
    await (await fixture.post('chat', conversationBody('chat', { turns: TURNS, stream: true }))).text();
    expect(fixture.upstream.requests[0]?.rawBody).toContain('expand(');
    expect(fixture.upstream.requests[0]?.rawBody).not.toContain(EXPAND_TOOL);
    await fixture.close();
    fixture = await startProxyFixture({ script: () => ({ text: 'ok' }), proxy: { recovery: false } });
    await fixture.post('messages', conversationBody('messages', { turns: TURNS }));
    expect(fixture.upstream.requests[0]?.rawBody).toContain('expand(');
    expect(fixture.upstream.requests[0]?.rawBody).not.toContain(EXPAND_TOOL);
  });

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
    expect(await answerInternalCall(governor, namespaced('sk-a'), call)).toContain('computeValue');
    expect(await answerInternalCall(governor, namespaced('sk-b'), call)).toBe(
      `No object ${id} is kept for this conversation.`,
    );
  });
});
