import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../core/errors.js';
import { recoveryKeyOf } from '../core/session-state.js';
import type { SidecarStore } from '../core/store.js';
import { createMemoryStore } from '../stores/memory-store.js';
import { estimateInputTokens } from '../testing/scripted-reply.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { responsesDialect } from './responses-dialect.js';
import { hashApiKey } from './session-identity.js';
import { conversationBody, fileContent, type WireRoute } from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import {
  escapedFile,
  filesOutOf,
  pointerKeys,
  storeSessionOf,
  unrecoverableFiles,
} from './testing/recovery-pointers.js';
import type { JsonObject, WireDialect } from './wire-dialect.js';

const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];
const DIALECTS: Record<WireRoute, WireDialect> = {
  chat: chatDialect,
  responses: responsesDialect,
  messages: anthropicMessagesDialect,
};
const TRANSCRIPT_FIELD: Record<WireRoute, string> = {
  chat: 'messages',
  responses: 'input',
  messages: 'messages',
};
let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

const answer = () => ({ text: 'Reading on.' });

describe('governed routes', () => {
  it.each(ROUTES)(
    '%s: the view replaces the transcript, every other field stays, headers tell the commit',
    async (route) => {
      fixture = await startProxyFixture({ script: answer, cachedInputTokens: 100 });
      const body = { ...conversationBody(route, { turns: 8 }), temperature: 0.25, metadata: { run: 'r1' } };
      const response = await fixture.post(route, body);
      expect(response.status).toBe(200);
      expect(await response.json()).toBeTruthy();

      const sent = fixture.upstream.requests[0]?.body as Record<string, unknown>;
      const field = TRANSCRIPT_FIELD[route];
      for (const [key, value] of Object.entries(body)) if (key !== field) expect(sent[key]).toEqual(value);
      // Recovery (on by default) appends its tools; nothing else is added or reordered.
      expect(Object.keys(sent)).toEqual([...Object.keys(body), 'tools']);
      expect(JSON.stringify(sent.tools)).toContain('selfgc_expand');
      const forwarded = JSON.stringify(sent[field]);
      // A recovery pointer, to an output or to a span of old work.
      expect(forwarded).toMatch(/expand\(\\"(function:read_file:\d+|conversation:user:\d+@\d+)\\"\)/);
      expect(forwarded).not.toContain(JSON.stringify(fileContent(0)).slice(1, -1));
      expect(forwarded).toContain(JSON.stringify(fileContent(7)).slice(1, -1));

      const before = Number(response.headers.get('x-selfgc-tokens-before'));
      const after = Number(response.headers.get('x-selfgc-tokens-after'));
      expect(after).toBeGreaterThan(0);
      expect(after).toBeLessThan(before);
      expect(response.headers.get('x-selfgc-arm')).toBe('governed');
      expect(response.headers.get('x-selfgc-session')).toMatch(/^auto-[0-9a-f]{32}$/);
      const commitId = response.headers.get('x-selfgc-commit');
      expect(commitId).toBeTruthy();

      // The key hash is the same whichever header carries the key.
      const keyHash = hashApiKey(new Headers({ 'x-api-key': 'sk-test-key' }));
      const commits = await fixture.store.listCommits(
        `${keyHash}:${response.headers.get('x-selfgc-session')}`,
      );
      expect(commits.map((commit) => commit.commitId)).toEqual([commitId]);

      const samples = await fixture.metrics();
      const governed = { arm: 'governed' };
      expect(sampleSum(samples, 'selfgc_proxy_commits_total', governed)).toBe(1);
      expect(sampleSum(samples, 'selfgc_proxy_tokens_saved_total', governed)).toBe(before - after);
      expect(sampleSum(samples, 'selfgc_proxy_input_tokens_total', governed)).toBe(estimateInputTokens(sent));
      expect(sampleSum(samples, 'selfgc_proxy_cached_input_tokens_total', governed)).toBe(100);
      expect(sampleSum(samples, 'selfgc_proxy_requests_total', { ...governed, route, status: '200' })).toBe(
        1,
      );
      expect(sampleSum(samples, 'selfgc_proxy_planner_seconds_count', governed)).toBe(1);
      expect(fixture.logs[0]).toMatchObject({
        route,
        arm: 'governed',
        status: 200,
        tokensBefore: before,
        tokensAfter: after,
        commit: commitId,
      });
    },
  );

  it('carries a session across turns: later turns reuse the committed view', async () => {
    // Room for a turn to arrive without a commit once the output reserve is set aside.
    fixture = await startProxyFixture({ script: answer, window: 4_000 });
    const first = await fixture.post('chat', conversationBody('chat', { turns: 8 }));
    expect(first.headers.get('x-selfgc-commit')).toBeTruthy();
    const session = storeSessionOf(first);
    // What the first commit took out of the view, whatever the planner folded (outputs or spans).
    const heldBack = filesOutOf(fixture.upstream.requests[0]!.rawBody, 8);
    expect(heldBack.length).toBeGreaterThan(0);

    // Later turns of the same conversation land in the same session and build on its commits:
    // what left the view stays out of it, one expand away, and a turn that commits nothing
    // sends the committed view as it is.
    let reused: { response: Response; rawBody: string; keptBefore: string[] } | undefined;
    for (let turns = 9; turns <= 12 && reused === undefined; turns += 1) {
      const keptBefore = (await fixture.store.listPayloads(session)).map((record) =>
        recoveryKeyOf(record.objectId),
      );
      const response = await fixture.post('chat', conversationBody('chat', { turns }));
      expect(response.status).toBe(200);
      expect(response.headers.get('x-selfgc-session')).toBe(first.headers.get('x-selfgc-session'));
      const rawBody = fixture.upstream.requests.at(-1)!.rawBody;
      for (const turn of heldBack) expect(rawBody).not.toContain(escapedFile(turn));
      expect(await unrecoverableFiles(fixture.store, session, rawBody, turns)).toEqual([]);
      if (response.headers.get('x-selfgc-commit') === null) reused = { response, rawBody, keptBefore };
    }
    expect(reused).toBeDefined();
    const { response, rawBody, keptBefore } = reused!;
    expect(Number(response.headers.get('x-selfgc-tokens-after'))).toBeLessThan(
      Number(response.headers.get('x-selfgc-tokens-before')),
    );
    // Its pointers all name payloads that earlier commits stored.
    expect(pointerKeys(rawBody).length).toBeGreaterThan(0);
    for (const key of pointerKeys(rawBody)) expect(keptBefore).toContain(key);
    const commits = await fixture.store.listCommits(session);
    expect(commits[0]?.commitId).toBe(first.headers.get('x-selfgc-commit'));
    expect(commits.map((commit) => commit.sequence)).toEqual(commits.map((_, index) => index + 1));
  });

  it('isolates sessions per key: the same explicit session id under another key sees nothing', async () => {
    fixture = await startProxyFixture({ script: answer });
    const session = { 'x-selfgc-session': 'team-shared-42' };
    const a = await fixture.post('chat', conversationBody('chat', { turns: 8 }), {
      apiKey: 'sk-a',
      headers: session,
    });
    const b = await fixture.post('chat', conversationBody('chat', { turns: 1, task: 'other' }), {
      apiKey: 'sk-b',
      headers: session,
    });
    expect(a.headers.get('x-selfgc-session')).toBe('team-shared-42');
    expect(b.headers.get('x-selfgc-session')).toBe('team-shared-42');
    const keyOf = (key: string) =>
      `${hashApiKey(new Headers({ authorization: `Bearer ${key}` }))}:team-shared-42`;
    expect((await fixture.store.listPayloads(keyOf('sk-a'))).length).toBeGreaterThan(0);
    expect(await fixture.store.listPayloads(keyOf('sk-b'))).toEqual([]);
    expect(await fixture.store.listCommits(keyOf('sk-b'))).toEqual([]);
    expect(b.headers.get('x-selfgc-commit')).toBeNull();
    expect(JSON.stringify(fixture.upstream.requests[1]?.body)).not.toContain('expand(');
  });

  // Bytes no writer of ours produces (indentation, a member order of the client's own, an
  // escaped slash): only the client's body itself carries them upstream.
  const clientBytes = (route: WireRoute, turns: number) => {
    const { model, ...rest } = conversationBody(route, { turns });
    return JSON.stringify({ ...rest, model }, null, 2).replace('"role"', '"r\\u006fle"');
  };

  it.each([
    ['chat', undefined],
    ['responses', undefined],
    ['messages', undefined],
    ['chat', 1],
    ['messages', 1],
  ] as const)(
    "%s (workers: %s): a view governance leaves as it came goes upstream as the client's own bytes",
    async (route, workers) => {
      fixture = await startProxyFixture({ script: answer, window: 200_000, ...(workers ? { workers } : {}) });
      for (const turns of [1, 2, 3]) {
        const raw = clientBytes(route, turns);
        const response = await fixture.post(route, raw);
        expect(response.status).toBe(200);
        expect(response.headers.get('x-selfgc-commit')).toBeNull();
        expect(fixture.upstream.requests.at(-1)?.rawBody).toBe(raw);
      }
    },
  );

  it('messages: a client body with more than four breakpoints is written with four, even when nothing is governed', async () => {
    fixture = await startProxyFixture({ script: answer, window: 200_000 });
    const body = conversationBody('messages', { turns: 3 }) as { messages: Array<Record<string, unknown>> };
    const marked = { type: 'text', text: 'Go on.', cache_control: { type: 'ephemeral' } };
    const messages = body.messages.map((message) =>
      message.role === 'user' && typeof message.content === 'string'
        ? { ...message, content: [{ ...marked, text: message.content }] }
        : message,
    );
    const breakpoints = (value: unknown) => JSON.stringify(value).split('"cache_control"').length - 1;
    const sent = {
      ...body,
      messages: [...messages, { role: 'user', content: [marked, marked, marked, marked] }],
    };
    expect(breakpoints(sent)).toBeGreaterThan(4);
    const response = await fixture.post('messages', sent);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-commit')).toBeNull();
    expect(breakpoints(fixture.upstream.requests[0]?.body)).toBe(4);
  });
});

