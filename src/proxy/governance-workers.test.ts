import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SelfGcError } from '../core/errors.js';
import { readSessionState, sidecarKeyOf } from '../core/session-state.js';
import { defaultEntryModel } from '../core/valuator/entry-model.js';
import { startScriptedUpstream } from '../testing/scripted-upstream.js';
import { chatDialect } from './chat-dialect.js';
import { createProxy } from './create-proxy.js';
import { createGovernanceWorkers, type GovernanceWorkerData, transferOf } from './governance-workers.js';
import type { ProxyLogEntry } from './proxy-log.js';
import { createProxyMetrics } from './proxy-metrics.js';
import { conversationBody, fileContent, type WireRoute } from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { pointerKeys, storeSessionOf } from './testing/recovery-pointers.js';
import { EXPAND_TOOL } from './transparent-recovery.js';
import { startWorkerThread, type WorkerThread } from './worker-thread.js';

const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];
let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

describe('governance in worker threads', () => {
  it.each(ROUTES)(
    '%s: the worker governs, commits to the shared store, and the proxy tells it',
    async (route) => {
      fixture = await startProxyFixture({ workers: 1, script: () => ({ text: 'Reading on.' }) });
      const response = await fixture.post(route, conversationBody(route, { turns: 8 }));
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('Reading on.');
      const commitId = response.headers.get('x-selfgc-commit');
      expect(commitId).toMatch(/^c1-/);
      expect(Number(response.headers.get('x-selfgc-tokens-after'))).toBeLessThan(
        Number(response.headers.get('x-selfgc-tokens-before')),
      );
      expect(response.headers.get('x-selfgc-session')).toMatch(/^auto-[0-9a-f]{32}$/);
      const forwarded = fixture.upstream.requests[0]?.rawBody ?? '';
      expect(forwarded).not.toContain(JSON.stringify(fileContent(0)).slice(1, -1));
      expect(forwarded).toContain(EXPAND_TOOL);

      // The worker wrote through its own connection; this one reads the same file.
      const session = storeSessionOf(response);
      const payloads = await fixture.store.listPayloads(session);
      expect(payloads.length).toBeGreaterThan(0);
      expect(payloads.every((record) => record.commitId === commitId)).toBe(true);
      expect(fixture.logs[0]).toMatchObject({
        status: 200,
        commit: commitId,
        governance: expect.stringMatching(/^(committed|fallback)$/),
      });
      const samples = await fixture.metrics();
      expect(sampleSum(samples, 'selfgc_proxy_commits_total')).toBe(1);
      expect(sampleSum(samples, 'selfgc_proxy_planner_seconds_count')).toBe(1);
    },
  );

  it('folds with the valuator model it was given', async () => {
    // A model that ranks each message's entries against their kind, the least telling first:
    // without one (`none`), an index lists them by kind.
    const base = defaultEntryModel();
    const againstKind = {
      ...base,
      weights: base.features.map((name) => (name === 'kindWeight' ? -5 : 0)),
      bias: 0,
    };
    const forwarded: string[] = [];
    for (const entryModel of ['none' as const, againstKind]) {
      fixture = await startProxyFixture({
        workers: 1,
        // Room for the indexes to hold entries, whose order the model sets.
        window: 4000,
        script: () => ({ text: 'Reading on.' }),
        entryModel,
      });
      const response = await fixture.post('chat', conversationBody('chat', { turns: 8 }));
      expect(response.headers.get('x-selfgc-commit')).toMatch(/^c1-/);
      forwarded.push(fixture.upstream.requests[0]!.rawBody);
      await fixture.close();
      fixture = undefined;
    }
    const [plain, modelled] = forwarded as [string, string];
    expect(modelled).not.toBe(plain);
    expect(modelled.length).toBeGreaterThan(0);
  });

  it('answers recovery calls from the worker’s sidecar', async () => {
    fixture = await startProxyFixture({
      workers: 1,
      script: (request) =>
        request.index === 0
          ? {
              text: 'Let me look again.',
              toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointerKeys(request.rawBody)[0] } }],
            }
          : { text: 'Found it.' },
    });
    const response = await fixture.post('chat', conversationBody('chat', { turns: 8 }));
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('Found it.');
    expect(text).not.toContain('selfgc_');
    const [first, second] = fixture.upstream.requests;
    const key = pointerKeys(first!.rawBody)[0]!;
    const { state } = await readSessionState(fixture.store, storeSessionOf(response));
    const record = await fixture.store.getPayload(storeSessionOf(response), sidecarKeyOf(state, key) ?? key);
    expect(record).toBeDefined();
    expect(second?.rawBody).toContain('value0_3');
    expect(fixture.logs[0]).toMatchObject({ status: 200, recoveryCalls: 1 });
  });

  it('answers a body it cannot read as the provider would, with the same error code', async () => {
    fixture = await startProxyFixture({ workers: 1, script: () => ({ text: 'never' }) });
    const response = await fixture.post('messages', '{"model": "claude", "messages": [');
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(fixture.upstream.requests).toHaveLength(0);
    expect(fixture.logs[0]).toMatchObject({ status: 400, error: 'bad-input' });
  });

  it('hands a body it leaves as it is back, and upstream gets the client’s bytes as they came', async () => {
    fixture = await startProxyFixture({ workers: 1, script: () => ({ text: 'as sent' }) });
    expect((await fixture.post('responses', '{"model": "gpt-x", "input": "hi"}')).status).toBe(200);
    // Server-side history is not governed; the spacing and escapes are the client's own.
    const body =
      '{ "model": "gpt-x",\n  "previous_response_id": "resp_scripted0000", "input": "caf\\u00e9 — é€😀" }';
    const response = await fixture.post('responses', body);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-governance')).toBe('server-state');
    expect(fixture.upstream.requests[1]?.rawBody).toBe(body);
  });

  it('leaves a body that continues server-side state unparsed on the proxy’s thread', async () => {
    fixture = await startProxyFixture({ workers: 1, script: () => ({ text: 'as sent' }) });
    const parse = JSON.parse;
    const parsedHere: string[] = [];
    // The scripted upstream parses the body in this thread too: only the proxy's handling counts.
    vi.spyOn(JSON, 'parse').mockImplementation((text, reviver) => {
      const stack = new Error().stack ?? '';
      if (stack.includes('handle-governed') && text.includes('client-input')) parsedHere.push(text);
      return parse(text, reviver);
    });
    try {
      for (const state of [{ conversation: 'conv_1' }, { previous_response_id: 'resp_elsewhere' }]) {
        const body = { model: 'gpt-x', ...state, input: 'client-input' };
        await (await fixture.post('responses', body)).text();
      }
    } finally {
      vi.restoreAllMocks();
    }
    expect(fixture.upstream.requests.map((request) => request.rawBody)).toHaveLength(2);
    expect(parsedHere).toEqual([]);
  });

  it('answers a body that is not UTF-8 with a 400, decoded in the worker', async () => {
    fixture = await startProxyFixture({ workers: 1, script: () => ({ text: 'never' }) });
    const bytes = Buffer.concat([
      Buffer.from('{"model":"gpt-x","messages":[{"role":"user","content":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}]}'),
    ]);
    const response = await fixture.fetch('/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: 'Bearer sk-a', 'content-type': 'application/json' },
      body: bytes,
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('not valid UTF-8');
    expect(fixture.upstream.requests).toHaveLength(0);
  });

  it('moves only buffers a body spans whole: a slice of the shared pool is copied', () => {
    const own = new TextEncoder().encode('{"model":"x"}');
    expect(transferOf(own)).toEqual([own.buffer]);
    const pooled = Buffer.from('{"model":"x"}');
    expect(pooled.byteLength).toBeLessThan(pooled.buffer.byteLength);
    expect(transferOf(pooled)).toEqual([]);
    expect(transferOf(own.subarray(1))).toEqual([]);
  });

  it('keeps every session consistent across several workers, turn after turn', async () => {
    fixture = await startProxyFixture({ workers: 2, script: () => ({ text: 'ok' }) });
    const keys = ['sk-a', 'sk-b', 'sk-c', 'sk-d'];
    const sessions = new Map<string, string>();
    for (let turn = 6; turn <= 12; turn += 2) {
      await Promise.all(
        keys.map(async (apiKey) => {
          const response = await fixture!.post(
            'chat',
            conversationBody('chat', { turns: turn, task: apiKey }),
            {
              apiKey,
            },
          );
          expect(response.status).toBe(200);
          sessions.set(apiKey, storeSessionOf(response, apiKey));
        }),
      );
    }
    for (const session of sessions.values()) {
      const commits = await fixture.store.listCommits(session);
      expect(commits.length).toBeGreaterThan(0);
      expect(commits.map((commit) => commit.sequence)).toEqual(commits.map((_, index) => index + 1));
      const stored = await fixture.store.readSession(session);
      expect(stored?.version).toBeGreaterThanOrEqual(commits.length);
    }
  });

  it('starts a worker whose store cannot be opened, degraded: its requests go through the stateless lane', async () => {
    const upstream = await startScriptedUpstream({ script: () => ({ text: 'Served.' }) });
    const governance = createGovernanceWorkers({
      storeUrl: 'sqlite:/nonexistent-directory/selfgc.db',
      window: 2000,
      reserveOutput: 256,
      threads: 1,
    });
    const logs: ProxyLogEntry[] = [];
    const proxy = createProxy({
      governance,
      upstreams: { openai: upstream.url, anthropic: upstream.url },
      window: 2000,
      reserveOutput: 256,
      logger: (entry) => logs.push(entry),
    });
    try {
      await governance.ready();
      const response = await proxy.handle(
        new Request('http://proxy.test/v1/chat/completions', {
          method: 'POST',
          headers: { authorization: 'Bearer sk-x', 'content-type': 'application/json' },
          body: JSON.stringify(conversationBody('chat', { turns: 8 })),
        }),
      );
      expect(response.status).toBe(200);
      expect(response.headers.get('x-selfgc-governance')).toBe('fail-open');
      expect(response.headers.get('x-selfgc-warnings')).toContain('stateless-reduction');
      expect(Number(response.headers.get('x-selfgc-tokens-after'))).toBeLessThanOrEqual(2000 - 256);
      expect(logs[0]).toMatchObject({ lane: 'store-unavailable', error: 'store-failure' });
      expect(logs[0]?.detail).toMatch(/nonexistent-directory.*cannot open/);
    } finally {
      await governance.close();
      await upstream.close();
    }
  });

  it('failing closed, tells the client a worker’s store failed, by request id, without the store’s own words', async () => {
    const governance = createGovernanceWorkers({
      storeUrl: 'sqlite:/nonexistent-directory/selfgc.db',
      threads: 1,
    });
    const logs: ProxyLogEntry[] = [];
    const proxy = createProxy({
      governance,
      failOpen: false,
      upstreams: { openai: 'http://127.0.0.1:9', anthropic: 'http://127.0.0.1:9' },
      logger: (entry) => logs.push(entry),
    });
    try {
      const response = await proxy.handle(
        new Request('http://proxy.test/v1/chat/completions', {
          method: 'POST',
          headers: { authorization: 'Bearer sk-x', 'content-type': 'application/json' },
          body: JSON.stringify(conversationBody('chat', { turns: 1 })),
        }),
      );
      expect(response.status).toBe(503);
      const text = await response.text();
      expect(text).not.toContain('nonexistent-directory');
      expect(text).not.toContain('cannot open');
      const requestId = response.headers.get('x-selfgc-request-id');
      expect(JSON.parse(text)).toMatchObject({
        error: { code: 'selfgc_store_failure' },
        request_id: requestId,
      });
      expect(logs[0]).toMatchObject({ requestId, error: 'store-failure' });
      expect(logs[0]?.detail).toMatch(/nonexistent-directory.*cannot open/);
    } finally {
      await governance.close();
    }
  });

  it('a worker that dies under a request: the lane serves it inside the window, and a new worker governs the next', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'selfgc-dying-'));
    const upstream = await startScriptedUpstream({ script: () => ({ text: 'Served.' }) });
    let governanceThreads = 0;
    const startThread = (data: GovernanceWorkerData): WorkerThread => {
      if (data.role === 'lane') return startWorkerThread(data);
      governanceThreads += 1;
      if (governanceThreads > 1) return startWorkerThread(data);
      // The first governance thread dies under its first request.
      let exited: SelfGcError | undefined;
      return {
        ready: Promise.resolve(),
        call: async (message) => {
          exited = new SelfGcError('internal', 'governance worker exited (1)');
          return {
            id: message(1).id,
            ok: false,
            error: { code: 'internal', message: exited.message },
            lost: true,
          };
        },
        post: () => undefined,
        exited: () => exited,
        terminate: async () => undefined,
      };
    };
    const governance = createGovernanceWorkers({
      storeUrl: `sqlite:${join(directory, 'selfgc.db')}`,
      window: 2000,
      reserveOutput: 256,
      cache: 'blind',
      threads: 1,
      startThread,
    });
    const logs: ProxyLogEntry[] = [];
    const proxy = createProxy({
      governance,
      upstreams: { openai: upstream.url, anthropic: upstream.url },
      window: 2000,
      reserveOutput: 256,
      // The replacement worker starts while the next request waits: on a loaded machine that
      // can take longer than the default budget, and the request would take the lane instead.
      governanceTimeBudgetMs: 60_000,
      logger: (entry) => logs.push(entry),
    });
    const post = (turns: number) =>
      proxy.handle(
        new Request('http://proxy.test/v1/chat/completions', {
          method: 'POST',
          headers: {
            authorization: 'Bearer sk-x',
            'content-type': 'application/json',
            'x-selfgc-session': 'dying',
          },
          body: JSON.stringify(conversationBody('chat', { turns })),
        }),
      );
    try {
      const first = await post(8);
      expect(first.status).toBe(200);
      expect(first.headers.get('x-selfgc-governance')).toBe('fail-open');
      expect(first.headers.get('x-selfgc-warnings')).toContain('stateless-reduction');
      expect(Number(first.headers.get('x-selfgc-tokens-after'))).toBeLessThanOrEqual(2000 - 256);
      expect(logs[0]).toMatchObject({ lane: 'governance-failed', error: 'internal', status: 200 });
      const second = await post(9);
      expect(second.status).toBe(200);
      expect(logs[1]?.lane).toBeUndefined();
      expect(second.headers.get('x-selfgc-commit')).toMatch(/^c1-/);
      expect(governanceThreads).toBe(2);
    } finally {
      await governance.close();
      await upstream.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('a body too big to govern', () => {
  it('moves to the lane worker in its chunks, unjoined: the proxy’s thread copies nothing of it', async () => {
    const governance = createGovernanceWorkers({
      storeUrl: 'memory:',
      window: 2000,
      reserveOutput: 256,
      threads: 1,
    });
    try {
      await governance.ready();
      const text = JSON.stringify(conversationBody('chat', { turns: 30 }));
      const bytes = new TextEncoder().encode(text);
      // Chunks as a socket delivers them: each its own buffer.
      const chunks = Array.from({ length: Math.ceil(bytes.byteLength / 4096) }, (_, index) =>
        bytes.slice(index * 4096, (index + 1) * 4096),
      );
      const headers = new Headers();
      const prepared = await governance.prepare(
        {
          dialect: chatDialect,
          body: { chunks, byteLength: bytes.byteLength },
          requestHeaders: new Headers(),
          keyHash: 'k',
          trace: { arm: 'governed', entry: {} as ProxyLogEntry },
          headers,
          signal: new AbortController().signal,
          lane: 'over-size',
          failOpen: true,
          recovery: false,
          agentTools: false,
        },
        createProxyMetrics(),
      );
      // Moved, not copied: the buffers are gone from this thread.
      expect(chunks.every((chunk) => chunk.buffer.byteLength === 0)).toBe(true);
      expect(headers.get('x-selfgc-governance')).toBe('over-budget');
      const sent = JSON.parse(new TextDecoder().decode(prepared.body)) as { messages: unknown[] };
      expect(sent.messages.length).toBeGreaterThan(0);
      expect(prepared.body.byteLength).toBeLessThan(bytes.byteLength);
    } finally {
      await governance.close();
    }
  });
});
