import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { describe, it } from 'vitest';
import { runsInCi } from '../testing/ci-environment.js';

/** Test Redis; database 15 keeps test keys away from anything else on the server. */
export const redisTestUrl = process.env.SELFGC_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';
export const postgresTestUrl =
  process.env.SELFGC_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A short random tag, so each test run uses its own keys and tables. */
export function runTag(): string {
  return randomBytes(5).toString('hex');
}

function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}

/** Delete every key under `keyPrefix` (a test run's own). */
export async function deleteRedisKeys(url: string, keyPrefix: string): Promise<void> {
  const client = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${keyPrefix}:*`, 'COUNT', 500);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}

/** Undefined when Redis answers PING, else why not. */
export async function probeRedis(url: string): Promise<string | undefined> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // ioredis rejects with a bare "Connection is closed."; the event carries the real cause.
  let cause: unknown;
  client.on('error', (error: unknown) => {
    cause ??= error;
  });
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (error) {
    return `Redis at ${withoutPassword(url)} does not answer (${reasonOf(cause ?? error)})`;
  } finally {
    client.disconnect();
  }
}

/** Undefined when PostgreSQL answers `select 1`, else why not. */
export async function probePostgres(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${withoutPassword(url)} does not answer (${reasonOf(error)})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Describe tests that need a running service. When the service is down they are skipped with
 * the reason in the suite name, except under CI, where a missing service must fail the run.
 */
export function describeWithService(name: string, unavailable: string | undefined, body: () => void): void {
  if (unavailable !== undefined && runsInCi()) {
    describe(name, () => {
      it('reaches its service (required because CI is set)', () => {
        throw new Error(unavailable);
      });
    });
    return;
  }
  describe.skipIf(unavailable !== undefined)(unavailable ? `${name} — skipped: ${unavailable}` : name, body);
}