describe('A/B split', () => {
  it('forwards the control arm byte for byte but still measures it', async () => {
    fixture = await startProxyFixture({
      script: answer,
      proxy: { abSplit: { share: 0 } },
      cachedInputTokens: 9,
    });
    const raw = JSON.stringify(conversationBody('messages', { turns: 8 }), null, 1);
    const response = await fixture.post('messages', raw);
    expect(response.headers.get('x-selfgc-arm')).toBe('control');
    expect(response.headers.get('x-selfgc-governance')).toBe('off');
    expect(response.headers.get('x-selfgc-tokens-after')).toBeNull();
    expect(fixture.upstream.requests[0]?.rawBody).toBe(raw);
    const samples = await fixture.metrics();
    const input = estimateInputTokens(JSON.parse(raw));
    expect(sampleSum(samples, 'selfgc_proxy_input_tokens_total', { arm: 'control' })).toBe(input);
    expect(sampleSum(samples, 'selfgc_proxy_cached_input_tokens_total', { arm: 'control' })).toBe(9);
    expect(sampleSum(samples, 'selfgc_proxy_input_tokens_total', { arm: 'governed' })).toBe(0);
    expect(sampleSum(samples, 'selfgc_proxy_requests_total', { arm: 'control' })).toBe(1);
  });

  it('splits accounts deterministically by key', async () => {
    fixture = await startProxyFixture({ script: answer, proxy: { abSplit: { share: 0.5, salt: 's' } } });
    const arms = new Map<string, string>();
    for (let round = 0; round < 2; round += 1) {
      for (let key = 0; key < 12; key += 1) {
        const response = await fixture.post('chat', conversationBody('chat', { turns: 1 }), {
          apiKey: `sk-${key}`,
        });
        const arm = response.headers.get('x-selfgc-arm') ?? '';
        if (round === 1) expect(arm).toBe(arms.get(`sk-${key}`));
        arms.set(`sk-${key}`, arm);
      }
    }
    expect(new Set(arms.values())).toEqual(new Set(['governed', 'control']));
  });
});

