import { StoreError } from '../core/errors.js';
import type {
  CommitRecord,
  SessionSummary,
  SidecarRecord,
  SidecarStore,
  WriteCommitResult,
  WriteStateResult,
} from '../core/store.js';
import {
  checkCommitWritable,
  checkPayloadsWritable,
  decodeCommit,
  encodeJson,
  sortCommits,
} from './record-codec.js';
import { compareSummaries, readExpireOptions, readListOptions } from './retention-options.js';
import { searchInProcess } from './search-in-process.js';
import { createStateCache } from './state-cache.js';
import { withStoreErrors } from './with-store-errors.js';

interface SessionData {
  /** Insertion order of a Map is first-write order. */
  payloads: Map<string, SidecarRecord>;
  /**
   * Commits and state are kept as JSON text, as a durable store would, so callers never share
   * objects with the store. Reads share one frozen decoding per state, as the durable stores do.
   */
  commits: Map<string, string>;
  version: number;
  state: string;
  /** Time of the latest write, for retention. */
  updatedAt: number;
}

/**
 * A store that lives in this process only: for tests, evaluation runs and one-shot CLI use.
 * It takes no options. Everything is lost on `close()`.
 */
export function createMemoryStore(): SidecarStore {
  const sessions = new Map<string, SessionData>();
  let closed = false;
  const states = createStateCache();

  /** As the durable stores do: a closed store refuses work, and any failure is a StoreError. */
  function run<T>(operation: string, body: () => T): Promise<T> {
    return withStoreErrors(`memory ${operation}`, () => {
      if (closed) throw new StoreError(`memory store: ${operation} after close`);
      return body();
    });
  }

  /**
   * The session to write to: every write goes through here, so it marks the write's time
   * (`touch`: a state write; payloads mark only the first write, as `SessionSummary` says).
   */
  function sessionOf(sessionId: string, touch = true): SessionData {
    let session = sessions.get(sessionId);
    if (session === undefined) {
      session = { payloads: new Map(), commits: new Map(), version: 0, state: 'null', updatedAt: Date.now() };
      sessions.set(sessionId, session);
    }
    if (touch) session.updatedAt = Date.now();
    return session;
  }

  /** Sessions that hold anything (a refused write can leave an empty entry behind). */
  function summaries(): SessionSummary[] {
    return [...sessions]
      .filter(([, session]) => session.version > 0 || session.payloads.size > 0)
      .map(([sessionId, session]) => ({
        sessionId,
        updatedAt: session.updatedAt,
        version: session.version,
        payloads: session.payloads.size,
        commits: session.commits.size,
      }))
      .sort(compareSummaries);
  }

  return {
    kind: 'memory',

    putPayloads: (records) =>
      run('putPayloads', () => {
        checkPayloadsWritable(records);
        for (const record of records) {
          const payloads = sessionOf(record.sessionId, false).payloads;
          if (!payloads.has(record.objectId)) payloads.set(record.objectId, { ...record });
        }
      }),

    getPayload: (sessionId, objectId) =>
      run('getPayload', () => {
        const record = sessions.get(sessionId)?.payloads.get(objectId);
        return record === undefined ? undefined : { ...record };
      }),

    listPayloads: (sessionId) =>
      run('listPayloads', () =>
        [...(sessions.get(sessionId)?.payloads.values() ?? [])].map((record) => ({ ...record })),
      ),

    searchPayloads: (sessionId, query, options) =>
      run('searchPayloads', () =>
        searchInProcess([...(sessions.get(sessionId)?.payloads.values() ?? [])], query, options),
      ),

    readSession: (sessionId) =>
      run('readSession', () => {
        const session = sessions.get(sessionId);
        if (session === undefined || session.version === 0) return undefined;
        return { version: session.version, state: states.decode(sessionId, session.state) };
      }),

    writeCommit: (sessionId, commit, state, expectedVersion) =>
      run('writeCommit', (): WriteCommitResult => {
        checkCommitWritable(sessionId, commit);
        const session = sessionOf(sessionId);
        if (session.commits.has(commit.commitId)) return { status: 'duplicate', version: session.version };
        if (session.version !== expectedVersion) return { status: 'conflict', version: session.version };
        const encodedState = encodeJson(state);
        session.commits.set(commit.commitId, encodeJson(commit));
        session.state = encodedState;
        session.version += 1;
        return { status: 'written', version: session.version };
      }),

    writeState: (sessionId, state, expectedVersion) =>
      run('writeState', (): WriteStateResult => {
        const session = sessionOf(sessionId);
        if (session.version !== expectedVersion) return { status: 'conflict', version: session.version };
        session.state = encodeJson(state);
        session.version += 1;
        return { status: 'written', version: session.version };
      }),

    listCommits: (sessionId) =>
      run('listCommits', (): CommitRecord[] => {
        const stored = [...(sessions.get(sessionId)?.commits.values() ?? [])];
        return sortCommits(stored.map((text) => decodeCommit(text, sessionId)));
      }),

    deleteSession: (sessionId) =>
      run('deleteSession', () => {
        states.forget(sessionId);
        sessions.delete(sessionId);
      }),

    async close() {
      closed = true;
      sessions.clear();
    },

    listSessions: (options) =>
      run('listSessions', () => {
        const { prefix, limit } = readListOptions(options);
        return summaries()
          .filter((summary) => summary.sessionId.startsWith(prefix))
          .slice(0, limit);
      }),

    expireBefore: (cutoff, options) =>
      run('expireBefore', () => {
        const limit = readExpireOptions(cutoff, options);
        // Empty entries left by refused writes go too; they count against no limit.
        const expired = [...sessions]
          .filter(([, session]) => session.updatedAt < cutoff)
          .sort(
            ([leftId, left], [rightId, right]) =>
              left.updatedAt - right.updatedAt || (leftId < rightId ? -1 : 1),
          );
        const removed: string[] = [];
        for (const [sessionId, session] of expired) {
          const holdsData = session.version > 0 || session.payloads.size > 0;
          if (holdsData && removed.length === limit) break;
          states.forget(sessionId);
          sessions.delete(sessionId);
          if (holdsData) removed.push(sessionId);
        }
        return removed;
      }),
  };
}
