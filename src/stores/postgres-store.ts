import pg from 'pg';
import { StoreError } from '../core/errors.js';
import type {
  CommitRecord,
  SearchHit,
  SidecarStore,
  WriteCommitResult,
  WriteStateResult,
} from '../core/store.js';
import { PAYLOAD_COLUMNS, type PayloadRow, payloadRowValues, recordFromRow } from './payload-row.js';
import { createPostgresRetention } from './postgres-retention.js';
import { createPostgresTables, type PostgresTables } from './postgres-tables.js';
import { inTransaction } from './postgres-transaction.js';
import { checkCommitWritable, checkPayloadsWritable, decodeCommit, encodeJson } from './record-codec.js';
import { parseSearchQuery } from './search-query.js';
import { createStateCache } from './state-cache.js';
import { DEFAULT_CONNECT_TIMEOUT_MS } from './store-policy.js';
import { withStoreErrors } from './with-store-errors.js';

/** Options of `createPostgresStore`: a connection string (the store owns the pool) or a pool (the caller does). */
export type PostgresStoreOptions = (
  | {
      /** e.g. `postgres://user@host:5432/db`; the pool is ended by `close()`. */
      connectionString: string;
    }
  | {
      /** A pg pool shared with the caller; `close()` leaves it open. */
      pool: pg.Pool;
    }
) & {
  /** Schema holding the tables, created if missing. Default: the first schema on the search path. */
  schema?: string;
  /** Prefix of every table and index name (default `selfgc_`), e.g. an isolated one per test run. */
  tablePrefix?: string;
  /**
   * How long a new connection may take before the attempt is abandoned, in milliseconds (default
   * `DEFAULT_CONNECT_TIMEOUT_MS`), for a pool the store creates.
   */
  connectTimeoutMs?: number;
};

/**
 * Lock the session's row and run `body` with its current version, keeping the writes only
 * when the result is `written`. A version-0 placeholder row is inserted first so that a
 * brand-new session can be locked too; it is rolled back with everything else on a conflict.
 */
function withLockedSession<T extends WriteCommitResult>(
  pool: pg.Pool,
  tables: PostgresTables,
  sessionId: string,
  body: (client: pg.PoolClient, version: number) => Promise<T>,
): Promise<T> {
  return inTransaction(
    pool,
    async (client) => {
      await client.query(
        `INSERT INTO ${tables.sessions} (session_id, version, state) VALUES ($1, 0, 'null')
         ON CONFLICT (session_id) DO NOTHING`,
        [sessionId],
      );
      const { rows } = await client.query<{ version: number }>(
        `SELECT version FROM ${tables.sessions} WHERE session_id = $1 FOR UPDATE`,
        [sessionId],
      );
      return body(client, rows[0]?.version ?? 0);
    },
    (result) => result.status === 'written',
  );
}

