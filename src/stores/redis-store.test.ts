import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommitRecord, SidecarRecord } from '../core/store.js';
import { createRedisStore, redisSessionIndexKey, redisSessionKeys } from './redis-store.js';
import { describeStoreContract } from './store-contract.case.js';
import { commitRecord, newSessionId, payloadRecord } from './store-fixtures.case.js';
import {
  deleteRedisKeys,
  describeWithService,
  probeRedis,
  redisTestUrl,
  runTag,
} from './test-services.case.js';

const keyPrefix = `selfgc-test:${runTag()}`;
const unavailable = await probeRedis(redisTestUrl);

/** Delete every key of this run (all live under `keyPrefix`). */
const deleteRunKeys = () => deleteRedisKeys(redisTestUrl, keyPrefix);

describeWithService('redis store', unavailable, () => {
  let raw: Redis;
  beforeAll(() => {
    raw = new Redis(redisTestUrl);
  });
  afterAll(async () => {
    await raw.quit();
    await deleteRunKeys();
  });

  describeStoreContract(
    'redis',
    async () => createRedisStore({ url: redisTestUrl, keyPrefix }),
    deleteRunKeys,
    {
      async writeRawPayload(record: SidecarRecord) {
        const keys = redisSessionKeys(keyPrefix, record.sessionId);
        await raw.hset(keys.payloads, record.objectId, JSON.stringify(record));
        await raw.rpush(keys.payloadOrder, record.objectId);
      },
      async writeRawCommit(commit: CommitRecord) {
        const keys = redisSessionKeys(keyPrefix, commit.sessionId);
        await raw.rpush(keys.commits, JSON.stringify(commit));
        await raw.hset(keys.commitIds, commit.commitId, '1');
      },
      openPeer: async () => createRedisStore({ url: redisTestUrl, keyPrefix }),
    },
  );

  describe('redis specifics', () => {
    it('keeps all keys of a session under its prefix and one hash tag, even for odd session ids', async () => {
      const store = createRedisStore({ url: redisTestUrl, keyPrefix });
      const session = `odd{session}:id*with/${newSessionId()}`;
      await store.putPayloads([payloadRecord(session, 'function:bash:1')]);
      await store.writeCommit(session, commitRecord(session, 'commit-1', 1), { step: 1 }, 0);
      const keys = Object.values(redisSessionKeys(keyPrefix, session));
      const tag = `{${encodeURIComponent(session)}}`;
      expect(keys.every((key) => key.startsWith(`${keyPrefix}:${tag}:`))).toBe(true);
      // The hash tag is the first {…} of the key, so every key of the session maps to one slot.
      expect(new Set(keys.map((key) => /\{[^}]*\}/.exec(key)?.[0])).size).toBe(1);
      expect(await raw.exists(...keys)).toBe(keys.length);
      await store.deleteSession(session);
      expect(await raw.exists(...keys)).toBe(0);
      await store.close();
    });

    it('with retainMs, gives every key of a session a TTL that each write renews', async () => {
      const store = createRedisStore({ url: redisTestUrl, keyPrefix, retainMs: 60_000 });
      const session = newSessionId();
      await store.putPayloads([payloadRecord(session, 'function:bash:1')]);
      await store.writeCommit(session, commitRecord(session, 'commit-1', 1), { step: 1 }, 0);
      const keys = Object.values(redisSessionKeys(keyPrefix, session));
      for (const key of keys) {
        const ttl = await raw.pttl(key);
        expect(ttl, key).toBeGreaterThan(50_000);
        expect(ttl, key).toBeLessThanOrEqual(60_000);
      }
      // The index of sessions holds every session: it never expires.
      expect(await raw.pttl(redisSessionIndexKey(keyPrefix))).toBe(-1);
      await raw.pexpire(keys[0]!, 1000);
      await store.writeState(session, { step: 2 }, 1);
      expect(await raw.pttl(keys[0]!)).toBeGreaterThan(50_000);
      await store.close();
    });

    it('lists no session whose keys expired, and expires its index entry', async () => {
      const store = createRedisStore({ url: redisTestUrl, keyPrefix, retainMs: 60_000 });
      const session = newSessionId();
      await store.writeState(session, { step: 1 }, 0);
      await raw.del(...Object.values(redisSessionKeys(keyPrefix, session)));
      expect(await store.listSessions({ prefix: session })).toEqual([]);
      expect(await raw.zscore(redisSessionIndexKey(keyPrefix), session)).not.toBeNull();
      expect(await store.expireBefore(Date.now() + 1)).toContain(session);
      expect(await raw.zscore(redisSessionIndexKey(keyPrefix), session)).toBeNull();
      await store.close();
    });

    it('leaves a client it was given open on close', async () => {
      const client = new Redis(redisTestUrl);
      const store = createRedisStore({ client, keyPrefix });
      const session = newSessionId();
      await store.writeState(session, { step: 1 }, 0);
      await store.close();
      expect(await client.ping()).toBe('PONG');
      await client.quit();
    });

    it('lets one of two commits from separate connections win', async () => {
      const left = createRedisStore({ url: redisTestUrl, keyPrefix });
      const right = createRedisStore({ url: redisTestUrl, keyPrefix });
      const session = newSessionId();
      const results = await Promise.all([
        left.writeCommit(session, commitRecord(session, 'left', 1), {}, 0),
        right.writeCommit(session, commitRecord(session, 'right', 1), {}, 0),
      ]);
      expect(results.map((result) => result.status).sort()).toEqual(['conflict', 'written']);
      expect(await left.listCommits(session)).toHaveLength(1);
      await Promise.all([left.close(), right.close()]);
    });
  });
});
