import { Redis } from 'ioredis';
import { StoreError } from '../core/errors.js';
import type { SidecarRecord, SidecarStore, WriteCommitResult, WriteStateResult } from '../core/store.js';
import {
  checkCommitWritable,
  checkPayloadsWritable,
  decodeCommit,
  decodePayload,
  encodeJson,
  sortCommits,
} from './record-codec.js';
import { createRedisRetention } from './redis-retention.js';
import { searchInProcess } from './search-in-process.js';
import { createStateCache } from './state-cache.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAINTENANCE_TIMEOUT_MS } from './store-policy.js';
import { withStoreErrors } from './with-store-errors.js';

/** Options of `createRedisStore`: a URL (the store owns the connection) or a client (the caller does). */
export type RedisStoreOptions = (
  | {
      /** e.g. `redis://127.0.0.1:6379/0` or `rediss://…`; the connection is closed by `close()`. */
      url: string;
    }
  | {
      /** A connected ioredis client, shared with the caller; `close()` leaves it open. */
      client: Redis;
    }
) & {
  /** First part of every key (default `selfgc`), so several deployments can share a database. */
  keyPrefix?: string;
  /**
   * For a client the store creates: how long a connection attempt may take, and how long a
   * command may wait for its answer, queued while reconnecting included, in milliseconds
   * (defaults `DEFAULT_CONNECT_TIMEOUT_MS` and `DEFAULT_MAINTENANCE_TIMEOUT_MS`).
   */
  connectTimeoutMs?: number;
  commandTimeoutMs?: number;
  /**
   * Retention in milliseconds: every key of a session expires this long after the session's
   * latest write (Redis TTLs), so an idle session leaves even when no sweep runs. Default: none
   * (sessions stay until `expireBefore` or `deleteSession`).
   */
  retainMs?: number;
};

/** The keys of one session. All share the `{…}` hash tag, so in a cluster they share a slot. */
export interface RedisSessionKeys {
  /** Hash: object id → payload record (JSON). */
  payloads: string;
  /** List: object ids in first-write order. */
  payloadOrder: string;
  /** List: commit records (JSON) in write order. */
  commits: string;
  /** Hash: commit id → 1, for duplicate detection. */
  commitIds: string;
  /** Hash: `version` and `state` (JSON). */
  state: string;
}

/**
 * The sorted set of every session by time of latest write (ms), for `listSessions` and
 * `expireBefore`. It lives outside the sessions' hash tags (in a cluster, in a slot of its own),
 * so it is updated by a command of its own after each write, never inside a session's script.
 */
export function redisSessionIndexKey(keyPrefix: string): string {
  return `${keyPrefix}:sessions`;
}

/** Key layout of a session; the session id is URI-encoded so it can never break the hash tag. */
export function redisSessionKeys(keyPrefix: string, sessionId: string): RedisSessionKeys {
  const base = `${keyPrefix}:{${encodeURIComponent(sessionId)}}`;
  return {
    payloads: `${base}:payloads`,
    payloadOrder: `${base}:payload-order`,
    commits: `${base}:commits`,
    commitIds: `${base}:commit-ids`,
    state: `${base}:state`,
  };
}

// KEYS: payloads, payload-order. ARGV: objectId, record, objectId, record, …
const PUT_PAYLOADS = `
for i = 1, #ARGV, 2 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('RPUSH', KEYS[2], ARGV[i])
  end
end
return 0`;

// KEYS: state, commits, commit-ids. ARGV: commitId, commit, state, expectedVersion.
const WRITE_COMMIT = `
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return {'duplicate', version} end
if version ~= tonumber(ARGV[4]) then return {'conflict', version} end
redis.call('HSET', KEYS[3], ARGV[1], '1')
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'version', version + 1, 'state', ARGV[3])
return {'written', version + 1}`;

// KEYS: state. ARGV: state, expectedVersion.
const WRITE_STATE = `
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if version ~= tonumber(ARGV[2]) then return {'conflict', version} end
redis.call('HSET', KEYS[1], 'version', version + 1, 'state', ARGV[1])
return {'written', version + 1}`;

function readCasReply(reply: unknown): WriteCommitResult {
  if (Array.isArray(reply) && typeof reply[1] === 'number') {
    const [status, version] = reply;
    if (status === 'written' || status === 'duplicate' || status === 'conflict') return { status, version };
  }
  throw new StoreError(`redis store: unexpected script reply ${JSON.stringify(reply)}`);
}

function groupBySession(records: readonly SidecarRecord[]): Map<string, SidecarRecord[]> {
  const groups = new Map<string, SidecarRecord[]>();
  for (const record of records) {
    const group = groups.get(record.sessionId);
    if (group === undefined) groups.set(record.sessionId, [record]);
    else group.push(record);
  }
  return groups;
}

/**
 * A sidecar store in Redis (ioredis), for several proxy instances sharing sessions. Writes
 * that must be atomic run as Lua scripts; search scans the session's payloads in process.
 */
/**
 * A client that never makes a request wait out a reconnect storm: a command whose connection
 * drops fails at the next reconnect attempt instead of after twenty, one queued while the
 * server is away or silent fails after `commandTimeout`, and connection errors are heard here
 * (the command that meets one fails with it) instead of printed as unhandled.
 */