/**
 * A sidecar store in PostgreSQL (pg), for several proxy instances sharing sessions. Tables are
 * created on first open; search uses the `simple` text-search configuration (no stemming, no
 * stop words), which suits code, paths and identifiers.
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<SidecarStore> {
  const ownsPool = 'connectionString' in options;
  const pool =
    'connectionString' in options
      ? new pg.Pool({
          connectionString: options.connectionString,
          connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
          // A server that vanished without a word (a cut network) is noticed on idle connections too.
          keepAlive: true,
        })
      : options.pool;
  // An idle pooled connection that drops emits 'error'; without a listener that would crash
  // the process. The next query fails on its own and is reported as a StoreError (checked-out
  // connections are listened to by `inTransaction`, and by the pool's own `query`).
  if (ownsPool) pool.on('error', () => undefined);
  // The pool's `query` listens with `once`: a connection the server ends mid-query (a failover,
  // `pg_terminate_backend`) can emit 'error' a second time, after that listener is gone. Every
  // connection keeps a listener of ours for its whole life; the pool's own still decide.
  if (ownsPool) pool.on('connect', (client) => client.on('error', () => undefined));
  const tables = await withStoreErrors('postgres open', () =>
    createPostgresTables(pool, { schema: options.schema, tablePrefix: options.tablePrefix }),
  ).catch(async (error: unknown) => {
    if (ownsPool) await pool.end().catch(() => undefined);
    throw error;
  });
  let closed = false;
  const states = createStateCache();
  const retention = createPostgresRetention(pool, tables);

  function run<T>(operation: string, body: () => Promise<T>): Promise<T> {
    return withStoreErrors(`postgres ${operation}`, () => {
      if (closed) throw new StoreError(`postgres store: ${operation} after close`);
      return body();
    });
  }

  return {
    kind: 'postgres',

    putPayloads: (records) =>
      run('putPayloads', async () => {
        checkPayloadsWritable(records);
        if (records.length === 0) return;
        await inTransaction(pool, async (client) => {
          for (const record of records) {
            await client.query(
              `INSERT INTO ${tables.payloads} (${PAYLOAD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
               ON CONFLICT (session_id, object_id) DO NOTHING`,
              payloadRowValues(record),
            );
          }
        });
      }),

    getPayload: (sessionId, objectId) =>
      run('getPayload', async () => {
        const { rows } = await pool.query<PayloadRow>(
          `SELECT ${PAYLOAD_COLUMNS} FROM ${tables.payloads} WHERE session_id = $1 AND object_id = $2`,
          [sessionId, objectId],
        );
        return rows[0] === undefined ? undefined : recordFromRow(rows[0]);
      }),

    listPayloads: (sessionId) =>
      run('listPayloads', async () => {
        const { rows } = await pool.query<PayloadRow>(
          `SELECT ${PAYLOAD_COLUMNS} FROM ${tables.payloads} WHERE session_id = $1 ORDER BY seq`,
          [sessionId],
        );
        return rows.map(recordFromRow);
      }),

    searchPayloads: (sessionId, query, searchOptions) =>
      run('searchPayloads', async (): Promise<SearchHit[]> => {
        const { terms, limit } = parseSearchQuery(query, searchOptions);
        if (terms.length === 0 || limit === 0) return [];
        // Terms hold only letters and digits, so OR-ing them is always a valid tsquery. The
        // headline is computed for the hits that survive LIMIT only: it re-parses the text.
        const { rows } = await pool.query<{ object_id: string; rank: number; snippet: string }>(
          `SELECT hit.object_id, hit.rank,
             ts_headline('simple', left(p.search_text, ${tables.indexedChars}), hit.query,
               'StartSel="", StopSel="", MinWords=8, MaxWords=24, ShortWord=0') AS snippet
           FROM (SELECT seq, object_id, query, ts_rank(search_vector, query) AS rank
                 FROM ${tables.payloads}, to_tsquery('simple', $2) AS query
                 WHERE session_id = $1 AND search_vector @@ query
                 ORDER BY rank DESC, seq LIMIT $3) AS hit
           JOIN ${tables.payloads} p ON p.seq = hit.seq
           ORDER BY hit.rank DESC, hit.seq`,
          [sessionId, terms.join(' | '), limit],
        );
        return rows.map((row) => ({ objectId: row.object_id, snippet: row.snippet, score: row.rank }));
      }),

    readSession: (sessionId) =>
      run('readSession', async () => {
        const { rows } = await pool.query<{ version: number; state: string }>(
          `SELECT version, state FROM ${tables.sessions} WHERE session_id = $1 AND version > 0`,
          [sessionId],
        );
        const row = rows[0];
        return row === undefined
          ? undefined
          : { version: row.version, state: states.decode(sessionId, row.state) };
      }),

    writeCommit: (sessionId, commit, state, expectedVersion) =>
      run('writeCommit', async () => {
        checkCommitWritable(sessionId, commit);
        return withLockedSession(
          pool,
          tables,
          sessionId,
          async (client, version): Promise<WriteCommitResult> => {
            const existing = await client.query(
              `SELECT 1 FROM ${tables.commits} WHERE session_id = $1 AND commit_id = $2`,
              [sessionId, commit.commitId],
            );
            if (existing.rowCount) return { status: 'duplicate', version };
            if (version !== expectedVersion) return { status: 'conflict', version };
            await client.query(
              `INSERT INTO ${tables.commits} (session_id, commit_id, sequence, body) VALUES ($1, $2, $3, $4)`,
              [sessionId, commit.commitId, commit.sequence, encodeJson(commit)],
            );
            await client.query(
              `UPDATE ${tables.sessions} SET version = $2, state = $3 WHERE session_id = $1`,
              [sessionId, version + 1, encodeJson(state)],
            );
            return { status: 'written', version: version + 1 };
          },
        );
      }),

    writeState: (sessionId, state, expectedVersion) =>
      run('writeState', () =>
        withLockedSession(pool, tables, sessionId, async (client, version): Promise<WriteStateResult> => {
          if (version !== expectedVersion) return { status: 'conflict', version };
          await client.query(`UPDATE ${tables.sessions} SET version = $2, state = $3 WHERE session_id = $1`, [
            sessionId,
            version + 1,
            encodeJson(state),
          ]);
          return { status: 'written', version: version + 1 };
        }),
      ),

    listCommits: (sessionId) =>
      run('listCommits', async (): Promise<CommitRecord[]> => {
        const { rows } = await pool.query<{ body: string }>(
          `SELECT body FROM ${tables.commits} WHERE session_id = $1 ORDER BY sequence, position`,
          [sessionId],
        );
        return rows.map((row) => decodeCommit(row.body, sessionId));
      }),

    deleteSession: (sessionId) =>
      run('deleteSession', () =>
        inTransaction(pool, async (client) => {
          states.forget(sessionId);
          for (const table of [tables.payloads, tables.commits, tables.sessions, tables.activity]) {
            await client.query(`DELETE FROM ${table} WHERE session_id = $1`, [sessionId]);
          }
        }),
      ),

    close: () =>
      withStoreErrors('postgres close', async () => {
        if (closed) return;
        closed = true;
        if (ownsPool) await pool.end();
      }),

    listSessions: (options) => run('listSessions', () => retention.listSessions(options)),

    expireBefore: (cutoff, options) =>
      run('expireBefore', async () => {
        const removed = await retention.expireBefore(cutoff, options);
        for (const sessionId of removed) states.forget(sessionId);
        return removed;
      }),
  };
}
