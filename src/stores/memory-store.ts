import { StoreError } from '../core/errors.js';
import type {
  CommitRecord,
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

  function sessionOf(sessionId: string): SessionData {
    let session = sessions.get(sessionId);
    if (session === undefined) {
      session = { payloads: new Map(), commits: new Map(), version: 0, state: 'null' };
      sessions.set(sessionId, session);
    }
    return session;
  }

  return {
    kind: 'memory',

    putPayloads: (records) =>
      run('putPayloads', () => {
        checkPayloadsWritable(records);
        for (const record of records) {
          const payloads = sessionOf(record.sessionId).payloads;
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
  };
}
