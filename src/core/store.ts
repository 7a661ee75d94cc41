/**
 * The durable side of the harness: the sidecar (exact payloads of folded, masked and pruned
 * objects), the commit log, and each session's governance state.
 *
 * Every implementation (memory, SQLite, Redis, Postgres) runs the same contract suite
 * (`src/stores/store-contract.case.ts`). All records carry `schemaVersion`; a reader that finds
 * a version it does not know throws a `StoreError` instead of guessing.
 */

/** Version of the records below. */
export const STORE_SCHEMA_VERSION = 1;

/** The operations that remove bytes from the view. */
export type RemovingOperation = 'fold' | 'mask' | 'prune';

/** The exact payload of one object, kept so it can be recovered byte for byte. */
export interface SidecarRecord {
  /** Always `STORE_SCHEMA_VERSION` when written by this version. */
  schemaVersion: number;
  /** Session the object belongs to. Sessions never see each other's records. */
  sessionId: string;
  /** Object id, e.g. `function:read_file:12`. Unique per session. */
  objectId: string;
  /** The operation that first moved this payload out of the view. */
  operation: RemovingOperation;
  /**
   * The exact payload: JSON text of the object's canonical parts (see `ObjectPayload` in
   * `ledger.ts`). Stored as text so that what comes back is byte-identical to what went in.
   */
  payload: string;
  /** Plain text of the payload, for full-text search. */
  searchText: string;
  /** Tokens the payload occupies in the full view. */
  tokens: number;
  /** Id of the commit that wrote it. */
  commitId: string;
  /** Milliseconds since the epoch (from the injected clock). */
  createdAt: number;
}

/** One full-text match in a session's sidecar. */
export interface SearchHit {
  objectId: string;
  /** A short excerpt around the match. */
  snippet: string;
  /** Higher is better; only comparable within one search. */
  score: number;
}

/** One operation as recorded in a commit. */
export interface CommittedOperation {
  objectId: string;
  operation: RemovingOperation | 'expand';
  /** Why the planner proposed it. */
  reason: string;
  /** Tokens of the object before and after the operation, in the view. */
  tokensBefore: number;
  tokensAfter: number;
}

/** The auditable record a commit leaves. Undo is itself a commit (`undoes` names the target). */
export interface CommitRecord {
  schemaVersion: number;
  sessionId: string;
  /** Unique id; writing the same commit id twice is a no-op (commits are idempotent). */
  commitId: string;
  /** 1, 2, 3, … within the session: the order of commits. */
  sequence: number;
  createdAt: number;
  /** Who proposed the plan: `embedded`, `llm`, `agent`, `fallback`, `undo`. */
  planner: string;
  /** What set the governance run off: `pressure`, `milestone`, `periodic`, `request`, … */
  trigger: string;
  operations: CommittedOperation[];
  /** View tokens just before and just after the commit. */
  tokensBefore: number;
  tokensAfter: number;
  /** Commit id this one undoes, for undo commits. */
  undoes?: string;
  /**
   * Set when the plan was held pending by the commit rule: the transcript length of the
   * governance run that planned it (a later run, the next safe boundary, committed it).
   */
  pendingSince?: number;
}

/** A session's governance state as stored: opaque JSON to the store, versioned for CAS. */
export interface SessionSnapshot {
  /** Incremented by every successful `writeCommit`; 0 means the session has never been written. */
  version: number;
  /** The governor's state (it carries its own schema version inside). */
  state: unknown;
}

/** Outcome of `writeCommit`. */
export type WriteCommitResult =
  /** The commit and the new state are stored. */
  | { status: 'written'; version: number }
  /** This commit id was already stored; nothing changed. */
  | { status: 'duplicate'; version: number }
  /** Another writer moved the session on first; nothing changed. Re-read and retry. */
  | { status: 'conflict'; version: number };

/** Outcome of `writeState`: as `writeCommit`, without duplicates. */
export type WriteStateResult = Exclude<WriteCommitResult, { status: 'duplicate' }>;

/** One session as `listSessions` reports it. */
export interface SessionSummary {
  /** The store's session id (the proxy's are `${keyHash}:${sessionId}`). */
  sessionId: string;
  /**
   * Milliseconds since the epoch of the session's latest state write (every commit writes its
   * state), or of its first payload write when it has no state yet, by the store's own clock
   * (the database server's, for Postgres). Retention compares this with its cutoff.
   */
  updatedAt: number;
  /** The state's version; 0 when only payloads were written. */
  version: number;
  /** Payloads in the sidecar. */
  payloads: number;
  /** Commits in the log. */
  commits: number;
}

