import type pg from 'pg';
import { BadInputError, StoreError } from '../core/errors.js';
import { STORE_SCHEMA_VERSION } from '../core/store.js';
import { preparePostgresRetention } from './postgres-retention.js';
import { inTransaction } from './postgres-transaction.js';

/** Quoted, schema-qualified names of a Postgres store's tables, ready to splice into SQL. */
export interface PostgresTables {
  meta: string;
  payloads: string;
  commits: string;
  sessions: string;
  /** When each session was last written (kept by triggers; see `postgres-retention.ts`). */
  activity: string;
  /** The trigger function that keeps `activity`. */
  touchFunction: string;
  /**
   * How much of a payload's search text is indexed and searched. A tsvector cannot exceed
   * 1 MB, so indexing a huge payload whole could make its insert fail; the first 100k
   * characters always fit, and the payload itself is stored whole regardless.
   */
  indexedChars: number;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,39}$/;

function checkIdentifier(value: string, what: string): string {
  if (!IDENTIFIER.test(value)) {
    throw new BadInputError(`postgres store: ${what} "${value}" must match ${IDENTIFIER.source}`);
  }
  return value;
}

/**
 * Create the store's tables if missing, under an advisory lock so that several instances
 * starting together do not race; refuse tables written by another schema version.
 */
export async function createPostgresTables(
  pool: pg.Pool,
  options: { schema?: string | undefined; tablePrefix?: string | undefined },
): Promise<PostgresTables> {
  const prefix = checkIdentifier(options.tablePrefix ?? 'selfgc_', 'table prefix');
  const schema = options.schema === undefined ? undefined : checkIdentifier(options.schema, 'schema');
  const name = (table: string) =>
    schema === undefined ? `"${prefix}${table}"` : `"${schema}"."${prefix}${table}"`;
  const tables: PostgresTables = {
    meta: name('meta'),
    payloads: name('payloads'),
    commits: name('commits'),
    sessions: name('sessions'),
    activity: name('activity'),
    touchFunction: name('touch'),
    indexedChars: 100_000,
  };
  await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`selfgc:${schema ?? ''}.${prefix}`]);
    if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${tables.meta} (name text PRIMARY KEY, version integer NOT NULL)`,
    );
    const { rows } = await client.query<{ version: number }>(
      `SELECT version FROM ${tables.meta} WHERE name = 'store'`,
    );
    const stored = rows[0]?.version;
    if (stored !== undefined && stored !== STORE_SCHEMA_VERSION) {
      throw new StoreError(
        `postgres store ${tables.meta}: written with schema version ${stored}, this reader knows ${STORE_SCHEMA_VERSION}`,
      );
    }
    await client.query(`
      CREATE TABLE IF NOT EXISTS ${tables.payloads} (
        seq bigserial PRIMARY KEY,
        session_id text NOT NULL, object_id text NOT NULL, schema_version integer NOT NULL,
        operation text NOT NULL, payload text NOT NULL, search_text text NOT NULL,
        tokens integer NOT NULL, commit_id text NOT NULL, created_at bigint NOT NULL,
        search_vector tsvector GENERATED ALWAYS AS
          (to_tsvector('simple', left(search_text, ${tables.indexedChars}))) STORED,
        UNIQUE (session_id, object_id));
      CREATE INDEX IF NOT EXISTS "${prefix}payloads_search" ON ${tables.payloads} USING gin (search_vector);
      CREATE TABLE IF NOT EXISTS ${tables.commits} (
        position bigserial PRIMARY KEY,
        session_id text NOT NULL, commit_id text NOT NULL, sequence integer NOT NULL, body text NOT NULL,
        UNIQUE (session_id, commit_id));
      CREATE TABLE IF NOT EXISTS ${tables.sessions} (
        session_id text PRIMARY KEY, version integer NOT NULL, state text NOT NULL);`);
    await preparePostgresRetention(client, tables, prefix);
    if (stored === undefined) {
      await client.query(`INSERT INTO ${tables.meta} (name, version) VALUES ('store', $1)`, [
        STORE_SCHEMA_VERSION,
      ]);
    }
  });
  return tables;
}
