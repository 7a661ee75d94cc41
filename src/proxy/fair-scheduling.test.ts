/**
 * Fair scheduling: a body over governance's size budget goes through the stateless lane, one
 * that governance cannot finish within its time budget too, and neither holds another tenant's
 * small requests. Bounds tell "served beside the big body" from "served after it", not
 * milliseconds, and scale with how loaded the machine is: each is measured against the same small
 * requests sent, on the same proxy, with nothing else in flight.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SidecarStore } from '../core/store.js';
import { createMemoryStore } from '../stores/memory-store.js';
import { createSqliteStore } from '../stores/sqlite-store.js';
import { startScriptedUpstream } from '../testing/scripted-upstream.js';
import { hashApiKey } from './session-identity.js';
import { authHeaders, conversationBody, hugeChatBody } from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { spawnProxyChild } from './testing/spawn-proxy-child.js';

const WINDOW = 2000;
const RESERVE = 256;
/** A small request of another tenant is answered within this while the big body is in flight… */
const SMALL_WITHIN_MS = 1_500;
/** …or within this many times the slowest of the same requests with nothing else in flight. */
const LOAD_FACTOR = 4;

let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

/** A conversation body of about `megabytes` MB. */
const bigBody = (megabytes: number) => hugeChatBody(megabytes, 'big');

interface Timed {
  response: Response;
  text: string;
  ms: number;
}

async function timedPost(
  fixtureNow: ProxyFixture,
  body: string,
  apiKey: string,
  session: string,
): Promise<Timed> {
  const started = performance.now();
  const response = await fixtureNow.post('chat', body, { apiKey, headers: { 'x-selfgc-session': session } });
  const text = await response.text();
  return { response, text, ms: performance.now() - started };
}

/** Small requests of other tenants, two at a time, while `inFlight` has not settled (at most `count`). */
async function smallRequestsBeside(
  fixtureNow: ProxyFixture,
  inFlight: Promise<unknown>,
  count = 12,
  label = 'small',
) {
  let settled = false;
  void inFlight.finally(() => {
    settled = true;
  });
  const answered: Timed[] = [];
  for (let round = 0; round < count / 2 && (round < 2 || !settled); round += 1) {
    const pair = await Promise.all(
      [0, 1].map((slot) =>
        timedPost(
          fixtureNow,
          JSON.stringify(conversationBody('chat', { turns: 8, marker: `${label}-${round}-${slot}` })),
          `sk-small-${slot}`,
          `${label}-${round}-${slot}`,
        ),
      ),
    );
    answered.push(...pair);
  }
  return answered;
}

/**
 * The bound on a small request beside the big body on this proxy: the same rounds of small
 * requests are timed first with nothing else in flight, so a machine slowed by other work widens
 * the bound as much as it slows the requests.
 */
async function besideBound(fixtureNow: ProxyFixture): Promise<number> {
  const alone = await smallRequestsBeside(fixtureNow, Promise.resolve(), 4, 'alone');
  for (const timed of alone) expect(timed.response.status, timed.text.slice(0, 300)).toBe(200);
  return Math.max(SMALL_WITHIN_MS, LOAD_FACTOR * Math.max(...alone.map((timed) => timed.ms)));
}

function expectInsideWindow(timed: Timed): void {
  expect(timed.response.status, timed.text.slice(0, 300)).toBe(200);
  const after = Number(timed.response.headers.get('x-selfgc-tokens-after'));
  const reserve = Number(timed.response.headers.get('x-selfgc-output-reserve'));
  expect(after + reserve).toBeLessThanOrEqual(WINDOW);
}

