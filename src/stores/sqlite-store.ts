import Database from 'better-sqlite3';
import { StoreError } from '../core/errors.js';
import {
  type CommitRecord,
  type SearchHit,
  type SidecarRecord,
  type SidecarStore,
  STORE_SCHEMA_VERSION,
  type WriteCommitResult,
  type WriteStateResult,
} from '../core/store.js';
import { PAYLOAD_COLUMNS, type PayloadRow, payloadRowValues, recordFromRow } from './payload-row.js';
import { checkCommitWritable, checkPayloadsWritable, decodeCommit, encodeJson } from './record-codec.js';
import { parseSearchQuery } from './search-query.js';
import { BACKGROUND_WAL_LIMIT_PAGES, type Checkpointer, startCheckpointer } from './sqlite-checkpointer.js';
import { createSqliteRetention, prepareSqliteRetention, SQLITE_SESSION_TABLES } from './sqlite-retention.js';
import { createStateCache } from './state-cache.js';
import { withStoreErrors } from './with-store-errors.js';

/** Options of `createSqliteStore`. */
export interface SqliteStoreOptions {
  /**
   * Database file, created if missing; several stores (or processes) may open the same file.
   * `:memory:` gives a private database that is gone on `close()`.
   */
  path: string;
  /**
   * `background`: WAL checkpoints run on a thread of their own (`sqlite-checkpointer.ts`), so no
   * write waits for one; for a server's request path. Default `inline`: SQLite's own, inside the
   * write that passes 1,000 WAL pages.
   */
  checkpoints?: 'inline' | 'background';
}

// `seq` is AUTOINCREMENT so a deleted payload's rowid is never reused by the FTS index.
// The FTS table is external-content: it indexes `search_text` without keeping a second copy.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS selfgc_payloads (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL, object_id TEXT NOT NULL, schema_version INTEGER NOT NULL,
  operation TEXT NOT NULL, payload TEXT NOT NULL, search_text TEXT NOT NULL,
  tokens INTEGER NOT NULL, commit_id TEXT NOT NULL, created_at INTEGER NOT NULL,
  UNIQUE (session_id, object_id));
CREATE VIRTUAL TABLE IF NOT EXISTS selfgc_payload_search
  USING fts5(search_text, content='selfgc_payloads', content_rowid='seq');
CREATE TRIGGER IF NOT EXISTS selfgc_payloads_indexed AFTER INSERT ON selfgc_payloads BEGIN
  INSERT INTO selfgc_payload_search(rowid, search_text) VALUES (new.seq, new.search_text);
END;
CREATE TRIGGER IF NOT EXISTS selfgc_payloads_unindexed AFTER DELETE ON selfgc_payloads BEGIN
  INSERT INTO selfgc_payload_search(selfgc_payload_search, rowid, search_text)
    VALUES ('delete', old.seq, old.search_text);
END;
CREATE TABLE IF NOT EXISTS selfgc_commits (
  position INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL, commit_id TEXT NOT NULL, sequence INTEGER NOT NULL, body TEXT NOT NULL,
  UNIQUE (session_id, commit_id));
CREATE TABLE IF NOT EXISTS selfgc_sessions (
  session_id TEXT PRIMARY KEY, version INTEGER NOT NULL, state TEXT NOT NULL);
