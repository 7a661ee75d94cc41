import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { BadInputError } from '../core/errors.js';
import { createStoreFromUrl } from './parse-store-url.js';
import { describeStoreContract } from './store-contract.case.js';
import { newSessionId, payloadRecord } from './store-fixtures.case.js';
import {
  describeWithService,
  postgresTestUrl,
  probePostgres,
  probeRedis,
  redisTestUrl,
  runTag,
} from './test-services.case.js';

const directory = mkdtempSync(join(tmpdir(), 'selfgc-url-'));
let fileCount = 0;
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describeStoreContract('memory: URL', () => createStoreFromUrl('memory:'));
describeStoreContract('sqlite::memory: URL', () => createStoreFromUrl('sqlite::memory:'));
describeStoreContract('sqlite:<file> URL', () =>
  createStoreFromUrl(`sqlite:${join(directory, `${++fileCount}.db`)}`),
);

describe('createStoreFromUrl', () => {
  it('picks the backend from the scheme', async () => {
    for (const [url, kind] of [
      ['memory:', 'memory'],
      ['MEMORY://', 'memory'],
      ['sqlite::memory:', 'sqlite'],
      [`sqlite://${join(directory, 'absolute.db')}`, 'sqlite'],
    ] as const) {
      const store = await createStoreFromUrl(url);
      expect(store.kind, url).toBe(kind);
      await store.close();
    }
  });

  it('opens a relative sqlite path against the working directory', async () => {
    const previous = process.cwd();
    process.chdir(directory);
    try {
      const store = await createStoreFromUrl('sqlite:./relative.db');
      const session = newSessionId();
      await store.writeState(session, { step: 1 }, 0);
      await store.close();
      const reopened = await createStoreFromUrl(`sqlite:${join(directory, 'relative.db')}`);
      expect(await reopened.readSession(session)).toEqual({ version: 1, state: { step: 1 } });
      await reopened.close();
    } finally {
      process.chdir(previous);
    }
  });

  it('refuses an unknown scheme with a one-line message that names it but hides the URL', async () => {
    const error: unknown = await createStoreFromUrl('mysql://admin:hunter2@db.internal/selfgc').then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(BadInputError);
    const { message } = error as BadInputError;
    expect(message).toContain('"mysql:"');
    expect(message).toContain('sqlite:');
    expect(message).not.toContain('hunter2');
    expect(message).not.toContain('\n');
  });

  it('refuses URLs without a scheme, an empty sqlite path or text after memory:', async () => {
    for (const url of ['', './selfgc.db', 'sqlite:', 'sqlite://', 'memory:extra']) {
      await expect(createStoreFromUrl(url), url).rejects.toBeInstanceOf(BadInputError);
    }
  });
});

const redisUnavailable = await probeRedis(redisTestUrl);
describeWithService('createStoreFromUrl with Redis', redisUnavailable, () => {
  it('opens redis:// with the key prefix from ?prefix=', async () => {
    const prefix = `selfgc-test-url:${runTag()}`;
    const separator = redisTestUrl.includes('?') ? '&' : '?';
    const store = await createStoreFromUrl(`${redisTestUrl}${separator}prefix=${encodeURIComponent(prefix)}`);
    const client = new Redis(redisTestUrl);
    try {
      expect(store.kind).toBe('redis');
      const session = newSessionId();
      await store.putPayloads([payloadRecord(session, 'function:bash:1')]);
      expect((await store.getPayload(session, 'function:bash:1'))?.objectId).toBe('function:bash:1');
      // The session's payloads and their order, and the index of sessions.
      expect(await client.keys(`${prefix}:*`)).toHaveLength(3);
      await store.deleteSession(session);
      expect(await client.keys(`${prefix}:*`)).toEqual([]);
    } finally {
      await store.close();
      client.disconnect();
    }
  });
});

const postgresUnavailable = await probePostgres(postgresTestUrl);
describeWithService('createStoreFromUrl with PostgreSQL', postgresUnavailable, () => {
  it('opens postgres:// and postgresql:// with the table prefix from ?prefix=', async () => {
    const prefix = `selfgc_test_url_${runTag()}_`;
    const pool = new pg.Pool({ connectionString: postgresTestUrl });
    try {
      for (const url of [postgresTestUrl, postgresTestUrl.replace(/^postgres(ql)?:/, 'postgresql:')]) {
        const separator = url.includes('?') ? '&' : '?';
        const store = await createStoreFromUrl(`${url}${separator}prefix=${prefix}`);
        expect(store.kind).toBe('postgres');
        const session = newSessionId();
        await store.writeState(session, { step: 1 }, 0);
        expect(await store.readSession(session)).toEqual({ version: 1, state: { step: 1 } });
        await store.close();
      }
      const { rows } = await pool.query<{ count: string }>(
        "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE $1 || '%'",
        [prefix],
      );
      expect(rows[0]?.count).toBe('5');
    } finally {
      for (const table of ['payloads', 'commits', 'sessions', 'activity', 'meta']) {
        await pool.query(`DROP TABLE IF EXISTS "${prefix}${table}"`);
      }
      await pool.query(`DROP FUNCTION IF EXISTS "${prefix}touch"()`);
      await pool.end();
    }
  });
});