describe('a body over the size budget', () => {
  it('in worker threads: goes through the lane worker inside the window, and holds no other tenant', async () => {
    fixture = await startProxyFixture({
      workers: 2,
      script: () => ({ text: 'ok' }),
      window: WINDOW,
      proxy: { governanceMaxBytes: 512 * 1024 },
    });
    const bound = await besideBound(fixture);
    const body = bigBody(4);
    const big = timedPost(fixture, body, 'sk-big', 'big');
    const small = await smallRequestsBeside(fixture, big);
    const answered = await big;
    expectInsideWindow(answered);
    expect(answered.response.headers.get('x-selfgc-governance')).toBe('over-budget');
    expect(answered.response.headers.get('x-selfgc-warnings')).toContain('stateless-reduction');
    const sent = fixture.upstream.requests.find((request) => request.rawBody.includes('(big)'));
    expect(sent?.rawBody.length).toBeLessThan(body.length / 20);
    expect(small.length).toBeGreaterThanOrEqual(4);
    for (const timed of small) {
      expectInsideWindow(timed);
      expect(timed.ms).toBeLessThan(bound);
      expect(timed.response.headers.get('x-selfgc-governance')).not.toBe('over-budget');
    }
    const samples = await fixture.metrics();
    expect(sampleSum(samples, 'selfgc_proxy_stateless_lane_total', { reason: 'over-size' })).toBe(1);
    expect(fixture.logs.find((entry) => entry.lane === 'over-size')).toMatchObject({ status: 200 });
  });

  it('on the proxy thread: goes through the lane inside the window too', async () => {
    fixture = await startProxyFixture({
      script: () => ({ text: 'ok' }),
      window: WINDOW,
      proxy: { governanceMaxBytes: 512 * 1024 },
    });
    const answered = await timedPost(fixture, bigBody(2), 'sk-big', 'big');
    expectInsideWindow(answered);
    expect(answered.response.headers.get('x-selfgc-governance')).toBe('over-budget');
    expect(fixture.logs[0]).toMatchObject({ lane: 'over-size', governance: 'over-budget' });
  });
});