/** Options of `listSessions`. */
export interface ListSessionsOptions {
  /** Only sessions whose id starts with this, e.g. the proxy's `${keyHash}:` namespace. */
  prefix?: string;
  /** At most this many (default `DEFAULT_SESSION_LIST_LIMIT`). */
  limit?: number;
}

/** Sessions `listSessions` returns when not told how many. */
export const DEFAULT_SESSION_LIST_LIMIT = 1000;

/** Sessions one `expireBefore` call removes when not told how many: bounded work per sweep. */
export const DEFAULT_EXPIRE_LIMIT = 100;

/**
 * Where payloads, commits and session state live. Methods reject with `StoreError` when the
 * backend fails; expected outcomes (not found, conflict) are returned values.
 */
export interface SidecarStore {
  /** Short backend name: `memory`, `sqlite`, `redis`, `postgres`. */
  readonly kind: string;
  /**
   * Durably store payloads before the view changes. Idempotent: putting the same
   * (sessionId, objectId) again keeps the first payload (the bytes of an object never change).
   */
  putPayloads(records: readonly SidecarRecord[]): Promise<void>;
  /** The payload of one object, or undefined. */
  getPayload(sessionId: string, objectId: string): Promise<SidecarRecord | undefined>;
  /** All payloads of a session, ordered by object id's first write. */
  listPayloads(sessionId: string): Promise<SidecarRecord[]>;
  /** Full-text search over a session's payloads, best first. */
  searchPayloads(sessionId: string, query: string, options?: { limit?: number }): Promise<SearchHit[]>;
  /** The session's state, or undefined if it was never written. */
  readSession(sessionId: string): Promise<SessionSnapshot | undefined>;
  /**
   * Atomically append `commit` to the log and replace the session state, if the stored version
   * is still `expectedVersion` (0 for a new session). All or nothing.
   */
  writeCommit(
    sessionId: string,
    commit: CommitRecord,
    state: unknown,
    expectedVersion: number,
  ): Promise<WriteCommitResult>;
  /** Replace the session state without a commit (trigger bookkeeping), with the same CAS rule. */
  writeState(sessionId: string, state: unknown, expectedVersion: number): Promise<WriteStateResult>;
  /** The commit log of a session in sequence order. */
  listCommits(sessionId: string): Promise<CommitRecord[]>;
  /** Remove everything of a session: payloads, commits, state. */
  deleteSession(sessionId: string): Promise<void>;
  /**
   * The sessions that hold anything (payloads or state), most recently written first. Sessions
   * that were deleted or expired are not listed.
   */
  listSessions(options?: ListSessionsOptions): Promise<SessionSummary[]>;
  /**
   * Retention: remove everything (payloads, commits, state) of the sessions last written before
   * `cutoff` (milliseconds since the epoch, compared with `SessionSummary.updatedAt`), oldest
   * first, at most `limit` of them (default `DEFAULT_EXPIRE_LIMIT`) so one call's work is
   * bounded. Returns the ids it removed; fewer than `limit` means nothing older is left.
   */
  expireBefore(cutoff: number, options?: { limit?: number }): Promise<string[]>;
  /** Release connections and file handles. */
  close(): Promise<void>;
}

/**
 * The name of every operation of `SidecarStore` (all but `kind`): what a wrapper around a store
 * (`guardStore`) must forward. A type test fails when a method is added to the interface and
 * not here, so no wrapper can drop one silently.
 */
export const SIDECAR_STORE_OPERATIONS = [
  'putPayloads',
  'getPayload',
  'listPayloads',
  'searchPayloads',
  'readSession',
  'writeCommit',
  'writeState',
  'listCommits',
  'deleteSession',
  'listSessions',
  'expireBefore',
  'close',
] as const satisfies ReadonlyArray<keyof SidecarStore>;

export type SidecarStoreOperation = (typeof SIDECAR_STORE_OPERATIONS)[number];

/** Methods of `SidecarStore` missing from `SIDECAR_STORE_OPERATIONS`: `never` while the list is whole (a test checks). */
export type UnlistedStoreOperation = Exclude<keyof SidecarStore, SidecarStoreOperation | 'kind'>;
