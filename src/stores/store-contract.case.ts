import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BadInputError, StoreError } from '../core/errors.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { readSessionState } from '../core/session-state.js';
import type { CommitRecord, SidecarRecord, SidecarStore } from '../core/store.js';
import { conversation, foreign, transcriptText } from '../core/testing/marked-conversation.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { Message } from '../core/transcript.js';
import {
  commitRecord,
  hostileQueries,
  newSessionId,
  payloadRecord,
  roundTripPayloads,
  searchCorpus,
} from './store-fixtures.case.js';

/**
 * Backend-specific ways to plant records a store would refuse to write, so the suite can
 * prove the read side refuses unknown schema versions too. The memory store has none: it
 * only ever holds what it checked on write.
 */
export interface StoreContractHooks {
  /** Store a payload record as-is, bypassing the store's write checks. */
  writeRawPayload(record: SidecarRecord): Promise<void>;
  /** Append a commit record to its session's log as-is, bypassing the store's write checks. */
  writeRawCommit(commit: CommitRecord): Promise<void>;
  /** Another store on the backend of the latest `makeStore` (as another proxy instance opens it). */
  openPeer?(): Promise<SidecarStore>;
}

/**
 * The contract every `SidecarStore` honours. Each test gets a fresh store from `makeStore`
 * (closed afterwards) and fresh session ids; `cleanup` runs once at the end.
 *
 * Unknown schema versions are refused on both sides: `putPayloads`/`writeCommit` reject a
 * record whose `schemaVersion` is not `STORE_SCHEMA_VERSION` with a `StoreError` before
 * writing anything, and, given `hooks`, a planted record makes reads reject with `StoreError`.
 */
