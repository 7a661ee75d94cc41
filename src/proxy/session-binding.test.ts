/**
 * Two runs of one prompt through the proxy land in the same derived session (same key, same
 * system prompt, same task) while the files they read differ: the second run is never shown,
 * nor recovers, the first run's content, and the divergence is counted: over SQLite in-process
 * and in a worker thread, and over Redis and PostgreSQL.
 */
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../stores/postgres-store.js';
import { createRedisStore } from '../stores/redis-store.js';
import {
  deleteRedisKeys,
  describeWithService,
  postgresTestUrl,
  probePostgres,
  probeRedis,
  redisTestUrl,
  runTag,
} from '../stores/test-services.case.js';
import type { ScriptedRequest } from '../testing/scripted-reply.js';
import { conversationBody, type WireRoute } from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, type ProxyFixtureOptions, startProxyFixture } from './testing/proxy-fixture.js';
import { pointerKeys } from './testing/recovery-pointers.js';
import { EXPAND_TOOL } from './transparent-recovery.js';

const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];
let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

/**
 * A model that, once `following` is set, asks for the first recovery pointer it is shown, then
 * answers when the proxy brings the expand's result back.
 */
function pointerFollower() {
  let expanding = false;
  const state = { following: false };
  const script = (request: ScriptedRequest) => {
    const [key] = pointerKeys(request.rawBody);
    if (!state.following || expanding || key === undefined) {
      expanding = false;
      return { text: 'ok' };
    }
    expanding = true;
    return { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: key } }] };
  };
  return { state, script };
}

/** Run A then run B of one prompt, each call by call; B must see and recover only its own files. */
async function secondRunSeesOnlyItsOwn(route: WireRoute, options: Omit<ProxyFixtureOptions, 'script'>) {
  const model = pointerFollower();
  fixture = await startProxyFixture({ window: 2_500, script: model.script, ...options });
  const session = async (marker: string, turns: number) => {
    const response = await fixture!.post(route, conversationBody(route, { turns, marker, stream: false }));
    expect(response.status).toBe(200);
    await response.text();
    return response.headers.get('x-selfgc-session');
  };
  // Run A, call by call: the governor folds its early reads.
  let sessionA: string | null = null;
  for (let turns = 2; turns <= 10; turns += 1) sessionA = await session('run-A', turns);
  expect(fixture.logs.some((entry) => entry.commit !== undefined)).toBe(true);
  const sentByA = fixture.upstream.requests.length;
  // Run B: the same prompt in the same directory, the files changed in between. Its recovery
  // pointers are followed by the scripted model, so recovered content is checked too.
  model.state.following = true;
  let sessionB: string | null = null;
  for (let turns = 2; turns <= 10; turns += 1) sessionB = await session('run-B', turns);
  expect(sessionB).toBe(sessionA);
  const sentByB = fixture.upstream.requests.slice(sentByA);
  for (const request of sentByB) expect(request.rawBody).not.toContain('run-A');
  expect(sentByB.some((request) => request.rawBody.includes('run-B'))).toBe(true);
  // The model did follow pointers in run B, and what came back was run B's own.
  expect(sentByB.some((request) => request.rawBody.includes(`"${EXPAND_TOOL}"`))).toBe(true);
  expect(fixture.logs.slice(-9).some((entry) => (entry.recoveryCalls ?? 0) > 0)).toBe(true);
  const samples = await fixture.metrics();
  expect(sampleSum(samples, 'selfgc_proxy_divergences_total', { arm: 'governed' })).toBeGreaterThan(0);
  expect(fixture.logs.some((entry) => entry.divergedAt !== undefined)).toBe(true);
}

describe('session state bound to content, through the proxy', () => {
  const cases = [
    ...ROUTES.map((route) => ({ route, workers: undefined })),
    // Governed in a worker thread over SQLite: recovery crosses the thread with its scope.
    { route: 'chat' as const, workers: 1 },
  ];
  it.each(cases)(
    '$route (workers: $workers): a second run of the same prompt sees only its own files',
    async ({ route, workers }) => secondRunSeesOnlyItsOwn(route, workers === undefined ? {} : { workers }),
  );
});

/**
 * Runs of one prompt at once (an eval's repeated trials) with a client that sends no session id:
 * their calls come in turns and every one opens as the others do. They part at their first reply,
 * by a real model's call ids alone, and each goes on from its own state: none drops another's at
 * every call (each of them committing anew, the cache broken each time), as they did when they
 * shared a session.
 */
async function runsAtOnce(route: WireRoute) {
  const runs = ['run-A', 'run-B', 'run-C'];
  /** Each run's upstream requests and session ids, its calls sent in turns with the others'. */
  const play = async (playing: readonly string[]) => {
    fixture = await startProxyFixture({ window: 4_000, script: () => ({ text: 'ok' }) });
    const sent = new Map<string, string[]>(playing.map((run) => [run, []]));
    const sessions = new Map<string, Set<string | null>>(playing.map((run) => [run, new Set()]));
    for (let turns = 2; turns <= 14; turns += 1) {
      for (const run of playing) {
        const body = conversationBody(route, { turns, marker: run, callIds: `${run}_`, stream: false });
        const response = await fixture.post(route, body);
        expect(response.status).toBe(200);
        await response.text();
        sessions.get(run)!.add(response.headers.get('x-selfgc-session'));
        sent.get(run)!.push(fixture.upstream.requests.at(-1)!.rawBody);
      }
    }
    const logs = fixture.logs;
    await fixture.close();
    fixture = undefined;
    return { sent, sessions, logs };
  };
  const together = await play(runs);
  const ids = [...together.sessions.values()].map((set) => [...set]);
  for (const own of ids) expect(own).toHaveLength(1);
  expect(new Set(ids.flat()).size).toBe(runs.length);
  expect(together.logs.filter((entry) => entry.commit !== undefined).length).toBeGreaterThan(runs.length);
  expect(together.logs.filter((entry) => entry.divergedAt !== undefined)).toEqual([]);
  // Each run was shown, call by call, what it is shown alone.
  for (const run of runs) expect(together.sent.get(run)).toEqual((await play([run])).sent.get(run));
}