/** What a driver says when its database goes away: an address the client must never see. */
const DRIVER_MESSAGE =
  'postgres readSession: connect ECONNREFUSED 10.20.30.40:5432 (terminating connection due to administrator command)';

/** A store whose every call fails, as a database that went away. */
function downStore(): SidecarStore {
  const fail = async () => {
    throw new StoreError(DRIVER_MESSAGE);
  };
  return {
    ...createMemoryStore(),
    kind: 'down',
    readSession: fail,
    writeState: fail,
    writeCommit: fail,
    putPayloads: fail,
    close: async () => {},
  };
}

describe('store failures', () => {
  it.each(ROUTES)(
    'fail open (%s): serves the request inside the window through the stateless lane, flags and counts it',
    async (route) => {
      fixture = await startProxyFixture({ script: answer, store: downStore() });
      const body = conversationBody(route, { turns: 8 });
      const response = await fixture.post(route, body);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-selfgc-governance')).toBe('fail-open');
      expect(response.headers.get('x-selfgc-warnings')).toBe('stateless-reduction');
      const sent = fixture.upstream.requests[0]!;
      // Over the 2000-token window as sent by the client; inside it as forwarded.
      expect(estimateInputTokens(body)).toBeGreaterThan(2000);
      const after = Number(response.headers.get('x-selfgc-tokens-after'));
      expect(after + Number(response.headers.get('x-selfgc-output-reserve'))).toBeLessThanOrEqual(2000);
      expect(sent.rawBody).toContain('elided to fit the context window');
      // The latest turn and every call with its output stay; nothing points at a sidecar.
      expect(sent.rawBody).toContain(escapedFile(7));
      const forwarded = DIALECTS[route].readTranscript(sent.body as JsonObject);
      const calls = forwarded.flatMap((message) =>
        message.parts.flatMap((part) => (part.type === 'tool-call' ? [part.id] : [])),
      );
      const results = forwarded.flatMap((message) =>
        message.parts.flatMap((part) => (part.type === 'tool-result' ? [part.callId] : [])),
      );
      expect(calls).toHaveLength(8);
      expect(results).toEqual(calls);
      expect(sent.rawBody).not.toContain('selfgc_expand');
      const samples = await fixture.metrics();
      expect(sampleSum(samples, 'selfgc_proxy_fail_open_total', { arm: 'governed' })).toBe(1);
      expect(sampleSum(samples, 'selfgc_proxy_errors_total', { code: 'store-failure' })).toBe(1);
      expect(sampleSum(samples, 'selfgc_proxy_stateless_lane_total', { reason: 'store-unavailable' })).toBe(
        1,
      );
      expect(fixture.logs[0]).toMatchObject({
        governance: 'fail-open',
        lane: 'store-unavailable',
        warnings: ['stateless-reduction'],
        error: 'store-failure',
        detail: DRIVER_MESSAGE,
        status: 200,
      });
      expect(response.headers.get('x-selfgc-request-id')).toBe(fixture.logs[0]?.requestId);
      expect([...response.headers.values()].join(' ')).not.toContain('10.20.30.40');
      expect(await (await fixture.fetch('/healthz')).json()).toMatchObject({
        status: 'degraded',
        store: 'down',
        storeKind: 'down',
      });
    },
  );

  it('fail open: a conversation that fits goes upstream byte for byte', async () => {
    fixture = await startProxyFixture({ script: answer, store: downStore() });
    const raw = JSON.stringify(conversationBody('responses', { turns: 1 }));
    const response = await fixture.post('responses', raw);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-governance')).toBe('fail-open');
    expect(response.headers.get('x-selfgc-warnings')).toBeNull();
    expect(fixture.upstream.requests[0]?.rawBody).toBe(raw);
  });

  it('fail closed: refuses with a 503 in the provider format', async () => {
    fixture = await startProxyFixture({ script: answer, store: downStore(), proxy: { failOpen: false } });
    const response = await fixture.post('messages', conversationBody('messages', { turns: 2 }));
    expect(response.status).toBe(503);
    const requestId = response.headers.get('x-selfgc-request-id');
    expect(requestId).toMatch(/^req_[0-9a-f]{32}$/);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({
      type: 'error',
      error: {
        type: 'api_error',
        message: `the session store is unavailable; retry later (request ${requestId}; details are in the proxy log)`,
        code: 'selfgc_store_failure',
      },
      request_id: requestId,
    });
    for (const internal of ['10.20.30.40', '5432', 'ECONNREFUSED', 'administrator', 'postgres']) {
      expect(text).not.toContain(internal);
      expect([...response.headers.values()].join(' ')).not.toContain(internal);
    }
    // The operator finds the cause by the request id.
    expect(fixture.logs[0]).toMatchObject({ requestId, error: 'store-failure', detail: DRIVER_MESSAGE });
    expect(fixture.upstream.requests).toHaveLength(0);
    expect((await fixture.fetch('/healthz')).status).toBe(503);
  });
});