describe('governance over its time budget', () => {
  const TIME_BUDGET_MS = 300;

  it('in worker threads: the request, and those waiting behind it, go through the lane; its commit lands for the next turn', async () => {
    fixture = await startProxyFixture({
      workers: 1,
      script: () => ({ text: 'ok' }),
      window: WINDOW,
      proxy: { governanceMaxBytes: 64 * 1024 * 1024, governanceTimeBudgetMs: TIME_BUDGET_MS },
    });
    const bound = await besideBound(fixture);
    const big = timedPost(fixture, bigBody(4), 'sk-big', 'big');
    const small = await smallRequestsBeside(fixture, big, 6);
    const answered = await big;
    expectInsideWindow(answered);
    expect(answered.response.headers.get('x-selfgc-governance')).toBe('over-budget');
    for (const timed of small) {
      expectInsideWindow(timed);
      // A small request waits out its budget, then the one lane worker may still be reducing the
      // big body (which also left governance at its budget): both are part of being served beside it.
      expect(timed.ms).toBeLessThan(bound + TIME_BUDGET_MS + answered.ms);
    }
    expect(fixture.logs.find((entry) => entry.lane === 'over-time')).toBeDefined();
    // Left to finish, governance commits the big session for its next turn.
    const session = `${hashApiKey(new Headers({ authorization: 'Bearer sk-big' }))}:big`;
    let commits = 0;
    for (let attempt = 0; attempt < 60 && commits === 0; attempt += 1) {
      commits = (await fixture.store.listCommits(session)).length;
      if (commits === 0) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(commits).toBeGreaterThan(0);
  });

  it('on the proxy thread: a store slower than the budget sends the request through the lane at the budget', async () => {
    const memory = createMemoryStore();
    const slow: SidecarStore = {
      ...memory,
      readSession: async (sessionId) => {
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        return memory.readSession(sessionId);
      },
    };
    fixture = await startProxyFixture({
      script: () => ({ text: 'ok' }),
      window: WINDOW,
      store: slow,
      proxy: { governanceTimeBudgetMs: 200 },
    });
    const answered = await timedPost(
      fixture,
      JSON.stringify(conversationBody('chat', { turns: 8 })),
      'sk-a',
      's',
    );
    expectInsideWindow(answered);
    expect(answered.ms).toBeLessThan(SMALL_WITHIN_MS);
    expect(answered.response.headers.get('x-selfgc-governance')).toBe('over-budget');
    expect(fixture.logs[0]).toMatchObject({ lane: 'over-time' });
    expect(Number(answered.response.headers.get('x-selfgc-tokens-after')) + RESERVE).toBeLessThanOrEqual(
      WINDOW,
    );
  });
});

describe('a 31 MB body among 100 small concurrent sessions, the proxy in its own process', () => {
  /** However loaded the machine, far below the many seconds a small request used to wait. */
  const SMALL_WITHIN_PROCESS_MS = 10_000;
  /**
   * Two hundred small requests queue for two governance threads, and the time budget counts that
   * wait: on a loaded machine the default budget can run out in the queue, which would send a
   * small request through the lane for a reason other than the big body.
   */
  const TIME_BUDGET_MS = 6 * SMALL_WITHIN_PROCESS_MS;

  it('serves every session inside the window while the body goes through the lane, and governs them all', async () => {
    const upstream = await startScriptedUpstream({ script: () => ({ text: 'ok' }) });
    const directory = mkdtempSync(join(tmpdir(), 'selfgc-big-body-'));
    const storePath = join(directory, 'selfgc.db');
    const child = await spawnProxyChild({
      storeUrl: `sqlite:${storePath}`,
      upstreamUrl: upstream.url,
      threads: 2,
      timeBudgetMs: TIME_BUDGET_MS,
    });
    try {
      const post = async (body: string, apiKey: string, session: string) => {
        const started = performance.now();
        const response = await fetch(`${child.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { ...authHeaders('chat', apiKey), 'x-selfgc-session': session },
          body,
        });
        const text = await response.text();
        return { response, text, ms: performance.now() - started };
      };
      const body = bigBody(31);
      expect(body.length).toBeGreaterThan(30 * 1e6);
      expect(body.length).toBeLessThan(32 * 1024 * 1024);
      const big = post(body, 'sk-big', 'big');
      const sessions = Array.from({ length: 100 }, (_, index) => index);
      const small = (
        await Promise.all(
          sessions.map(async (index) => {
            const answers: Timed[] = [];
            for (const turns of [7, 8]) {
              const conversation = conversationBody('chat', { turns, marker: `small-${index}` });
              answers.push(
                await post(JSON.stringify(conversation), `sk-small-${index % 10}`, `small-${index}`),
              );
            }
            return answers;
          }),
        )
      ).flat();
      const answered = await big;
      expect(answered.response.status, answered.text.slice(0, 300)).toBe(200);
      expect(answered.response.headers.get('x-selfgc-governance')).toBe('over-budget');
      expect(Number(answered.response.headers.get('x-selfgc-tokens-after'))).toBeLessThanOrEqual(2000);
      expect(small).toHaveLength(200);
      for (const timed of small) {
        expect(timed.response.status, timed.text.slice(0, 300)).toBe(200);
        expect(timed.ms).toBeLessThan(SMALL_WITHIN_PROCESS_MS);
        const after = Number(timed.response.headers.get('x-selfgc-tokens-after'));
        const reserve = Number(timed.response.headers.get('x-selfgc-output-reserve'));
        expect(after + reserve).toBeLessThanOrEqual(2000);
        expect(timed.response.headers.get('x-selfgc-governance')).not.toBe('over-budget');
      }
      // Governance went on for the small sessions: each committed, and its sidecar holds records.
      const store = createSqliteStore({ path: storePath });
      try {
        const keys = new Set(small.map((timed) => timed.response.headers.get('x-selfgc-session')));
        expect(keys.size).toBe(100);
        const committed = small.filter((timed) => timed.response.headers.get('x-selfgc-commit') !== null);
        expect(new Set(committed.map((timed) => timed.response.headers.get('x-selfgc-session'))).size).toBe(
          100,
        );
        const smallKey = hashApiKey(new Headers({ authorization: 'Bearer sk-small-0' }));
        expect((await store.listPayloads(`${smallKey}:small-0`)).length).toBeGreaterThan(0);
      } finally {
        await store.close();
      }
      expect(child.process.exitCode).toBeNull();
    } finally {
      child.process.kill('SIGKILL');
      await child.exited;
      await upstream.close();
      rmSync(directory, { recursive: true, force: true });
    }
  }, 120_000);
});
