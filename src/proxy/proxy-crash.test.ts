import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromOpenAIChat, type OpenAIChatMessage, toOpenAIChat } from '../adapters/index.js';
import { alternatingLikeClient } from '../adapters/openai-chat/alternating-turns.js';
import { createPinRule } from '../core/governor/pins.js';
import { indexTranscript } from '../core/ledger.js';
import { parseObjectPayload, payloadText } from '../core/object-payload.js';
import type { ViewState } from '../core/operations.js';
import { projectView } from '../core/project-view.js';
import { sidecarKey } from '../core/render-replacement.js';
import { recoveryKeyOf } from '../core/session-state.js';
import type { CommitRecord, SidecarRecord } from '../core/store.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { Message } from '../core/transcript.js';
import { createSqliteStore } from '../stores/sqlite-store.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { hashApiKey } from './session-identity.js';
import {
  authHeaders,
  chatConversation,
  conversationBody,
  fileContent,
} from './testing/agent-conversation.js';
import { escapedFile, filesOutOf } from './testing/recovery-pointers.js';
import { spawnProxyChild } from './testing/spawn-proxy-child.js';

const API_KEY = 'sk-crash-test';
const SESSION = 'crash-session';

function turn(url: string, turns: number, session = SESSION): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...authHeaders('chat', API_KEY), 'x-selfgc-session': session },
    body: JSON.stringify(conversationBody('chat', { turns })),
  });
}

/** The store's name of `session` under the test's key. */
const storeSessionOf = (session: string) =>
  `${hashApiKey(new Headers({ authorization: `Bearer ${API_KEY}` }))}:${session}`;

const STORE_SESSION = storeSessionOf(SESSION);

async function readDurable(storePath: string, storeSession = STORE_SESSION) {
  const store = createSqliteStore({ path: storePath });
  try {
    const commits = await store.listCommits(storeSession);
    const payloads = await store.listPayloads(storeSession);
    return { commits, payloads, session: await store.readSession(storeSession) };
  } finally {
    await store.close();
  }
}

/** The committed object states in a stored session state. */
function objectStates(state: unknown): ViewState {
  return (state as { objects?: ViewState } | undefined)?.objects ?? {};
}

/** The transcript as the proxy reads it from a chat request of `turns` file reads. */
function transcriptOf(turns: number): Message[] {
  return fromOpenAIChat(chatConversation({ turns }) as OpenAIChatMessage[]).messages;
}

/**
 * A stored payload is byte-exact: a tool output is one of the files read, and the work after a
 * request (a span fold) is the very slice of the transcript it names.
 */
function expectExactPayload(record: SidecarRecord): void {
  const payload = parseObjectPayload(record.payload, record.objectId);
  if (payload.kind === 'function') {
    expect(ORIGINALS.has(payloadText(payload))).toBe(true);
    return;
  }
  expect(payload.messages.length).toBeGreaterThan(0);
  const transcript = transcriptOf(40);
  expect(payload.messages).toEqual(transcript.slice(payload.start, payload.start + payload.messages.length));
}

/**
 * The store describes itself: every committed state has its payload under its sidecar key, and
 * every payload of a committed commit is a committed state's or an earlier, shallower span fold of
 * a committed request. Payloads go before their commit (`commitPlan`): a kill between the two
 * leaves the payloads of one commit that never was, which nothing names; only those (one commit's
 * a kill) may differ.
 */
function expectStatesMatchPayloads(
  durable: { commits: readonly CommitRecord[]; payloads: readonly SidecarRecord[] },
  states: ViewState,
  kills = 1,
): void {
  const committed = new Set(durable.commits.map((commit) => commit.commitId));
  const keys = durable.payloads.map((record) => recoveryKeyOf(record.objectId));
  for (const [objectId, state] of Object.entries(states))
    expect(keys).toContain(sidecarKey(objectId, state.spanEnd));
  const interrupted = new Set(
    durable.payloads.filter((record) => !committed.has(record.commitId)).map((record) => record.commitId),
  );
  expect(interrupted.size).toBeLessThanOrEqual(kills);
  const ofCommits = durable.payloads.filter((record) => committed.has(record.commitId));
  for (const key of ofCommits.map((record) => recoveryKeyOf(record.objectId))) {
    const [objectId = '', at] = key.split('@');
    expect(states[objectId], key).toBeDefined();
    if (at !== undefined) expect(Number(at)).toBeLessThanOrEqual(states[objectId]?.spanEnd ?? 0);
  }
}

const ORIGINALS = new Set(Array.from({ length: 40 }, (_, index) => fileContent(index)));

