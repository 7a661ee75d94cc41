import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadInputError, StoreError } from '../core/errors.js';
import type { CommitRecord, SidecarRecord } from '../core/store.js';
import { PAYLOAD_COLUMNS, payloadRowValues } from './payload-row.js';
import { createPostgresStore } from './postgres-store.js';
import { describeStoreContract } from './store-contract.case.js';
import { commitRecord, newSessionId, payloadRecord } from './store-fixtures.case.js';
import { describeWithService, postgresTestUrl, probePostgres, runTag } from './test-services.case.js';

const tag = runTag();
const tablePrefix = `selfgc_test_${tag}_`;
const schema = `selfgc_test_${tag}`;
const unavailable = await probePostgres(postgresTestUrl);

describeWithService('postgres store', unavailable, () => {
  let raw: pg.Pool;
  beforeAll(() => {
    raw = new pg.Pool({ connectionString: postgresTestUrl });
  });
  afterAll(async () => {
    await raw.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    for (const prefix of [tablePrefix, `${tablePrefix}v_`]) await dropTables(prefix);
    await raw.end();
  });

  async function dropTables(prefix: string, inSchema = 'public'): Promise<void> {
    for (const table of ['payloads', 'commits', 'sessions', 'activity', 'meta']) {
      await raw.query(`DROP TABLE IF EXISTS "${inSchema}"."${prefix}${table}"`);
    }
    await raw.query(`DROP FUNCTION IF EXISTS "${inSchema}"."${prefix}touch"()`);
  }

  describeStoreContract(
    'postgres',
    () => createPostgresStore({ connectionString: postgresTestUrl, tablePrefix }),
    () => dropTables(tablePrefix),
    {
      async writeRawPayload(record: SidecarRecord) {
        await raw.query(
          `INSERT INTO "${tablePrefix}payloads" (${PAYLOAD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          payloadRowValues(record),
        );
      },
      async writeRawCommit(commit: CommitRecord) {
        await raw.query(
          `INSERT INTO "${tablePrefix}commits" (session_id, commit_id, sequence, body) VALUES ($1, $2, $3, $4)`,
          [commit.sessionId, commit.commitId, commit.sequence, JSON.stringify(commit)],
        );
      },
      openPeer: () => createPostgresStore({ connectionString: postgresTestUrl, tablePrefix }),
    },
  );

  describe('postgres specifics', () => {
    it('creates its tables in the schema it is given', async () => {
      const store = await createPostgresStore({ connectionString: postgresTestUrl, schema, tablePrefix });
      const session = newSessionId();
      await store.putPayloads([payloadRecord(session, 'function:bash:1', { searchText: 'schema scoped' })]);
      expect((await store.searchPayloads(session, 'scoped'))[0]?.objectId).toBe('function:bash:1');
      await store.close();
      const { rows } = await raw.query<{ table_name: string }>(
        'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
        [schema],
      );
      expect(rows.map((row) => row.table_name)).toEqual(
        ['activity', 'commits', 'meta', 'payloads', 'sessions'].map((table) => `${tablePrefix}${table}`),
      );
    });

    it('marks the sessions of tables written before retention existed as written when it is added', async () => {
      const prefix = `${tablePrefix}u_`;
      const first = await createPostgresStore({ connectionString: postgresTestUrl, tablePrefix: prefix });
      const session = newSessionId();
      await first.writeCommit(session, commitRecord(session, 'commit-1', 1), { step: 1 }, 0);
      await first.close();
      // As a version without retention left them: no activity table, no triggers.
      await raw.query(`DROP TABLE "${prefix}activity"`);
      await raw.query(`DROP FUNCTION "${prefix}touch"() CASCADE`);
      const upgraded = Date.now();
      const store = await createPostgresStore({ connectionString: postgresTestUrl, tablePrefix: prefix });
      try {
        const [summary] = await store.listSessions({ prefix: session });
        expect(summary).toMatchObject({ sessionId: session, version: 1, commits: 1 });
        expect(summary!.updatedAt).toBeGreaterThanOrEqual(upgraded - 1000);
        expect(await store.expireBefore(upgraded - 1000)).toEqual([]);
      } finally {
        await store.close();
        await dropTables(prefix);
      }
    });

    it('refuses tables written with a newer schema version', async () => {
      const prefix = `${tablePrefix}v_`;
      await (await createPostgresStore({ connectionString: postgresTestUrl, tablePrefix: prefix })).close();
      await raw.query(`UPDATE "${prefix}meta" SET version = 2 WHERE name = 'store'`);
      const opening = createPostgresStore({ connectionString: postgresTestUrl, tablePrefix: prefix });
      await expect(opening).rejects.toBeInstanceOf(StoreError);
      await expect(opening).rejects.toThrow(/schema version 2/);
    });

    it('refuses a table prefix or schema that is not a plain identifier', async () => {
      for (const bad of [{ tablePrefix: 'x"; DROP TABLE y; --' }, { schema: 'Upper Case' }]) {
        const opening = createPostgresStore({ pool: raw, ...bad });
        await expect(opening).rejects.toBeInstanceOf(BadInputError);
      }
    });

    it('leaves a pool it was given open on close', async () => {
      const store = await createPostgresStore({ pool: raw, tablePrefix });
      await store.writeState(newSessionId(), { step: 1 }, 0);
      await store.close();
      expect((await raw.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    });

    it('lets one of two commits from separate pools win', async () => {
      const left = await createPostgresStore({ connectionString: postgresTestUrl, tablePrefix });
      const right = await createPostgresStore({ connectionString: postgresTestUrl, tablePrefix });
      const session = newSessionId();
      const results = await Promise.all([
        left.writeCommit(session, commitRecord(session, 'left', 1), {}, 0),
        right.writeCommit(session, commitRecord(session, 'right', 1), {}, 0),
      ]);
      expect(results.map((result) => result.status).sort()).toEqual(['conflict', 'written']);
      expect(await right.listCommits(session)).toHaveLength(1);
      await Promise.all([left.close(), right.close()]);
    });

    it('reports an unreachable server as a StoreError', async () => {
      const opening = createPostgresStore({ connectionString: 'postgres://postgres@127.0.0.1:1/test' });
      await expect(opening).rejects.toBeInstanceOf(StoreError);
    });
  });
});
