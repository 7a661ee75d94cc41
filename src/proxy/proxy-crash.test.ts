import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseObjectPayload, payloadText } from '../core/object-payload.js';
import type { CommitRecord } from '../core/store.js';
import { createSqliteStore } from '../stores/sqlite-store.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { hashApiKey } from './session-identity.js';
import { authHeaders, conversationBody, fileContent } from './testing/agent-conversation.js';
import { spawnProxyChild } from './testing/spawn-proxy-child.js';

const API_KEY = 'sk-crash-test';
const SESSION = 'crash-session';
const STORE_SESSION = `${hashApiKey(new Headers({ authorization: `Bearer ${API_KEY}` }))}:${SESSION}`;

function turn(url: string, turns: number): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...authHeaders('chat', API_KEY), 'x-selfgc-session': SESSION },
    body: JSON.stringify(conversationBody('chat', { turns })),
  });
}

async function readDurable(storePath: string) {
  const store = createSqliteStore({ path: storePath });
  try {
    const commits = await store.listCommits(STORE_SESSION);
    const payloads = await store.listPayloads(STORE_SESSION);
    return { commits, payloads, session: await store.readSession(STORE_SESSION) };
  } finally {
    await store.close();
  }
}

/** The committed object states in a stored session state. */
function objectStates(state: unknown): Record<string, { replacement: string }> {
  return (state as { objects?: Record<string, { replacement: string }> } | undefined)?.objects ?? {};
}

const ORIGINALS = new Set(Array.from({ length: 40 }, (_, index) => fileContent(index)));

describe('kill -9 and restart on the same SQLite file', () => {
  let upstream: ScriptedUpstream;
  let directory: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'selfgc-proxy-crash-'));
    upstream = await startScriptedUpstream({
      // The 12-turn request is the one in flight when the proxy dies.
      script: (request) => {
        const messages = (request.body as { messages: unknown[] }).messages;
        return messages.length >= 2 + 2 * 12 && messages.length < 2 + 2 * 13
          ? { hang: true }
          : { text: 'next' };
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
    first.process.kill('SIGKILL');
    expect(await inFlight).toBeInstanceOf(Error);
    await first.exited;

    const afterCrash = await readDurable(storePath);
    const committed = afterCrash.commits.map((commit) => commit.commitId);
    expect(committed.slice(0, seenCommits.length)).toEqual(seenCommits);
    expect(afterCrash.commits.map((commit) => commit.sequence)).toEqual(
      committed.map((_, index) => index + 1),
    );
    expect(afterCrash.payloads.length).toBeGreaterThan(0);
    for (const record of afterCrash.payloads) {
      expect(ORIGINALS.has(payloadText(parseObjectPayload(record.payload, record.objectId)))).toBe(true);
    }
    const removedBeforeCrash = Object.keys(objectStates(afterCrash.session?.state)).sort();
    expect(removedBeforeCrash).toEqual(afterCrash.payloads.map((record) => record.objectId).sort());

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
    for (let turns = 14; resumedCommit === null && turns <= 24; turns += 1) {
      const next = await turn(second.url, turns);
      expect(next.status).toBe(200);
      await next.text();
      resumedCommit = next.headers.get('x-selfgc-commit');
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
    // The restarted proxy showed the upstream exactly the view the store describes, and nothing
    // removed before the crash came back.
    const finalStates = objectStates(final.session?.state);
    expect(Object.keys(finalStates)).toEqual(expect.arrayContaining(removedBeforeCrash));
    const forwarded = upstream.requests.at(-1)!.rawBody;
    for (const { replacement } of Object.values(finalStates)) {
      expect(forwarded).toContain(JSON.stringify(replacement).slice(1, -1));
    }
    const lastTurns = (JSON.parse(forwarded) as { messages: unknown[] }).messages.length / 2 - 1;
    expect(forwarded).toContain(JSON.stringify(fileContent(lastTurns - 1)).slice(1, -1));
  }, 60_000);
});