function connectRedis(url: string, options: RedisStoreOptions): Redis {
  const client = new Redis(url, {
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    commandTimeout: options.commandTimeoutMs ?? DEFAULT_MAINTENANCE_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
  });
  client.on('error', () => undefined);
  return client;
}

/** QUIT, or when the server does not answer in time, drop the connection. */
async function quitRedis(client: Redis): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const giveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, DEFAULT_CONNECT_TIMEOUT_MS);
  });
  try {
    await Promise.race([client.quit().then(() => undefined), giveUp]);
  } catch {
    // Not connected: nothing to say goodbye to.
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}

export function createRedisStore(options: RedisStoreOptions): SidecarStore {
  const ownsClient = 'url' in options;
  const client = 'url' in options ? connectRedis(options.url, options) : options.client;
  const keyPrefix = options.keyPrefix ?? 'selfgc';
  const keysOf = (sessionId: string) => redisSessionKeys(keyPrefix, sessionId);
  let closed = false;
  const states = createStateCache();
  const retention = createRedisRetention(client, {
    index: redisSessionIndexKey(keyPrefix),
    keysOf,
    retainMs: options.retainMs,
  });

  /** Every operation but `close` goes through here: backend errors become StoreError, and a closed store refuses work even when the client it was given is still open. */
  function run<T>(operation: string, body: () => Promise<T>): Promise<T> {
    return withStoreErrors(`redis ${operation}`, () => {
      if (closed) throw new StoreError(`redis store: ${operation} after close`);
      return body();
    });
  }

  async function listPayloads(sessionId: string): Promise<SidecarRecord[]> {
    const keys = keysOf(sessionId);
    const objectIds = await client.lrange(keys.payloadOrder, 0, -1);
    if (objectIds.length === 0) return [];
    const stored = await client.hmget(keys.payloads, ...objectIds);
    // A value can be missing only if the session was deleted between the two reads.
    return stored.flatMap((text) => (text === null ? [] : [decodePayload(text, sessionId)]));
  }

  return {
    kind: 'redis',

    putPayloads: (records) =>
      run('putPayloads', async () => {
        checkPayloadsWritable(records);
        for (const [sessionId, group] of groupBySession(records)) {
          const keys = keysOf(sessionId);
          const pairs = group.flatMap((record) => [record.objectId, encodeJson(record)]);
          await client.eval(PUT_PAYLOADS, 2, keys.payloads, keys.payloadOrder, ...pairs);
          await retention.touch(sessionId, 'payloads');
        }
      }),

    getPayload: (sessionId, objectId) =>
      run('getPayload', async () => {
        const text = await client.hget(keysOf(sessionId).payloads, objectId);
        return text === null ? undefined : decodePayload(text, sessionId);
      }),

    listPayloads: (sessionId) => run('listPayloads', () => listPayloads(sessionId)),

    searchPayloads: (sessionId, query, searchOptions) =>
      run('searchPayloads', async () => searchInProcess(await listPayloads(sessionId), query, searchOptions)),

    readSession: (sessionId) =>
      run('readSession', async () => {
        const [version, state] = await client.hmget(keysOf(sessionId).state, 'version', 'state');
        if (version === null || version === undefined || state === null || state === undefined)
          return undefined;
        return { version: Number(version), state: states.decode(sessionId, state) };
      }),

    writeCommit: (sessionId, commit, state, expectedVersion) =>
      run('writeCommit', async () => {
        checkCommitWritable(sessionId, commit);
        const keys = keysOf(sessionId);
        const reply = await client.eval(
          WRITE_COMMIT,
          3,
          keys.state,
          keys.commits,
          keys.commitIds,
          commit.commitId,
          encodeJson(commit),
          encodeJson(state),
          expectedVersion,
        );
        const result = readCasReply(reply);
        if (result.status === 'written') await retention.touch(sessionId);
        return result;
      }),

    writeState: (sessionId, state, expectedVersion) =>
      run('writeState', async (): Promise<WriteStateResult> => {
        const reply = readCasReply(
          await client.eval(WRITE_STATE, 1, keysOf(sessionId).state, encodeJson(state), expectedVersion),
        );
        if (reply.status === 'duplicate') throw new StoreError('redis writeState: unexpected duplicate');
        if (reply.status === 'written') await retention.touch(sessionId);
        return reply;
      }),

    listCommits: (sessionId) =>
      run('listCommits', async () => {
        const stored = await client.lrange(keysOf(sessionId).commits, 0, -1);
        return sortCommits(stored.map((text) => decodeCommit(text, sessionId)));
      }),

    deleteSession: (sessionId) =>
      run('deleteSession', async () => {
        states.forget(sessionId);
        await client.del(...Object.values(keysOf(sessionId)));
        await retention.forget(sessionId);
      }),

    close: () =>
      withStoreErrors('redis close', async () => {
        if (closed) return;
        closed = true;
        if (ownsClient) await quitRedis(client);
      }),

    listSessions: (listOptions) => run('listSessions', () => retention.listSessions(listOptions)),

    expireBefore: (cutoff, expireOptions) =>
      run('expireBefore', async () => {
        const removed = await retention.expireBefore(cutoff, expireOptions);
        for (const sessionId of removed) states.forget(sessionId);
        return removed;
      }),
  };
}
