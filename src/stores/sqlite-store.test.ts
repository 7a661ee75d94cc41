import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreError } from '../core/errors.js';
import type { CommitRecord, SidecarRecord } from '../core/store.js';
import { PAYLOAD_COLUMNS, payloadRowValues } from './payload-row.js';
import { createSqliteStore } from './sqlite-store.js';
import { describeStoreContract } from './store-contract.case.js';
import { commitRecord, newSessionId, payloadRecord } from './store-fixtures.case.js';

const directory = mkdtempSync(join(tmpdir(), 'selfgc-sqlite-'));
let fileCount = 0;
let currentPath = '';
const nextPath = () => join(directory, `store-${++fileCount}.db`);

afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** Write straight into the file through a second connection, past the store's checks. */
function withRawDatabase(run: (db: Database.Database) => void): void {
  const db = new Database(currentPath);
  try {
    run(db);
  } finally {
    db.close();
  }
}

describeStoreContract(
  'sqlite',
  async () => {
    currentPath = nextPath();
    return createSqliteStore({ path: currentPath });
  },
  undefined,
  {
    async writeRawPayload(record: SidecarRecord) {
      withRawDatabase((db) =>
        db
          .prepare(`INSERT INTO selfgc_payloads (${PAYLOAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
          .run(...payloadRowValues(record)),
      );
    },
    async writeRawCommit(commit: CommitRecord) {
      withRawDatabase((db) =>
        db
          .prepare('INSERT INTO selfgc_commits (session_id, commit_id, sequence, body) VALUES (?, ?, ?, ?)')
          .run(commit.sessionId, commit.commitId, commit.sequence, JSON.stringify(commit)),
      );
    },
    openPeer: async () => createSqliteStore({ path: currentPath }),
  },
);

describeStoreContract('sqlite :memory:', async () => createSqliteStore({ path: ':memory:' }));

describe('sqlite store files', () => {
  it('marks the sessions of a file written before retention existed as written when it is added', async () => {
    currentPath = nextPath();
    const first = createSqliteStore({ path: currentPath });
    const session = newSessionId();
    await first.writeCommit(session, commitRecord(session, 'commit-1', 1), { step: 1 }, 0);
    await first.close();
    // As a version without retention left it: no activity table, no triggers.
    withRawDatabase((db) => {
      for (const trigger of [
        'selfgc_payloads_touched',
        'selfgc_sessions_created',
        'selfgc_sessions_touched',
      ]) {
        db.exec(`DROP TRIGGER ${trigger}`);
      }
      db.exec('DROP TABLE selfgc_activity');
    });
    const upgraded = Date.now();
    const store = createSqliteStore({ path: currentPath });
    try {
      const [summary] = await store.listSessions();
      expect(summary).toMatchObject({ sessionId: session, version: 1, commits: 1 });
      expect(summary!.updatedAt).toBeGreaterThanOrEqual(upgraded - 5);
      expect(await store.expireBefore(upgraded - 5)).toEqual([]);
      await store.writeState(session, { step: 2 }, 1);
      expect((await store.listSessions())[0]!.updatedAt).toBeGreaterThanOrEqual(summary!.updatedAt);
    } finally {
      await store.close();
    }
  });

  it('keeps payloads, commits and state across close and reopen', async () => {
    const path = nextPath();
    const session = newSessionId();
    const record = payloadRecord(session, 'function:read_file:3', { searchText: 'config loader' });
    const commit = commitRecord(session, 'commit-1', 1);
    const first = createSqliteStore({ path });
    await first.putPayloads([record]);
    await first.writeCommit(session, commit, { step: 1 }, 0);
    await first.close();

    const reopened = createSqliteStore({ path });
    expect(await reopened.getPayload(session, record.objectId)).toEqual(record);
    expect(await reopened.listCommits(session)).toEqual([commit]);
    expect(await reopened.readSession(session)).toEqual({ version: 1, state: { step: 1 } });
    expect((await reopened.searchPayloads(session, 'loader'))[0]?.objectId).toBe(record.objectId);
    await reopened.close();
  });

  it('shares one file between two open stores, with the version check across them', async () => {
    const path = nextPath();
    const session = newSessionId();
    const left = createSqliteStore({ path });
    const right = createSqliteStore({ path });
    const commit = commitRecord(session, 'commit-1', 1);
    expect(await left.writeCommit(session, commit, { by: 'left' }, 0)).toEqual({
      status: 'written',
      version: 1,
    });
    expect(await right.listCommits(session)).toEqual([commit]);
    expect(await right.writeCommit(session, commitRecord(session, 'commit-2', 2), {}, 0)).toEqual({
      status: 'conflict',
      version: 1,
    });
    expect(
      await right.writeCommit(session, commitRecord(session, 'commit-2', 2), { by: 'right' }, 1),
    ).toEqual({
      status: 'written',
      version: 2,
    });
    expect(await left.readSession(session)).toEqual({ version: 2, state: { by: 'right' } });
    await Promise.all([left.close(), right.close()]);
  });

  it('lets another process read the commits while the store is open (WAL)', async () => {
    const path = nextPath();
    const session = newSessionId();
    const store = createSqliteStore({ path });
    await store.writeCommit(session, commitRecord(session, 'commit-1', 1), {}, 0);
    const script = `const Database = require('better-sqlite3');
      const db = new Database(process.argv[1], { readonly: true });
      const mode = db.pragma('journal_mode', { simple: true });
      const row = db.prepare('SELECT count(*) AS n FROM selfgc_commits WHERE session_id = ?').get(process.argv[2]);
      process.stdout.write(mode + ' ' + row.n);`;
    const output = execFileSync(process.execPath, ['-e', script, path, session], { encoding: 'utf8' });
    expect(output).toBe('wal 1');
    await store.close();
  });

  it('checkpoints on a thread of its own with background checkpoints, and loses nothing', async () => {
    // About 600 WAL pages: under SQLite's own threshold (1,000), so only a background
    // checkpoint copies them into the database file before the store closes.
    const write = async (store: ReturnType<typeof createSqliteStore>, session: string) => {
      const text = 'x'.repeat(4_000);
      for (let batch = 0; batch < 20; batch += 1) {
        const records = Array.from({ length: 10 }, (_, index) =>
          payloadRecord(session, `function:bash:${batch * 10 + index}`, {
            payload: `${batch} ${index} ${text}`,
          }),
        );
        await store.putPayloads(records);
      }
    };
    const fileSize = (path: string) => statSync(path).size;
    const settle = async (path: string) => {
      for (let round = 0; round < 40 && fileSize(path) < 1_000_000; round += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return fileSize(path);
    };

    const inlinePath = nextPath();
    const inline = createSqliteStore({ path: inlinePath });
    await write(inline, newSessionId());
    // The premise: these pages are still in the WAL when nothing checkpoints in the background.
    expect(fileSize(inlinePath)).toBeLessThan(1_000_000);
    await inline.close();

    const path = nextPath();
    const session = newSessionId();
    const store = createSqliteStore({ path, checkpoints: 'background' });
    await write(store, session);
    expect(await settle(path)).toBeGreaterThan(1_000_000);
    await store.putPayloads([
      payloadRecord(session, 'function:bash:999', { searchText: 'after checkpoint' }),
    ]);
    await store.close();

    const reopened = createSqliteStore({ path });
    expect(await reopened.listPayloads(session)).toHaveLength(201);
    expect((await reopened.searchPayloads(session, 'checkpoint'))[0]?.objectId).toBe('function:bash:999');
    await reopened.close();
  });

  it('refuses a file written with a newer schema version', async () => {
    const path = nextPath();
    await createSqliteStore({ path }).close();
    const db = new Database(path);
    db.prepare("UPDATE selfgc_schema SET version = 2 WHERE name = 'store'").run();
    db.close();
    expect(() => createSqliteStore({ path })).toThrow(StoreError);
    expect(() => createSqliteStore({ path })).toThrow(/schema version 2/);
  });

  it('reports a file that is not a database as a StoreError', () => {
    const path = nextPath();
    writeFileSync(path, 'this is not an SQLite database, just text that is long enough to have a header');
    expect(() => createSqliteStore({ path })).toThrow(StoreError);
  });
});
