/**
 * Retention for the Postgres store: when each session was last written, kept by triggers (so
 * the write paths stay as they are, and every instance sharing the tables keeps it), and the
 * queries that list sessions and expire the old ones. Payloads mark a session's first write
 * only; the state write that follows them (and comes with every commit) marks the time.
 */
import type pg from 'pg';
import type { ListSessionsOptions, SessionSummary } from '../core/store.js';
import type { PostgresTables } from './postgres-tables.js';
import { inTransaction } from './postgres-transaction.js';
import { readExpireOptions, readListOptions } from './retention-options.js';

/** Milliseconds since the epoch by the database server's clock, shared by every instance. */
const NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

/**
 * Create the activity table, its trigger function and triggers, inside the schema transaction
 * (under its advisory lock). Tables written before they existed get every session they hold
 * marked as written now: their age is unknown, so each gets a full retention period from the
 * upgrade rather than none.
 */
export async function preparePostgresRetention(
  client: pg.PoolClient,
  tables: PostgresTables,
  triggerPrefix: string,
): Promise<void> {
  const { rows } = await client.query<{ found: string | null }>('SELECT to_regclass($1) AS found', [
    tables.activity,
  ]);
  if (rows[0]?.found !== null && rows[0]?.found !== undefined) return;
  await client.query(`
    CREATE TABLE ${tables.activity} (session_id text PRIMARY KEY, updated_at bigint NOT NULL);
    CREATE INDEX "${triggerPrefix}activity_updated" ON ${tables.activity} (updated_at);
    CREATE OR REPLACE FUNCTION ${tables.touchFunction}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_ARGV[0] = 'first' THEN
        INSERT INTO ${tables.activity} (session_id, updated_at) VALUES (NEW.session_id, ${NOW_MS})
          ON CONFLICT (session_id) DO NOTHING;
      ELSE
        INSERT INTO ${tables.activity} (session_id, updated_at) VALUES (NEW.session_id, ${NOW_MS})
          ON CONFLICT (session_id) DO UPDATE SET updated_at = EXCLUDED.updated_at;
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER "${triggerPrefix}payloads_touched" AFTER INSERT ON ${tables.payloads}
      FOR EACH ROW EXECUTE FUNCTION ${tables.touchFunction}('first');
    CREATE TRIGGER "${triggerPrefix}sessions_touched" AFTER INSERT OR UPDATE ON ${tables.sessions}
      FOR EACH ROW EXECUTE FUNCTION ${tables.touchFunction}();
    INSERT INTO ${tables.activity} (session_id, updated_at)
      SELECT session_id, ${NOW_MS} FROM (
        SELECT session_id FROM ${tables.sessions} WHERE version > 0
        UNION SELECT session_id FROM ${tables.payloads}
        UNION SELECT session_id FROM ${tables.commits}) AS existing;`);
}

export interface PostgresRetention {
  listSessions(options: ListSessionsOptions | undefined): Promise<SessionSummary[]>;
  expireBefore(cutoff: number, options: { limit?: number } | undefined): Promise<string[]>;
}

export function createPostgresRetention(pool: pg.Pool, tables: PostgresTables): PostgresRetention {
  return {
    async listSessions(options) {
      const { prefix, limit } = readListOptions(options);
      // Ids compare byte-wise ("C"), as every other store orders them.
      const { rows } = await pool.query<{
        session_id: string;
        updated_at: string;
        version: number;
        payloads: string;
        commits: string;
      }>(
        `SELECT * FROM (
           SELECT a.session_id, a.updated_at,
             COALESCE((SELECT version FROM ${tables.sessions} s WHERE s.session_id = a.session_id), 0) AS version,
             (SELECT count(*) FROM ${tables.payloads} p WHERE p.session_id = a.session_id) AS payloads,
             (SELECT count(*) FROM ${tables.commits} c WHERE c.session_id = a.session_id) AS commits
           FROM ${tables.activity} a WHERE left(a.session_id, length($1)) = $1) AS listed
         WHERE version > 0 OR payloads > 0
         ORDER BY updated_at DESC, session_id COLLATE "C" LIMIT $2`,
        [prefix, limit],
      );
      return rows.map((row) => ({
        sessionId: row.session_id,
        updatedAt: Number(row.updated_at),
        version: row.version,
        payloads: Number(row.payloads),
        commits: Number(row.commits),
      }));
    },

    expireBefore(cutoff, options) {
      const limit = readExpireOptions(cutoff, options);
      return inTransaction(pool, async (client) => {
        // SKIP LOCKED: instances sweeping at once take different sessions instead of waiting.
        const { rows } = await client.query<{ session_id: string }>(
          `SELECT session_id FROM ${tables.activity} WHERE updated_at < $1
           ORDER BY updated_at, session_id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED`,
          [Math.floor(cutoff), limit],
        );
        const sessionIds = rows.map((row) => row.session_id);
        if (sessionIds.length === 0) return [];
        for (const table of [tables.payloads, tables.commits, tables.sessions, tables.activity]) {
          await client.query(`DELETE FROM ${table} WHERE session_id = ANY($1)`, [sessionIds]);
        }
        return sessionIds;
      });
    },
  };
}