`;

/** Create the tables on first open; refuse a file written by another schema version. */
function prepareSchema(db: Database.Database, path: string): void {
  db.transaction(() => {
    db.exec('CREATE TABLE IF NOT EXISTS selfgc_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL)');
    const row = db
      .prepare<[], { version: number }>("SELECT version FROM selfgc_schema WHERE name = 'store'")
      .get();
    if (row !== undefined && row.version !== STORE_SCHEMA_VERSION) {
      throw new StoreError(
        `sqlite store ${path}: written with schema version ${row.version}, this reader knows ${STORE_SCHEMA_VERSION}`,
      );
    }
    db.exec(SCHEMA);
    prepareSqliteRetention(db);
    if (row === undefined) {
      db.prepare("INSERT INTO selfgc_schema (name, version) VALUES ('store', ?)").run(STORE_SCHEMA_VERSION);
    }
  }).immediate();
}

function openDatabase(path: string, walLimitPages: number | undefined): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new StoreError(`sqlite store ${path}: cannot open (${reason})`, { cause: error });
  }
  try {
    db.pragma('journal_mode = WAL');
    // NORMAL in WAL mode: a process crash (kill -9) loses nothing; a power cut may roll back the
    // latest transactions, but in order — a state is never kept without the payloads written
    // before it, so the view can only fall back to an earlier, consistent commit. FULL would add
    // an fsync to every write on the proxy's request path.
    db.pragma('synchronous = NORMAL');
    if (walLimitPages !== undefined) db.pragma(`wal_autocheckpoint = ${walLimitPages}`);
    prepareSchema(db, path);
    return db;
  } catch (error) {
    db.close();
    if (error instanceof StoreError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new StoreError(`sqlite store ${path}: cannot prepare (${reason})`, { cause: error });
  }
}

/** A sidecar store in one SQLite file (better-sqlite3): the default, embedded store. */
export function createSqliteStore(options: SqliteStoreOptions): SidecarStore {
  const background = options.checkpoints === 'background' && options.path !== ':memory:';
  const db = openDatabase(options.path, background ? BACKGROUND_WAL_LIMIT_PAGES : undefined);
  const checkpointer: Checkpointer | undefined = background ? startCheckpointer(options.path) : undefined;
  const insertPayload = db.prepare(
    `INSERT INTO selfgc_payloads (${PAYLOAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (session_id, object_id) DO NOTHING`,
  );
  const selectPayload = db.prepare<[string, string], PayloadRow>(
    `SELECT ${PAYLOAD_COLUMNS} FROM selfgc_payloads WHERE session_id = ? AND object_id = ?`,
  );
  const selectPayloads = db.prepare<[string], PayloadRow>(
    `SELECT ${PAYLOAD_COLUMNS} FROM selfgc_payloads WHERE session_id = ? ORDER BY seq`,
  );
  const searchStatement = db.prepare<
    [string, string, number],
    { objectId: string; snippet: string; rank: number }
  >(
    `SELECT p.object_id AS objectId, bm25(selfgc_payload_search) AS rank,
       snippet(selfgc_payload_search, 0, '', '', '…', 24) AS snippet
     FROM selfgc_payload_search JOIN selfgc_payloads p ON p.seq = selfgc_payload_search.rowid
     WHERE selfgc_payload_search MATCH ? AND p.session_id = ?
     ORDER BY rank, p.seq LIMIT ?`,
  );
  const selectSession = db.prepare<[string], { version: number; state: string }>(
    'SELECT version, state FROM selfgc_sessions WHERE session_id = ?',
  );
  const upsertSession = db.prepare(
    `INSERT INTO selfgc_sessions (session_id, version, state) VALUES (?, ?, ?)
     ON CONFLICT (session_id) DO UPDATE SET version = excluded.version, state = excluded.state`,
  );
  const selectCommitId = db.prepare<[string, string], { found: number }>(
    'SELECT 1 AS found FROM selfgc_commits WHERE session_id = ? AND commit_id = ?',
  );
  const insertCommit = db.prepare(
    'INSERT INTO selfgc_commits (session_id, commit_id, sequence, body) VALUES (?, ?, ?, ?)',
  );
  const selectCommits = db.prepare<[string], { body: string }>(
    'SELECT body FROM selfgc_commits WHERE session_id = ? ORDER BY sequence, position',
  );

  const versionOf = (sessionId: string): number => selectSession.get(sessionId)?.version ?? 0;

  // A state this connection read or wrote last is still what the file holds until another
  // connection (another store, another process) commits, which is exactly when `data_version`
  // changes: until then a read needs no query, and after, it reads the row again.
  const states = createStateCache();
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  let seenDataVersion = dataVersion.get();
  const othersWrote = () => {
    const now = dataVersion.get();
    if (now === seenDataVersion) return;
    seenDataVersion = now;
    states.invalidate();
  };

  const putAll = db.transaction((records: readonly SidecarRecord[]) => {
    for (const record of records) {
      insertPayload.run(...payloadRowValues(record));
    }
  });

  // Run with .immediate(): the write lock is taken before the version is read, so the
  // compare-and-swap holds across connections and processes sharing the file.
  const commitOnce = db.transaction(
    (sessionId: string, commit: CommitRecord, state: string, expected: number): WriteCommitResult => {
      const version = versionOf(sessionId);
      if (selectCommitId.get(sessionId, commit.commitId)) return { status: 'duplicate', version };
      if (version !== expected) return { status: 'conflict', version };
      insertCommit.run(sessionId, commit.commitId, commit.sequence, encodeJson(commit));
      upsertSession.run(sessionId, version + 1, state);
      return { status: 'written', version: version + 1 };
    },
  );

  const replaceState = db.transaction(
    (sessionId: string, state: string, expected: number): WriteStateResult => {
      const version = versionOf(sessionId);
      if (version !== expected) return { status: 'conflict', version };
      upsertSession.run(sessionId, version + 1, state);
      return { status: 'written', version: version + 1 };
    },
  );

  const deletes = SQLITE_SESSION_TABLES.map((table) =>
    db.prepare(`DELETE FROM ${table} WHERE session_id = ?`),
  );
  const retention = createSqliteRetention(db);

  const removeSession = db.transaction((sessionId: string) => {
    for (const statement of deletes) statement.run(sessionId);
  });

  return {
    kind: 'sqlite',

    putPayloads: (records) =>
      withStoreErrors('sqlite putPayloads', () => {
        checkPayloadsWritable(records);
        putAll.immediate(records);
      }),

    getPayload: (sessionId, objectId) =>
      withStoreErrors('sqlite getPayload', () => {
        const row = selectPayload.get(sessionId, objectId);
        return row === undefined ? undefined : recordFromRow(row);
      }),

    listPayloads: (sessionId) =>
      withStoreErrors('sqlite listPayloads', () => selectPayloads.all(sessionId).map(recordFromRow)),

    searchPayloads: (sessionId, query, searchOptions) =>
      withStoreErrors('sqlite searchPayloads', (): SearchHit[] => {
        const { terms, limit } = parseSearchQuery(query, searchOptions);
        if (terms.length === 0 || limit === 0) return [];
        // Terms hold only letters and digits; quoted, each is a plain FTS5 string.
        const match = terms.map((term) => `"${term}"`).join(' OR ');
        return searchStatement
          .all(match, sessionId, limit)
          .map((row) => ({ objectId: row.objectId, snippet: row.snippet, score: -row.rank }));
      }),

    readSession: (sessionId) =>
      withStoreErrors('sqlite readSession', () => {
        othersWrote();
        const known = states.current(sessionId);
        if (known !== undefined) return known;
        const row = selectSession.get(sessionId);
        if (row === undefined || row.version === 0) return undefined;
        const state = states.decode(sessionId, row.state);
        states.remember(sessionId, row.version, row.state);
        return { version: row.version, state };
      }),

    writeCommit: (sessionId, commit, state, expectedVersion) =>
      withStoreErrors('sqlite writeCommit', () => {
        checkCommitWritable(sessionId, commit);
        const text = encodeJson(state);
        const result = commitOnce.immediate(sessionId, commit, text, expectedVersion);
        if (result.status === 'written') states.remember(sessionId, result.version, text);
        return result;
      }),

    writeState: (sessionId, state, expectedVersion) =>
      withStoreErrors('sqlite writeState', () => {
        const text = encodeJson(state);
        const result = replaceState.immediate(sessionId, text, expectedVersion);
        if (result.status === 'written') states.remember(sessionId, result.version, text);
        return result;
      }),

    listCommits: (sessionId) =>
      withStoreErrors('sqlite listCommits', () =>
        selectCommits.all(sessionId).map((row) => decodeCommit(row.body, sessionId)),
      ),

    deleteSession: (sessionId) =>
      withStoreErrors('sqlite deleteSession', () => {
        states.forget(sessionId);
        removeSession.immediate(sessionId);
      }),

    close: () =>
      withStoreErrors('sqlite close', async () => {
        await checkpointer?.close();
        if (db.open) db.close();
      }),

    listSessions: (listOptions) =>
      withStoreErrors('sqlite listSessions', () => retention.listSessions(listOptions)),

    expireBefore: (cutoff, expireOptions) =>
      withStoreErrors('sqlite expireBefore', () =>
        retention.expireBefore(cutoff, expireOptions, (sessionId) => states.forget(sessionId)),
      ),
  };
}
