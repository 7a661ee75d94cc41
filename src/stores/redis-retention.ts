/**
 * Retention for the Redis store: a sorted set of sessions by time of latest write (see
 * `redisSessionIndexKey`), refreshed after each write together with the sessions' TTLs, and
 * the commands that list sessions and expire the old ones.
 */
import type { Redis } from 'ioredis';
import { StoreError } from '../core/errors.js';
import type { ListSessionsOptions, SessionSummary } from '../core/store.js';
import type { RedisSessionKeys } from './redis-store.js';
import { compareSummaries, readExpireOptions, readListOptions } from './retention-options.js';

export interface RedisRetention {
  /**
   * After a write: the session's time in the index (a state write; `payloads` marks only the
   * first write, as `SessionSummary` says), and its keys' TTL when one is set.
   */
  touch(sessionId: string, write?: 'state' | 'payloads'): Promise<void>;
  /** After `deleteSession`: the session leaves the index. */
  forget(sessionId: string): Promise<void>;
  listSessions(options: ListSessionsOptions | undefined): Promise<SessionSummary[]>;
  expireBefore(cutoff: number, options: { limit?: number } | undefined): Promise<string[]>;
}

/** Fail on the first error a pipeline's commands met. */
function checkPipeline(results: Array<[Error | null, unknown]> | null, operation: string): unknown[] {
  if (results === null) throw new StoreError(`redis ${operation}: pipeline was discarded`);
  return results.map(([error, value]) => {
    if (error !== null) throw error;
    return value;
  });
}

export interface RedisRetentionOptions {
  /** The index's key (`redisSessionIndexKey`). */
  index: string;
  /** The keys of a session (`redisSessionKeys`). */
  keysOf(sessionId: string): RedisSessionKeys;
  /** TTL of a session's keys after each write, when set. */
  retainMs: number | undefined;
}

export function createRedisRetention(client: Redis, options: RedisRetentionOptions): RedisRetention {
  const { index, retainMs } = options;
  const keysOf = (sessionId: string) => Object.values(options.keysOf(sessionId));

  /** Summaries of these sessions, without those whose keys are gone (expired by their TTL). */
  async function summarise(entries: ReadonlyArray<{ sessionId: string; updatedAt: number }>) {
    const pipeline = client.pipeline();
    for (const { sessionId } of entries) {
      const keys = options.keysOf(sessionId);
      pipeline.hget(keys.state, 'version').llen(keys.payloadOrder).llen(keys.commits);
    }
    const values = checkPipeline(await pipeline.exec(), 'listSessions');
    return entries.flatMap(({ sessionId, updatedAt }, position): SessionSummary[] => {
      const [version, payloads, commits] = values.slice(position * 3, position * 3 + 3);
      const summary = {
        sessionId,
        updatedAt,
        version: version === null ? 0 : Number(version),
        payloads: Number(payloads),
        commits: Number(commits),
      };
      return summary.version > 0 || summary.payloads > 0 ? [summary] : [];
    });
  }

  return {
    async touch(sessionId, write = 'state') {
      const pipeline =
        write === 'payloads'
          ? client.pipeline().zadd(index, 'NX', Date.now(), sessionId)
          : client.pipeline().zadd(index, Date.now(), sessionId);
      if (retainMs !== undefined) for (const key of keysOf(sessionId)) pipeline.pexpire(key, retainMs);
      checkPipeline(await pipeline.exec(), 'touch');
    },

    async forget(sessionId) {
      await client.zrem(index, sessionId);
    },

    async listSessions(options) {
      const { prefix, limit } = readListOptions(options);
      const flat = await client.zrange(index, 0, -1, 'WITHSCORES');
      const entries: Array<{ sessionId: string; updatedAt: number }> = [];
      for (let position = 0; position + 1 < flat.length; position += 2) {
        const sessionId = flat[position]!;
        if (sessionId.startsWith(prefix)) entries.push({ sessionId, updatedAt: Number(flat[position + 1]) });
      }
      entries.sort((left, right) =>
        compareSummaries(
          { ...left, version: 0, payloads: 0, commits: 0 },
          { ...right, version: 0, payloads: 0, commits: 0 },
        ),
      );
      const listed: SessionSummary[] = [];
      for (let start = 0; start < entries.length && listed.length < limit; start += limit) {
        listed.push(...(await summarise(entries.slice(start, start + limit))));
      }
      return listed.slice(0, limit);
    },

    async expireBefore(cutoff, options) {
      const limit = readExpireOptions(cutoff, options);
      const candidates = await client.zrangebyscore(index, '-inf', `(${cutoff}`, 'LIMIT', 0, limit);
      const removed: string[] = [];
      for (const sessionId of candidates) {
        // Written again since it was picked (another instance): it stays.
        const score = await client.zscore(index, sessionId);
        if (score !== null && Number(score) >= cutoff) continue;
        await client.del(...keysOf(sessionId));
        await client.zrem(index, sessionId);
        removed.push(sessionId);
      }
      return removed;
    },
  };
}