describe('runs of one prompt at once, without a session id', () => {
  it.each(ROUTES)('%s: each run keeps a session and a state of its own', (route) => runsAtOnce(route));
});

/**
 * Claude Code's subagents and side requests send the parent's session id (the subagent adds
 * `x-claude-code-agent-id`, older versions nothing). Calls of the parent and of a subagent, in
 * turns under one id: each conversation goes on from its own state, and nothing of one reaches the
 * other's upstream requests. A subagent with its agent id here is a fork (Claude Code's
 * `subagent_type: "fork"`), which opens with its parent's conversation.
 */
async function parentAndSubagent(agentHeader: boolean) {
  fixture = await startProxyFixture({ window: 2_500, script: () => ({ text: 'ok' }) });
  const sessionHeaders = { 'x-claude-code-session-id': '2f6d1c7a-8e0b-4b9a-a1d3-5c4e3b2a1f00' };
  const subagentHeaders = {
    ...sessionHeaders,
    ...(agentHeader ? { 'x-claude-code-agent-id': 'a1b2c3d4e5f60718' } : {}),
  };
  const call = async (marker: string, turns: number, headers: Record<string, string>) => {
    // With its agent id, a fork: it opens as its parent did, and only the header tells them apart.
    const task = `Task of the ${agentHeader ? 'parent' : marker}: list what the modules export.`;
    const body = conversationBody('messages', { turns, marker, task, stream: false });
    const response = await fixture!.post('messages', body, { headers });
    expect(response.status).toBe(200);
    await response.text();
    return {
      session: response.headers.get('x-selfgc-session'),
      sent: fixture!.upstream.requests.at(-1)!.rawBody,
    };
  };
  let parentSession: string | null = null;
  let subagentSession: string | null = null;
  for (let turns = 2; turns <= 10; turns += 1) {
    const parent = await call('parent', turns, sessionHeaders);
    expect(parent.sent).not.toContain('(subagent)');
    parentSession = parent.session;
    const subagent = await call('subagent', turns, subagentHeaders);
    expect(subagent.sent).not.toContain('(parent)');
    subagentSession = subagent.session;
  }
  // Both were governed: each committed views of its own and none of them was dropped.
  expect(fixture.logs.filter((entry) => entry.commit !== undefined).length).toBeGreaterThan(2);
  expect(fixture.logs.map((entry) => entry.droppedStates ?? 0)).toEqual(fixture.logs.map(() => 0));
  expect(fixture.logs.filter((entry) => entry.divergedAt !== undefined)).toEqual([]);
  expect(subagentSession).not.toBe(parentSession);
}

describe('a subagent under its parent session id', () => {
  it('a fork with its agent id header: parent and fork keep state of their own', () =>
    parentAndSubagent(true));
  it('without one (older Claude Code, side requests): the same', () => parentAndSubagent(false));
});

/**
 * The parent's last upstream request, after `turns` calls under an explicit session id, with or
 * without a side request (a title) under the same id before the last call.
 */
async function parentAfter(turns: number, sideRequest: boolean): Promise<string> {
  fixture = await startProxyFixture({ window: 2_500, script: () => ({ text: 'ok' }) });
  const headers = { 'x-selfgc-session': 'fix-build-42' };
  const post = async (body: unknown) => {
    const response = await fixture!.post('messages', body, { headers });
    expect(response.status).toBe(200);
    await response.text();
  };
  for (let turn = 2; turn <= turns; turn += 1) {
    if (turn === turns && sideRequest) {
      const title = { role: 'user', content: 'Write a five-word title for this conversation.' };
      await post({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [title] });
      // It is another conversation, and says so; it governs nothing.
      expect(fixture.logs.at(-1)).toMatchObject({ divergedAt: 0 });
      expect(fixture.logs.at(-1)?.commit).toBeUndefined();
    }
    await post(conversationBody('messages', { turns: turn, stream: false }));
  }
  expect(fixture.logs.filter((entry) => entry.commit !== undefined).length).toBeGreaterThan(1);
  const sent = fixture.upstream.requests.at(-1)!.rawBody;
  await fixture.close();
  fixture = undefined;
  return sent;
}

describe('a side request under an explicit session id', () => {
  it("leaves the parent's state as it was: the parent's next view is the one it would have had", async () => {
    expect(await parentAfter(10, true)).toBe(await parentAfter(10, false));
  });
});

const tag = runTag();

describeWithService('session state bound to content, on Redis', await probeRedis(redisTestUrl), () => {
  const keyPrefix = `selfgc-test:${tag}`;
  afterAll(() => deleteRedisKeys(redisTestUrl, keyPrefix));
  it('messages: a second run of the same prompt sees only its own files', async () =>
    secondRunSeesOnlyItsOwn('messages', { store: createRedisStore({ url: redisTestUrl, keyPrefix }) }));
});

describeWithService(
  'session state bound to content, on PostgreSQL',
  await probePostgres(postgresTestUrl),
  () => {
    const schema = `selfgc_binding_${tag}`;
    afterAll(async () => {
      const client = new pg.Client({ connectionString: postgresTestUrl });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    });
    it('responses: a second run of the same prompt sees only its own files', async () =>
      secondRunSeesOnlyItsOwn('responses', {
        store: await createPostgresStore({ connectionString: postgresTestUrl, schema }),
      }));
  },
);