export function describeStoreContract(
  name: string,
  makeStore: () => Promise<SidecarStore>,
  cleanup?: () => Promise<void>,
  hooks?: StoreContractHooks,
): void {
  describe(`${name}: SidecarStore contract`, () => {
    let store: SidecarStore;
    let session: string;

    beforeEach(async () => {
      store = await makeStore();
      session = newSessionId();
    });
    afterEach(async () => {
      await store.close();
    });
    if (cleanup) afterAll(cleanup);

    describe('payloads', () => {
      it('returns every payload byte for byte (unicode, emoji, binary-looking text, 1 MB)', async () => {
        const records = Object.entries(roundTripPayloads).map(([objectId, payload]) =>
          payloadRecord(session, objectId, { payload, searchText: payload }),
        );
        await store.putPayloads(records);
        for (const record of records) {
          const stored = await store.getPayload(session, record.objectId);
          expect(stored).toEqual(record);
          expect(Buffer.from(stored?.payload ?? '\0').equals(Buffer.from(record.payload))).toBe(true);
        }
        expect((await store.listPayloads(session)).map((record) => record.payload)).toEqual(
          records.map((record) => record.payload),
        );
      });

      it('returns undefined for an object that was never stored', async () => {
        expect(await store.getPayload(session, 'function:bash:1')).toBeUndefined();
        expect(await store.listPayloads(session)).toEqual([]);
      });

      it('keeps the first payload when the same object is put again', async () => {
        const first = payloadRecord(session, 'function:bash:1', { payload: 'first', operation: 'mask' });
        await store.putPayloads([first]);
        await store.putPayloads([payloadRecord(session, 'function:bash:1', { payload: 'second' })]);
        expect(await store.getPayload(session, 'function:bash:1')).toEqual(first);
        expect(await store.listPayloads(session)).toEqual([first]);
      });

      it('lists payloads in first-write order, not id order', async () => {
        await store.putPayloads([payloadRecord(session, 'c'), payloadRecord(session, 'a')]);
        await store.putPayloads([payloadRecord(session, 'b'), payloadRecord(session, 'a', { payload: 'x' })]);
        expect((await store.listPayloads(session)).map((record) => record.objectId)).toEqual(['c', 'a', 'b']);
      });

      it('accepts an empty batch', async () => {
        await store.putPayloads([]);
        expect(await store.listPayloads(session)).toEqual([]);
      });
    });

    describe('search', () => {
      beforeEach(async () => {
        await store.putPayloads(
          Object.entries(searchCorpus).map(([objectId, text]) =>
            payloadRecord(session, objectId, { searchText: text }),
          ),
        );
      });

      it('finds payloads by words, best match first, with a snippet', async () => {
        const hits = await store.searchPayloads(session, 'database migration');
        expect(hits.map((hit) => hit.objectId)).toEqual(['migration', 'driver']);
        expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
        expect(hits[0]!.snippet.toLowerCase()).toContain('migration');
        expect(hits[0]!.snippet.length).toBeLessThan(searchCorpus.migration.length + 10);
      });

      it('matches case-insensitively and honours the limit', async () => {
        expect((await store.searchPayloads(session, 'WEATHER')).map((hit) => hit.objectId)).toEqual([
          'weather',
        ]);
        expect(await store.searchPayloads(session, 'the', { limit: 2 })).toHaveLength(2);
        expect(await store.searchPayloads(session, 'nonexistentword')).toEqual([]);
      });

      it('treats query syntax as plain words and never throws', async () => {
        for (const query of hostileQueries) {
          await expect(store.searchPayloads(session, query), query).resolves.toBeInstanceOf(Array);
        }
        const hits = await store.searchPayloads(session, '"migration AND (lock');
        expect(hits[0]?.objectId).toBe('migration');
      });

      it('returns [] for an empty or wordless query', async () => {
        expect(await store.searchPayloads(session, '')).toEqual([]);
        expect(await store.searchPayloads(session, '   ')).toEqual([]);
        expect(await store.searchPayloads(session, '*')).toEqual([]);
      });
    });

    describe('commits and state', () => {
      it('has no state for a new session', async () => {
        expect(await store.readSession(session)).toBeUndefined();
        expect(await store.listCommits(session)).toEqual([]);
      });

      it('writes the first commit at expectedVersion 0 as version 1', async () => {
        const commit = commitRecord(session, 'commit-1', 1);
        const state = {
          schemaVersion: 1,
          pins: ['system'],
          note: 'état ✓ 🚀',
          nested: { counts: [1, 2.5, null] },
        };
        expect(await store.writeCommit(session, commit, state, 0)).toEqual({ status: 'written', version: 1 });
        expect(await store.readSession(session)).toEqual({ version: 1, state });
        expect(await store.listCommits(session)).toEqual([commit]);
      });

      it('refuses a stale expectedVersion and changes nothing', async () => {
        await store.writeCommit(session, commitRecord(session, 'commit-1', 1), { step: 1 }, 0);
        const result = await store.writeCommit(session, commitRecord(session, 'commit-2', 2), { step: 2 }, 0);
        expect(result).toEqual({ status: 'conflict', version: 1 });
        expect(await store.readSession(session)).toEqual({ version: 1, state: { step: 1 } });
        expect((await store.listCommits(session)).map((commit) => commit.commitId)).toEqual(['commit-1']);
        const other = newSessionId();
        expect(await store.writeCommit(other, commitRecord(other, 'c', 1), {}, 3)).toEqual({
          status: 'conflict',
          version: 0,
        });
        expect(await store.readSession(other)).toBeUndefined();
        expect(await store.listCommits(other)).toEqual([]);
      });

      it('reports a commit id written twice as a duplicate and changes nothing', async () => {
        const commit = commitRecord(session, 'commit-1', 1);
        await store.writeCommit(session, commit, { step: 1 }, 0);
        const again = { ...commit, planner: 'llm' };
        expect(await store.writeCommit(session, again, { step: 9 }, 1)).toEqual({
          status: 'duplicate',
          version: 1,
        });
        // A retry with the version it first saw is still a duplicate, not a conflict.
        expect(await store.writeCommit(session, again, { step: 9 }, 0)).toEqual({
          status: 'duplicate',
          version: 1,
        });
        expect(await store.readSession(session)).toEqual({ version: 1, state: { step: 1 } });
        expect(await store.listCommits(session)).toEqual([commit]);
      });

      it('lists commits in sequence order, undo commits included', async () => {
        const first = commitRecord(session, 'commit-a', 1);
        const second = commitRecord(session, 'commit-b', 2);
        const undo = commitRecord(session, 'commit-c', 3, {
          planner: 'undo',
          undoes: 'commit-b',
          operations: [],
        });
        let version = 0;
        for (const commit of [first, second, undo]) {
          const result = await store.writeCommit(session, commit, { last: commit.commitId }, version);
          expect(result.status).toBe('written');
          version = result.version;
        }
        expect(await store.listCommits(session)).toEqual([first, second, undo]);
      });

      it('replaces state with writeState under the same version rule as commits', async () => {
        expect(await store.writeState(session, { cooldown: 1 }, 0)).toEqual({
          status: 'written',
          version: 1,
        });
        expect(await store.writeState(session, { cooldown: 2 }, 0)).toEqual({
          status: 'conflict',
          version: 1,
        });
        expect(await store.readSession(session)).toEqual({ version: 1, state: { cooldown: 1 } });
        expect(await store.writeState(session, { cooldown: 3 }, 1)).toEqual({
          status: 'written',
          version: 2,
        });
        const commit = commitRecord(session, 'commit-1', 1);
        expect(await store.writeCommit(session, commit, { cooldown: 4 }, 2)).toEqual({
          status: 'written',
          version: 3,
        });
        expect(await store.readSession(session)).toEqual({ version: 3, state: { cooldown: 4 } });
        expect(await store.listCommits(session)).toEqual([commit]);
      });

      it('lets exactly one of two concurrent commits at the same version win', async () => {
        const results = await Promise.all([
          store.writeCommit(session, commitRecord(session, 'left', 1), { by: 'left' }, 0),
          store.writeCommit(session, commitRecord(session, 'right', 1), { by: 'right' }, 0),
        ]);
        expect(results.map((result) => result.status).sort()).toEqual(['conflict', 'written']);
        const winner = results[0]?.status === 'written' ? 'left' : 'right';
        expect(await store.readSession(session)).toEqual({ version: 1, state: { by: winner } });
        expect((await store.listCommits(session)).map((commit) => commit.commitId)).toEqual([winner]);
      });
    });

    it('returns state that a caller cannot change for the next reader', async () => {
      const state = { schemaVersion: 1, objects: { a: { anchors: ['x'] } } };
      await store.writeState(session, state, 0);
      const first = (await store.readSession(session))?.state as typeof state;
      try {
        first.objects.a.anchors.push('changed');
      } catch {
        // A store may hand out frozen states instead.
      }
      expect(await store.readSession(session)).toEqual({ version: 1, state });
    });

    const openPeer = hooks?.openPeer;
    if (openPeer) {
      describe('shared with another store instance', () => {
        let peer: SidecarStore;
        beforeEach(async () => {
          peer = await openPeer();
        });
        afterEach(async () => {
          await peer.close();
        });

        it('reads what the other instance wrote after this one read the session', async () => {
          await store.writeState(session, { step: 1 }, 0);
          expect(await store.readSession(session)).toEqual({ version: 1, state: { step: 1 } });
          expect(await peer.readSession(session)).toEqual({ version: 1, state: { step: 1 } });
          await peer.writeCommit(session, commitRecord(session, 'commit-1', 1), { step: 2 }, 1);
          expect(await store.readSession(session)).toEqual({ version: 2, state: { step: 2 } });
          // A write against the version this instance read before is refused.
          expect(await store.writeState(session, { step: 3 }, 1)).toEqual({ status: 'conflict', version: 2 });
          expect(await peer.readSession(session)).toEqual({ version: 2, state: { step: 2 } });
        });

        it('lists what the other instance wrote, and the other reads nothing of what this one expired', async () => {
          await peer.writeState(session, { step: 1 }, 0);
          expect(await peer.readSession(session)).toEqual({ version: 1, state: { step: 1 } });
          expect((await store.listSessions({ prefix: session })).map((summary) => summary.sessionId)).toEqual(
            [session],
          );
          await new Promise((resolve) => setTimeout(resolve, 10));
          expect(await store.expireBefore(Date.now())).toContain(session);
          expect(await peer.readSession(session)).toBeUndefined();
          expect(await peer.listSessions({ prefix: session })).toEqual([]);
        });

        it('reads a session the other instance deleted and wrote again from version 0', async () => {
          await store.writeState(session, { owner: 'old' }, 0);
          expect(await store.readSession(session)).toEqual({ version: 1, state: { owner: 'old' } });
          await peer.deleteSession(session);
          expect(await store.readSession(session)).toBeUndefined();
          await peer.writeState(session, { owner: 'new' }, 0);
          expect(await store.readSession(session)).toEqual({ version: 1, state: { owner: 'new' } });
        });
      });
    }

    it('keeps sessions apart: payloads, search, commits and state', async () => {
      const other = newSessionId();
      await store.putPayloads([
        payloadRecord(session, 'function:bash:1', { payload: 'secret', searchText: 'secret' }),
      ]);
      await store.writeCommit(session, commitRecord(session, 'commit-1', 1), { owner: 'a' }, 0);
      expect(await store.getPayload(other, 'function:bash:1')).toBeUndefined();
      expect(await store.listPayloads(other)).toEqual([]);
      expect(await store.searchPayloads(other, 'secret')).toEqual([]);
      expect(await store.listCommits(other)).toEqual([]);
      expect(await store.readSession(other)).toBeUndefined();
      // The same object id and commit id are independent in another session.
      await store.putPayloads([payloadRecord(other, 'function:bash:1', { payload: 'mine' })]);
      expect(await store.writeCommit(other, commitRecord(other, 'commit-1', 1), { owner: 'b' }, 0)).toEqual({
        status: 'written',
        version: 1,
      });
      await store.deleteSession(other);
      expect((await store.getPayload(session, 'function:bash:1'))?.payload).toBe('secret');
      expect(await store.readSession(session)).toEqual({ version: 1, state: { owner: 'a' } });
    });

    it('deletes everything of a session, after which it starts afresh', async () => {
      await store.putPayloads([payloadRecord(session, 'function:bash:1', { searchText: 'findable' })]);
      await store.writeCommit(session, commitRecord(session, 'commit-1', 1), { step: 1 }, 0);
      await store.deleteSession(session);
      expect(await store.getPayload(session, 'function:bash:1')).toBeUndefined();
      expect(await store.listPayloads(session)).toEqual([]);
      expect(await store.searchPayloads(session, 'findable')).toEqual([]);
      expect(await store.listCommits(session)).toEqual([]);
      expect(await store.readSession(session)).toBeUndefined();
      const result = await store.writeCommit(session, commitRecord(session, 'commit-1', 1), {}, 0);
      expect(result).toEqual({ status: 'written', version: 1 });
    });

    describe('listing and retention', () => {
      /** Between writes, so that every store's clock tells them apart. */
      const pause = () => new Promise((resolve) => setTimeout(resolve, 25));
      /** Other tests' sessions share the backend: expire them all first. */
      async function expireEverything(): Promise<void> {
        while ((await store.expireBefore(Number.MAX_SAFE_INTEGER, { limit: 1000 })).length > 0);
      }
      async function writeSession(sessionId: string): Promise<void> {
        await store.putPayloads([payloadRecord(sessionId, 'function:bash:1', { searchText: 'findable' })]);
        await store.writeCommit(sessionId, commitRecord(sessionId, 'commit-1', 1), { step: 1 }, 0);
      }

      it('lists the sessions that hold anything, most recently written first, with their counts', async () => {
        const prefix = `${session}:`;
        const started = Date.now();
        await store.putPayloads([payloadRecord(`${prefix}a`, 'x'), payloadRecord(`${prefix}a`, 'y')]);
        await store.writeCommit(`${prefix}a`, commitRecord(`${prefix}a`, 'commit-1', 1), {}, 0);
        await pause();
        await store.writeState(`${prefix}b`, { cooldown: 1 }, 0);
        await pause();
        await store.putPayloads([payloadRecord(`${prefix}c`, 'x')]);
        await writeSession(`${prefix}deleted`);
        await store.deleteSession(`${prefix}deleted`);
        // A refused write leaves nothing to list.
        await store.writeCommit(`${prefix}refused`, commitRecord(`${prefix}refused`, 'c', 1), {}, 3);
        await store.writeState(`${prefix}refused`, {}, 2);
        const ended = Date.now();

        const listed = await store.listSessions({ prefix });
        expect(listed.map(({ updatedAt: _, ...rest }) => rest)).toEqual([
          { sessionId: `${prefix}c`, version: 0, payloads: 1, commits: 0 },
          { sessionId: `${prefix}b`, version: 1, payloads: 0, commits: 0 },
          { sessionId: `${prefix}a`, version: 1, payloads: 2, commits: 1 },
        ]);
        for (const summary of listed) {
          expect(summary.updatedAt).toBeGreaterThanOrEqual(started - 5);
          expect(summary.updatedAt).toBeLessThanOrEqual(ended + 5);
        }
        expect(listed[0]!.updatedAt).toBeGreaterThan(listed[2]!.updatedAt);
        expect((await store.listSessions({ prefix, limit: 2 })).map((summary) => summary.sessionId)).toEqual([
          `${prefix}c`,
          `${prefix}b`,
        ]);
        expect(
          (await store.listSessions({ prefix: `${prefix}a` })).map((summary) => summary.sessionId),
        ).toEqual([`${prefix}a`]);
        const everything = (await store.listSessions()).map((summary) => summary.sessionId);
        expect(everything).toEqual(expect.arrayContaining([`${prefix}a`, `${prefix}b`, `${prefix}c`]));
        expect(await store.listSessions({ prefix: `${prefix}nothing` })).toEqual([]);
      });

      it('moves a session written again to the front', async () => {
        const prefix = `${session}:`;
        await writeSession(`${prefix}first`);
        await pause();
        await writeSession(`${prefix}second`);
        await pause();
        await store.writeState(`${prefix}first`, { step: 2 }, 1);
        expect((await store.listSessions({ prefix })).map((summary) => summary.sessionId)).toEqual([
          `${prefix}first`,
          `${prefix}second`,
        ]);
      });

      it('expires the sessions last written before the cutoff, oldest first, a bounded number per call', async () => {
        await expireEverything();
        const old = [`${session}:old-1`, `${session}:old-2`, `${session}:old-3`];
        for (const sessionId of old) {
          await writeSession(sessionId);
          await pause();
        }
        const cutoff = Date.now();
        await pause();
        const fresh = `${session}:fresh`;
        await writeSession(fresh);

        expect(await store.expireBefore(cutoff, { limit: 2 })).toEqual(old.slice(0, 2));
        expect(await store.expireBefore(cutoff, { limit: 2 })).toEqual(old.slice(2));
        expect(await store.expireBefore(cutoff)).toEqual([]);
        for (const sessionId of old) {
          expect(await store.getPayload(sessionId, 'function:bash:1')).toBeUndefined();
          expect(await store.listPayloads(sessionId)).toEqual([]);
          expect(await store.searchPayloads(sessionId, 'findable')).toEqual([]);
          expect(await store.listCommits(sessionId)).toEqual([]);
          expect(await store.readSession(sessionId)).toBeUndefined();
        }
        expect((await store.listSessions()).map((summary) => summary.sessionId)).toEqual([fresh]);
        expect(await store.readSession(fresh)).toEqual({ version: 1, state: { step: 1 } });
        expect((await store.listPayloads(fresh)).length).toBe(1);
        // An expired session starts afresh.
        expect(await store.writeCommit(old[0]!, commitRecord(old[0]!, 'commit-1', 1), {}, 0)).toEqual({
          status: 'written',
          version: 1,
        });
      });

      it('keeps a session written again after the cutoff', async () => {
        await writeSession(session);
        await pause();
        const cutoff = Date.now();
        await pause();
        await store.writeState(session, { step: 2 }, 1);
        expect(await store.expireBefore(cutoff)).not.toContain(session);
        expect(await store.readSession(session)).toEqual({ version: 2, state: { step: 2 } });
      });

      it('refuses a limit that is not a positive integer and a cutoff that is not a number', async () => {
        await expect(store.listSessions({ limit: 0 })).rejects.toBeInstanceOf(BadInputError);
        await expect(store.expireBefore(Date.now(), { limit: -1 })).rejects.toBeInstanceOf(BadInputError);
        await expect(store.expireBefore(Number.NaN)).rejects.toBeInstanceOf(BadInputError);
      });
    });

    describe('schema versions', () => {
      it('refuses to write records of an unknown schema version, writing none of the batch', async () => {
        const batch = [payloadRecord(session, 'good'), payloadRecord(session, 'bad', { schemaVersion: 999 })];
        await expect(store.putPayloads(batch)).rejects.toBeInstanceOf(StoreError);
        expect(await store.listPayloads(session)).toEqual([]);
        const commit = commitRecord(session, 'commit-1', 1, { schemaVersion: 999 });
        await expect(store.writeCommit(session, commit, {}, 0)).rejects.toBeInstanceOf(StoreError);
        expect(await store.readSession(session)).toBeUndefined();
        expect(await store.listCommits(session)).toEqual([]);
      });

      if (hooks) {
        it('rejects reads of stored records with an unknown schema version', async () => {
          await hooks.writeRawPayload(payloadRecord(session, 'future', { schemaVersion: 999 }));
          await expect(store.getPayload(session, 'future')).rejects.toBeInstanceOf(StoreError);
          await expect(store.listPayloads(session)).rejects.toBeInstanceOf(StoreError);
          await hooks.writeRawCommit(commitRecord(session, 'future', 1, { schemaVersion: 999 }));
          await expect(store.listCommits(session)).rejects.toBeInstanceOf(StoreError);
        });
      }
    });

    it('rejects work after close with a StoreError', async () => {
      await store.close();
      await expect(store.getPayload(session, 'x')).rejects.toBeInstanceOf(StoreError);
      await expect(store.writeState(session, {}, 0)).rejects.toBeInstanceOf(StoreError);
    });

    describe('content-bound state through a governor', () => {
      // Two histories under one session id: the second never sees or recovers the first's content.
      const cases: Array<[string, (first: Message[]) => Message[]]> = [
        ['another conversation', () => conversation('bravo', 12)],
        ['old rounds elided by the client', (first) => [...first.slice(0, 2), ...first.slice(8)]],
      ];
      it.each(cases)('%s', async (_name, next) => {
        const governor = createGovernor({
          provider: 'openai',
          window: 3_000,
          store,
          tokenCounter: approximateTokenCounter,
          triggers: { milestones: false, minBatch: 0, cooldownMessages: 2 },
          cache: 'blind',
        });
        const first = conversation('alpha', 14);
        for (let end = 4; end <= first.length; end += 2) await governor.project(session, first.slice(0, end));
        expect((await store.listCommits(session)).length).toBeGreaterThan(0);
        const second = next(first);
        const result = await governor.project(session, second);
        expect(result.divergence).toBeDefined();
        expect(foreign(transcriptText(result.view), second)).toEqual([]);
        for (const key of Object.keys(result.recoverable)) {
          expect(foreign((await governor.expand(session, key, result.recoverable)) ?? '', second)).toEqual(
            [],
          );
        }
        // Read back from the store alone (another instance): the same holds.
        for (const key of Object.keys((await readSessionState(store, session)).state.payloads)) {
          expect(foreign((await governor.expand(session, key)) ?? '', second)).toEqual([]);
        }
      });
    });
  });
}