describe('kill -9 and restart on the same SQLite file', () => {
  let upstream: ScriptedUpstream;
  let directory: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'selfgc-proxy-crash-'));
    upstream = await startScriptedUpstream({
      // The 12-turn request is the one in flight when the proxy dies. The governed view may
      // fold any number of earlier messages, but its latest turn (the 12th read) stays whole.
      script: (request) => {
        const messages = (request.body as { messages: Array<{ tool_call_id?: string }> }).messages;
        return messages.at(-1)?.tool_call_id === 'call_11' ? { hang: true } : { text: 'next' };
      },
    });
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await upstream.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('keeps every commit and sidecar payload, and the session carries on', async () => {
    const storePath = join(directory, 'selfgc.db');
    const first = await spawnProxyChild({ storeUrl: `sqlite:${storePath}`, upstreamUrl: upstream.url });
    children.push(first.process);
    const seenCommits: string[] = [];
    for (const turns of [8, 9, 10, 11]) {
      const response = await turn(first.url, turns);
      expect(response.status).toBe(200);
      await response.text();
      const commit = response.headers.get('x-selfgc-commit');
      if (commit !== null) seenCommits.push(commit);
    }
    expect(seenCommits.length).toBeGreaterThan(0);

    const inFlight = turn(first.url, 12).catch((error: unknown) => error);
    const sent = upstream.requests.length;
    while (upstream.requests.length === sent) await new Promise((resolve) => setTimeout(resolve, 10));
    // The upstream holds the 12-turn request (it never answers it): the proxy dies mid-request.
    const hung = upstream.requests.at(-1)!;
    expect((hung.body as { messages: Array<{ tool_call_id?: string }> }).messages.at(-1)?.tool_call_id).toBe(
      'call_11',
    );
    first.process.kill('SIGKILL');
    expect(await inFlight).toBeInstanceOf(Error);
    await first.exited;

    const afterCrash = await readDurable(storePath);
    const committed = afterCrash.commits.map((commit) => commit.commitId);
    // A response names the last commit it made (a request may commit twice: the planner's
    // commit, then the window rescue), so the commits seen are the log's, in its order.
    const seenAt = seenCommits.map((commitId) => committed.indexOf(commitId));
    expect(seenAt).not.toContain(-1);
    expect(seenAt).toEqual([...seenAt].sort((a, b) => a - b));
    expect(afterCrash.commits.map((commit) => commit.sequence)).toEqual(
      committed.map((_, index) => index + 1),
    );
    expect(afterCrash.payloads.length).toBeGreaterThan(0);
    for (const record of afterCrash.payloads) expectExactPayload(record);
    const statesBeforeCrash = objectStates(afterCrash.session?.state);
    const removedBeforeCrash = Object.keys(statesBeforeCrash).sort();
    expect(removedBeforeCrash.length).toBeGreaterThan(0);
    expectStatesMatchPayloads(afterCrash, statesBeforeCrash);

    const second = await spawnProxyChild({ storeUrl: `sqlite:${storePath}`, upstreamUrl: upstream.url });
    children.push(second.process);
    const resumed = await turn(second.url, 13);
    expect(resumed.status).toBe(200);
    expect(await resumed.json()).toMatchObject({ choices: [{ message: { content: 'next' } }] });
    expect(resumed.headers.get('x-selfgc-session')).toBe(SESSION);
    expect(Number(resumed.headers.get('x-selfgc-tokens-after'))).toBeLessThan(
      Number(resumed.headers.get('x-selfgc-tokens-before')),
    );
    // Governance carries on from the stored ledger: the next commit continues the commit log.
    let resumedCommit = resumed.headers.get('x-selfgc-commit');
    let lastTurns = 13;
    for (let turns = 14; resumedCommit === null && turns <= 24; turns += 1) {
      const next = await turn(second.url, turns);
      expect(next.status).toBe(200);
      await next.text();
      resumedCommit = next.headers.get('x-selfgc-commit');
      lastTurns = turns;
    }
    expect(resumedCommit).not.toBeNull();

    second.process.kill('SIGKILL');
    await second.exited;
    const final = await readDurable(storePath);
    const sequences = final.commits.map((commit: CommitRecord) => commit.sequence);
    expect(sequences).toEqual(sequences.map((_, index) => index + 1));
    expect(final.commits.slice(0, afterCrash.commits.length)).toEqual(afterCrash.commits);
    expect(final.payloads.slice(0, afterCrash.payloads.length)).toEqual(afterCrash.payloads);
    expect(final.commits.at(-1)?.commitId).toBe(resumedCommit);
    expect(final.commits.length).toBeGreaterThan(afterCrash.commits.length);
    expect(final.session?.version).toBeGreaterThan(afterCrash.session?.version ?? 0);
    for (const record of final.payloads) expectExactPayload(record);
    const finalStates = objectStates(final.session?.state);
    expectStatesMatchPayloads(final, finalStates, 2);
    // Nothing removed before the crash came back: every state stays, a span fold only deepens,
    // and no file the interrupted request held back is sent whole again.
    expect(Object.keys(finalStates)).toEqual(expect.arrayContaining(removedBeforeCrash));
    for (const [objectId, state] of Object.entries(statesBeforeCrash)) {
      if (state.spanEnd !== undefined)
        expect(finalStates[objectId]?.spanEnd ?? Number.POSITIVE_INFINITY).toBeGreaterThanOrEqual(
          state.spanEnd,
        );
    }
    const forwarded = upstream.requests.at(-1)!.rawBody;
    const heldBackAtCrash = filesOutOf(hung.rawBody, 11);
    expect(heldBackAtCrash.length).toBeGreaterThan(0);
    for (const file of heldBackAtCrash) expect(forwarded).not.toContain(escapedFile(file));
    expect(forwarded).toContain(escapedFile(lastTurns - 1));
    // The restarted proxy showed the upstream exactly the view the store describes.
    const ledger = indexTranscript(transcriptOf(lastTurns), {
      tokenCounter: approximateTokenCounter,
      pin: createPinRule(),
    });
    const view = projectView(ledger, finalStates).items.map((item) => item.message);
    const clientMessages = chatConversation({ turns: lastTurns }) as OpenAIChatMessage[];
    expect((JSON.parse(forwarded) as { messages: unknown[] }).messages).toEqual(
      alternatingLikeClient(toOpenAIChat(view).messages, clientMessages),
    );
  }, 60_000);
});

