/**
 * Retention for the SQLite store: when each session was last written, kept by triggers (so the
 * write paths stay as they are, and any process writing the file keeps it), and the queries
 * that list sessions and expire the old ones. Payloads mark a session's first write only: the
 * commit that follows them writes the state, and that write marks the time (a commit is always
 * written with its state, so commits need no trigger of their own).
 */
import type Database from 'better-sqlite3';
import type { ListSessionsOptions, SessionSummary } from '../core/store.js';
import { readExpireOptions, readListOptions } from './retention-options.js';

/** Milliseconds since the epoch, by SQLite's clock (the system's, as `Date.now()`). */
const NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

// No conflict clauses: a trigger's gives way to that of the statement firing it (the sessions
// upsert), which would turn a replace into an abort.
const FIRST_WRITE = `INSERT INTO selfgc_activity (session_id, updated_at) SELECT new.session_id, ${NOW_MS}
    WHERE NOT EXISTS (SELECT 1 FROM selfgc_activity WHERE session_id = new.session_id)`;
const TOUCH = `UPDATE selfgc_activity SET updated_at = ${NOW_MS} WHERE session_id = new.session_id; ${FIRST_WRITE}`;

const RETENTION_SCHEMA = `
CREATE TABLE IF NOT EXISTS selfgc_activity (session_id TEXT PRIMARY KEY, updated_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS selfgc_activity_updated ON selfgc_activity (updated_at);
CREATE TRIGGER IF NOT EXISTS selfgc_payloads_touched AFTER INSERT ON selfgc_payloads BEGIN ${FIRST_WRITE}; END;
CREATE TRIGGER IF NOT EXISTS selfgc_sessions_created AFTER INSERT ON selfgc_sessions BEGIN ${TOUCH}; END;
CREATE TRIGGER IF NOT EXISTS selfgc_sessions_touched AFTER UPDATE ON selfgc_sessions BEGIN ${TOUCH}; END;
`;

/**
 * Create the activity table and its triggers (inside the schema transaction). A file written
 * before they existed gets every session it holds marked as written now: their age is unknown,
 * so each gets a full retention period from the upgrade rather than none.
 */
export function prepareSqliteRetention(db: Database.Database): void {
  const existed = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'selfgc_activity'")
    .get();
  db.exec(RETENTION_SCHEMA);
  if (existed !== undefined) return;
  db.exec(`INSERT OR IGNORE INTO selfgc_activity (session_id, updated_at)
    SELECT session_id, ${NOW_MS} FROM (
      SELECT session_id FROM selfgc_sessions UNION SELECT session_id FROM selfgc_payloads
      UNION SELECT session_id FROM selfgc_commits)`);
}

/** The tables a session's rows live in, the activity row last. */
export const SQLITE_SESSION_TABLES = [
  'selfgc_payloads',
  'selfgc_commits',
  'selfgc_sessions',
  'selfgc_activity',
];

export interface SqliteRetention {
  listSessions(options: ListSessionsOptions | undefined): SessionSummary[];
  /** Expire as `SidecarStore.expireBefore`; `forget` is told each removed session. */
  expireBefore(
    cutoff: number,
    options: { limit?: number } | undefined,
    forget: (sessionId: string) => void,
  ): string[];
}

export function createSqliteRetention(db: Database.Database): SqliteRetention {
  // Sessions whose rows another (older) process deleted without their activity row are skipped.
  const list = db.prepare<[string, string, number], SessionSummary>(
    `SELECT * FROM (
       SELECT a.session_id AS sessionId, a.updated_at AS updatedAt,
         COALESCE((SELECT version FROM selfgc_sessions s WHERE s.session_id = a.session_id), 0) AS version,
         (SELECT count(*) FROM selfgc_payloads p WHERE p.session_id = a.session_id) AS payloads,
         (SELECT count(*) FROM selfgc_commits c WHERE c.session_id = a.session_id) AS commits
       FROM selfgc_activity a WHERE substr(a.session_id, 1, length(?)) = ?)
     WHERE version > 0 OR payloads > 0
     ORDER BY updatedAt DESC, sessionId LIMIT ?`,
  );
  const oldest = db
    .prepare<[number, number], string>(
      'SELECT session_id FROM selfgc_activity WHERE updated_at < ? ORDER BY updated_at, session_id LIMIT ?',
    )
    .pluck();
  const deletes = SQLITE_SESSION_TABLES.map((table) =>
    db.prepare(`DELETE FROM ${table} WHERE session_id = ?`),
  );
  const expire = db.transaction((cutoff: number, limit: number): string[] => {
    const sessionIds = oldest.all(cutoff, limit);
    for (const sessionId of sessionIds) for (const statement of deletes) statement.run(sessionId);
    return sessionIds;
  });

  return {
    listSessions(options) {
      const { prefix, limit } = readListOptions(options);
      return list.all(prefix, prefix, limit);
    },
    expireBefore(cutoff, options, forget) {
      const limit = readExpireOptions(cutoff, options);
      const removed = expire.immediate(cutoff, limit);
      for (const sessionId of removed) forget(sessionId);
      return removed;
    },
  };
}
