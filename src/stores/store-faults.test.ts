/**
 * The one failure policy, against real stores that fail: every call settles within its deadline
 * or fails fast with a `StoreError`, nothing is left unhandled, and the store is used again by
 * itself once it is back.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StoreError } from '../core/errors.js';
import {
  closedStoreUrl,
  type OwnRedis,
  startOwnRedis,
  startSilentServer,
  terminatePostgresConnections,
  withApplicationName,
} from './fault-services.case.js';
import type { GuardedStore } from './guard-store.js';
import { openGuardedStore } from './open-guarded-store.js';
import { commitRecord, newSessionId, payloadRecord } from './store-fixtures.case.js';
import {
  describeWithService,
  postgresTestUrl,
  probePostgres,
  probeRedis,
  redisTestUrl,
  runTag,
} from './test-services.case.js';

const tag = runTag();
const tablePrefix = `selfgc_fault_${tag}_`;
/** Generous bounds: they tell "at its deadline" from "after driver retries" (seconds). */
const FAST_MS = 1_500;
const GUARD = { timeoutMs: 200, failures: 3, openMs: 300 };

/** The time a call takes to settle, and how. */
async function timed(work: () => Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = performance.now();
  try {
    await work();
    return { ms: performance.now() - started, error: undefined };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

/** Call until the store answers, at most `attempts` times `pauseMs` apart. */
async function untilAnswered(store: GuardedStore, attempts = 60, pauseMs = 100): Promise<boolean> {
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    if ((await store.probe()).status === 'ok') return true;
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  return false;
}

/** What drivers print when an 'error' event has no listener. */
let consoleErrors: string[] = [];
beforeEach(() => {
  consoleErrors = [];
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    consoleErrors.push(args.map(String).join(' '));
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe('a store that cannot be reached at start-up', () => {
  it.each(['postgres', 'redis'] as const)(
    '%s on a closed port: opens degraded, and calls fail fast',
    async (kind) => {
      const url = await closedStoreUrl(kind);
      const store = await openGuardedStore(url, { guard: GUARD });
      try {
        expect(store.health()).toMatchObject({ kind, status: 'down' });
        for (let call = 0; call < 6; call += 1) {
          const { ms, error } = await timed(() => store.readSession(newSessionId()));
          expect(error).toBeInstanceOf(StoreError);
          expect(ms).toBeLessThan(FAST_MS);
        }
        expect(store.health().breaker).not.toBe('closed');
        expect(consoleErrors.filter((line) => line.includes('Unhandled error event'))).toEqual([]);
      } finally {
        await store.close();
      }
    },
  );

  it('sqlite in a directory that does not exist: opens degraded too', async () => {
    const store = await openGuardedStore('sqlite:/no/such/directory/selfgc.db', { guard: GUARD });
    expect(store.health()).toMatchObject({ kind: 'sqlite', status: 'down' });
    await expect(store.readSession('s')).rejects.toThrow(StoreError);
    await store.close();
  });

  it('a bad URL is still an error at once', async () => {
    await expect(openGuardedStore('mongodb://127.0.0.1/x')).rejects.toThrow(/unknown store URL scheme/);
    await expect(openGuardedStore('postgres://127.0.0.1/x?prefix=Bad-Prefix!')).rejects.toThrow(
      /table prefix/,
    );
  });
});

describe('a hung Redis (accepts connections, never answers)', () => {
  it('holds the deadline, opens the breaker, and reports down quickly', async () => {
    const silent = await startSilentServer();
    const store = await openGuardedStore(`redis://127.0.0.1:${silent.port}/0`, { guard: GUARD });
    try {
      const results = [];
      for (let call = 0; call < 5; call += 1) results.push(await timed(() => store.readSession('s')));
      expect(results.every((result) => result.error instanceof StoreError)).toBe(true);
      expect(Math.max(...results.map((result) => result.ms))).toBeLessThan(FAST_MS);
      expect(silent.connections()).toBeGreaterThan(0);
      expect(store.health()).toMatchObject({ status: 'down', breaker: 'open' });
      const probe = await timed(() => store.probe());
      expect(probe.ms).toBeLessThan(FAST_MS);
    } finally {
      await store.close();
      await silent.close();
    }
  });
});

describeWithService('a Redis of our own, killed and restarted', await probeRedis(redisTestUrl), () => {
  let redis: OwnRedis | undefined;
  afterAll(async () => {
    await redis?.kill();
  });

  it('fails fast while it is gone and is used again by itself when it is back', async () => {
    redis = await startOwnRedis();
    const store = await openGuardedStore(redis.url, { guard: GUARD });
    try {
      const session = newSessionId();
      await store.writeState(session, { step: 1 }, 0);
      await redis.kill();
      for (let call = 0; call < 5; call += 1) {
        const { ms, error } = await timed(() => store.readSession(session));
        expect(error).toBeInstanceOf(StoreError);
        expect(ms).toBeLessThan(FAST_MS);
      }
      expect(store.health().status).toBe('down');
      await redis.restart();
      expect(await untilAnswered(store)).toBe(true);
      // Started without persistence: the session is gone, and the store takes writes again.
      expect(await store.readSession(session)).toBeUndefined();
      expect(await store.writeState(session, { step: 2 }, 0)).toMatchObject({ status: 'written' });
      expect(consoleErrors.filter((line) => line.includes('Unhandled error event'))).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describeWithService(
  'PostgreSQL connections ended by the server',
  await probePostgres(postgresTestUrl),
  () => {
    const applicationName = `selfgc-fault-${tag}`;
    afterAll(async () => {
      const pool = new (await import('pg')).default.Pool({ connectionString: postgresTestUrl });
      for (const table of ['payloads', 'commits', 'sessions', 'activity', 'meta']) {
        await pool.query(`DROP TABLE IF EXISTS "${tablePrefix}${table}"`);
      }
      await pool.query(`DROP FUNCTION IF EXISTS "${tablePrefix}touch"()`);
      await pool.end();
    });

    it('survives pg_terminate_backend mid-run: calls fail as StoreError or succeed, and work resumes', async () => {
      const url = withApplicationName(`${postgresTestUrl}?prefix=${tablePrefix}`, applicationName);
      const store = await openGuardedStore(url, { guard: { ...GUARD, timeoutMs: 2_000 } });
      expect(store.health().status).toBe('ok');
      const sessions = Array.from({ length: 8 }, () => newSessionId());
      const outcomes: Array<'ok' | 'store-failure'> = [];
      const writer = async (session: string) => {
        let version = 0;
        for (let step = 1; step <= 15; step += 1) {
          try {
            await store.putPayloads([payloadRecord(session, `function:bash:${step}`)]);
            const result = await store.writeCommit(
              session,
              commitRecord(session, `c-${step}`, step),
              { step },
              version,
            );
            version = result.version;
            outcomes.push('ok');
          } catch (error) {
            expect(error).toBeInstanceOf(StoreError);
            outcomes.push('store-failure');
            version = (await store.readSession(session).catch(() => undefined))?.version ?? version;
          }
        }
      };
      const running = Promise.all(sessions.map(writer));
      let ended = 0;
      for (let round = 0; round < 5; round += 1) {
        await new Promise((resolve) => setTimeout(resolve, 30));
        ended += await terminatePostgresConnections(postgresTestUrl, applicationName);
      }
      await running;
      expect(ended).toBeGreaterThan(0);
      expect(outcomes).toHaveLength(8 * 15);
      expect(outcomes).toContain('ok');
      // Work goes on through fresh connections.
      expect(await untilAnswered(store)).toBe(true);
      const session = sessions[0]!;
      const before = (await store.readSession(session))?.version ?? 0;
      expect(
        await store.writeCommit(session, commitRecord(session, 'after', 100), { after: true }, before),
      ).toMatchObject({ status: 'written' });
      await store.close();
    });
  },
);