describe('kill -9 under load and restart on the same SQLite file', () => {
  const SESSIONS = Array.from({ length: 8 }, (_, index) => `loaded-${index}`);
  let upstream: ScriptedUpstream;
  let directory: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'selfgc-proxy-crash-load-'));
    upstream = await startScriptedUpstream({ script: () => ({ text: 'next', delayMs: 20 }) });
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await upstream.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('loses no commit or sidecar record of any session, and every session carries on', async () => {
    const storePath = join(directory, 'selfgc.db');
    const first = await spawnProxyChild({
      storeUrl: `sqlite:${storePath}`,
      upstreamUrl: upstream.url,
      threads: 2,
    });
    children.push(first.process);
    let commits = 0;
    let killed = false;
    const reached = new Map<string, number>();
    // Every session sends its turns one after the other until the proxy dies under them.
    const load = Promise.all(
      SESSIONS.map(async (session) => {
        for (let turns = 8; turns < 40 && !killed; turns += 1) {
          const response = await turn(first.url, turns, session).catch(() => undefined);
          if (response === undefined) return;
          expect(response.status).toBe(200);
          await response.text().catch(() => undefined);
          if (response.headers.get('x-selfgc-commit') !== null) commits += 1;
          reached.set(session, turns);
        }
      }),
    );
    for (let waited = 0; commits < SESSIONS.length && waited < 600; waited += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(commits).toBeGreaterThanOrEqual(SESSIONS.length);
    killed = true;
    first.process.kill('SIGKILL');
    await first.exited;
    await load;

    const afterCrash = new Map<string, Awaited<ReturnType<typeof readDurable>>>();
    for (const session of SESSIONS) {
      const durable = await readDurable(storePath, storeSessionOf(session));
      afterCrash.set(session, durable);
      expect(durable.commits.map((commit) => commit.sequence)).toEqual(
        durable.commits.map((_, index) => index + 1),
      );
      for (const record of durable.payloads) expectExactPayload(record);
      expectStatesMatchPayloads(durable, objectStates(durable.session?.state));
    }
    expect([...afterCrash.values()].filter((durable) => durable.payloads.length > 0).length).toBeGreaterThan(
      0,
    );

    const second = await spawnProxyChild({
      storeUrl: `sqlite:${storePath}`,
      upstreamUrl: upstream.url,
      threads: 2,
    });
    children.push(second.process);
    await Promise.all(
      SESSIONS.map(async (session) => {
        const from = (reached.get(session) ?? 7) + 1;
        for (let turns = from; turns < from + 3; turns += 1) {
          const response = await turn(second.url, turns, session);
          expect(response.status).toBe(200);
          expect(await response.json()).toMatchObject({ choices: [{ message: { content: 'next' } }] });
        }
      }),
    );
    second.process.kill('SIGKILL');
    await second.exited;
    for (const session of SESSIONS) {
      const before = afterCrash.get(session)!;
      const final = await readDurable(storePath, storeSessionOf(session));
      expect(final.commits.slice(0, before.commits.length)).toEqual(before.commits);
      expect(final.payloads.slice(0, before.payloads.length)).toEqual(before.payloads);
      for (const record of final.payloads) expectExactPayload(record);
      expectStatesMatchPayloads(final, objectStates(final.session?.state), 2);
    }
  }, 120_000);
});
