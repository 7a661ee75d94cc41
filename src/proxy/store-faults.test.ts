/**
 * The proxy against stores that fail, all on loopback and all of the test's own making (its own
 * PostgreSQL connections ended, closed ports, a server that never answers, a Redis server of its
 * own killed, paused and restarted, a PostgreSQL cluster of its own stopped and restarted). Each
 * asserts: no request fails for it (no 500, no 503 while failing open), none waits for driver
 * retries, none leaves over the window, /healthz tells, governance resumes by itself once the
 * store is back, and no sidecar record written before the fault is lost.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SidecarRecord } from '../core/store.js';
import {
  closedStoreUrl,
  type OwnPostgres,
  type OwnRedis,
  ownPostgresUnavailable,
  startOwnPostgres,
  startOwnRedis,
  startSilentServer,
  terminatePostgresConnections,
  withApplicationName,
} from '../stores/fault-services.case.js';
import {
  describeWithService,
  postgresTestUrl,
  probePostgres,
  probeRedis,
  redisTestUrl,
  runTag,
} from '../stores/test-services.case.js';
import { hashApiKey } from './session-identity.js';
import {
  FAULT_TIME_BUDGET_MS,
  FAULT_WINDOW,
  type FaultProxy,
  startFaultProxy,
  type TimedResponse,
} from './testing/fault-proxy.js';

const tag = runTag();
/**
 * Governance's time budget and a lane's work, with room for a loaded machine: far below the ~10 s
 * of driver retries a request used to wait.
 */
const ANSWERED_WITHIN_MS = FAULT_TIME_BUDGET_MS + 2_000;
const STORE_TIMEOUT_MS = 200;
/** How long the paused Redis holds every command: many store deadlines. */
const PAUSE_MS = 4_000;
const MAX_LOAD_TURNS = 60;

/** A request the proxy served: 200, inside the window, in time. */
function expectServed(response: TimedResponse): void {
  expect(response.status, response.text.slice(0, 300)).toBe(200);
  expect(response.ms).toBeLessThan(ANSWERED_WITHIN_MS);
  const after = Number(response.headers.get('x-selfgc-tokens-after'));
  const reserve = Number(response.headers.get('x-selfgc-output-reserve'));
  expect(after).toBeGreaterThan(0);
  expect(after + reserve).toBeLessThanOrEqual(FAULT_WINDOW);
}

const throughLane = (response: TimedResponse) =>
  ['fail-open', 'over-budget'].includes(response.headers.get('x-selfgc-governance') ?? '');

/** Turns of a conversation until one is governed again (not through the lane), at most `attempts`. */
async function untilGoverned(fixture: FaultProxy, session: string, attempts = 40): Promise<TimedResponse> {
  let last: TimedResponse | undefined;
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    last = await fixture.turn({ apiKey: 'sk-resume', session, turns: 8 + attempt });
    if (!throughLane(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return last!;
}

/**
 * `sessions` conversations at once, each sending its turns from `from` on, one after the other (a
 * conversation grows by a file read a turn), through `to`, and on while `goOn()` holds (at most
 * `MAX_LOAD_TURNS` turns each); resolves with every answer.
 */
async function conversationsUnderLoad(
  fixtureNow: FaultProxy,
  sessions: readonly string[],
  from: number,
  to: number,
  goOn: () => boolean = () => false,
): Promise<TimedResponse[]> {
  const answered = await Promise.all(
    sessions.map(async (session) => {
      const responses: TimedResponse[] = [];
      for (let turns = from; (turns <= to || goOn()) && turns < from + MAX_LOAD_TURNS; turns += 1) {
        responses.push(await fixtureNow.turn({ apiKey: 'sk-load', session, turns }));
      }
      return responses;
    }),
  );
  return answered.flat();
}

/** The store's name of a session `conversationsUnderLoad` ran. */
const storeSession = (session: string) =>
  `${hashApiKey(new Headers({ authorization: 'Bearer sk-load' }))}:${session}`;

/** Every sidecar record of `sessions`, by session, commit and object. */
async function sidecarOf(
  fixtureNow: FaultProxy,
  sessions: readonly string[],
): Promise<Map<string, SidecarRecord>> {
  const records = new Map<string, SidecarRecord>();
  for (const session of sessions) {
    for (const record of await fixtureNow.store.listPayloads(storeSession(session))) {
      records.set(`${session}/${record.commitId}/${record.objectId}`, record);
    }
  }
  return records;
}

/** Polls /healthz (at most `attempts` times) until its status is `status`. */
async function untilHealth(
  fixtureNow: FaultProxy,
  status: 'ok' | 'degraded',
  attempts = 40,
): Promise<unknown> {
  let body: { status?: string } = {};
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    body = JSON.parse((await fixtureNow.health()).text) as { status?: string };
    if (body.status === status) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return body;
}

/**
 * A store outage under load: four conversations go on while the store stops (a new request then
 * goes through the lane) and comes back; every answer is served in time and inside the window,
 * some through the lane, governance resumes by itself, /healthz says so, and every sidecar record
 * written before the outage is still there.
 */
async function outageUnderLoad(
  fixtureNow: FaultProxy,
  outage: { label: string; storeKind: string; stop(): Promise<void>; restart(): Promise<void> },
): Promise<void> {
  const sessions = Array.from({ length: 4 }, (_, index) => `${outage.label}-${index}`);
  for (const response of await conversationsUnderLoad(fixtureNow, sessions, 8, 10)) expectServed(response);
  const before = await sidecarOf(fixtureNow, sessions);
  expect(before.size).toBeGreaterThan(0);

  let restarted = false;
  const during = conversationsUnderLoad(fixtureNow, sessions, 11, 12, () => !restarted);
  await new Promise((resolve) => setTimeout(resolve, 100));
  await outage.stop();
  expect(await untilHealth(fixtureNow, 'degraded')).toMatchObject({
    status: 'degraded',
    storeKind: outage.storeKind,
  });
  const whileDown = await fixtureNow.turn({
    apiKey: 'sk-down',
    session: `${outage.label}-while-down`,
    turns: 9,
  });
  expectServed(whileDown);
  expect(whileDown.headers.get('x-selfgc-governance')).toBe('fail-open');
  await outage.restart();
  restarted = true;
  const answered = await during;
  for (const response of answered) expectServed(response);
  expect(answered.some(throughLane)).toBe(true);

  const resumed = await untilGoverned(fixtureNow, `${outage.label}-after`);
  expectServed(resumed);
  expect(throughLane(resumed)).toBe(false);
  expect(await untilHealth(fixtureNow, 'ok')).toMatchObject({ status: 'ok', breaker: 'closed' });
  const after = await sidecarOf(fixtureNow, sessions);
  for (const [key, record] of before) expect(after.get(key)).toEqual(record);
  expect(unhandled()).toEqual([]);
}

/** What drivers print when an 'error' event has no listener, from this thread or a worker's. */
let printed: string[] = [];
beforeEach(() => {
  printed = [];
  const keep = (chunk: unknown) => {
    printed.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stderr, 'write').mockImplementation(keep);
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => keep(args.join(' ')));
});
afterEach(() => {
  vi.restoreAllMocks();
});
const unhandled = () => printed.filter((line) => /Unhandled error event|Unhandled 'error'/.test(line));

let fixture: FaultProxy | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

describe.each([
  ['in worker threads', 2],
  ['on the proxy thread', 0],
])('a store that cannot be reached (%s)', (_mode, threads) => {
  it('PostgreSQL on a closed port at start-up: the proxy starts degraded and serves through the lane', async () => {
    fixture = await startFaultProxy({
      storeUrl: await closedStoreUrl('postgres'),
      threads,
      storeTimeoutMs: STORE_TIMEOUT_MS,
    });
    const health = await fixture.health();
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toMatchObject({
      status: 'degraded',
      store: 'down',
      storeKind: 'postgres',
    });
    for (let turn = 0; turn < 4; turn += 1) {
      const response = await fixture.turn({ apiKey: 'sk-a', session: 'pg-down', turns: 8 + turn });
      expectServed(response);
      expect(response.headers.get('x-selfgc-governance')).toBe('fail-open');
      expect(response.headers.get('x-selfgc-warnings')).toContain('stateless-reduction');
    }
    expect(fixture.logs.every((entry) => entry.lane === 'store-unavailable')).toBe(true);
  });

  it('Redis on a closed port: every request answered at once, nothing printed unhandled', async () => {
    fixture = await startFaultProxy({
      storeUrl: await closedStoreUrl('redis'),
      threads,
      storeTimeoutMs: STORE_TIMEOUT_MS,
    });
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        fixture!.turn({ apiKey: `sk-${index % 3}`, session: `redis-down-${index}`, turns: 8 }),
      ),
    );
    for (const response of responses) expectServed(response);
    expect(JSON.parse((await fixture.health()).text)).toMatchObject({
      status: 'degraded',
      storeKind: 'redis',
    });
    expect(unhandled()).toEqual([]);
  });
});

describe('a hung Redis (accepts connections, never answers)', () => {
  it('holds the store deadline, opens the breaker, and reports degraded quickly', async () => {
    const silent = await startSilentServer();
    try {
      fixture = await startFaultProxy({
        storeUrl: `redis://127.0.0.1:${silent.port}/0`,
        threads: 2,
        storeTimeoutMs: STORE_TIMEOUT_MS,
      });
      for (let turn = 0; turn < 5; turn += 1) {
        expectServed(await fixture.turn({ apiKey: 'sk-h', session: 'hung', turns: 8 + turn }));
      }
      // Each probe waits at most the store's deadline; after three, the breaker answers at once.
      for (let probe = 0; probe < 3; probe += 1) {
        const health = await fixture.health();
        expect(health.ms).toBeLessThan(1_000);
        expect(JSON.parse(health.text)).toMatchObject({ status: 'degraded', store: 'down' });
      }
      expect(JSON.parse((await fixture.health()).text)).toMatchObject({ breaker: 'open' });
      expect(silent.connections()).toBeGreaterThan(0);
    } finally {
      await fixture?.close();
      fixture = undefined;
      await silent.close();
    }
  });
});

describeWithService(
  'a Redis of our own, killed and restarted under requests',
  await probeRedis(redisTestUrl),
  () => {
    let redis: OwnRedis | undefined;
    afterAll(async () => {
      await redis?.remove();
    });

    it('serves through the lane while it is gone, governs again by itself once it is back, and loses no record', async () => {
      redis = await startOwnRedis({ durable: true });
      fixture = await startFaultProxy({
        storeUrl: redis.url,
        threads: 2,
        storeTimeoutMs: STORE_TIMEOUT_MS,
        guard: { openMs: 200 },
      });
      await outageUnderLoad(fixture, {
        label: 'killed',
        storeKind: 'redis',
        stop: () => redis!.kill(),
        restart: () => redis!.restart(),
      });
      expect(unhandled()).toEqual([]);
    });
  },
);

describeWithService(
  'PostgreSQL connections ended by the server under requests',
  await probePostgres(postgresTestUrl),
  () => {
    const prefixes: string[] = [];
    afterAll(async () => {
      const pool = new pg.Pool({ connectionString: postgresTestUrl });
      for (const prefix of prefixes) {
        for (const table of ['payloads', 'commits', 'sessions', 'activity', 'meta']) {
          await pool.query(`DROP TABLE IF EXISTS "${prefix}${table}"`);
        }
        await pool.query(`DROP FUNCTION IF EXISTS "${prefix}touch"()`);
      }
      await pool.end();
    });

    it.each([
      ['in worker threads', 2],
      ['on the proxy thread', 0],
    ])(
      'pg_terminate_backend mid-run (%s): no crash, no error answer, governance resumes',
      async (_mode, threads) => {
        const prefix = `selfgc_pfault_${tag}_${threads}_`;
        prefixes.push(prefix);
        const applicationName = `selfgc-pfault-${tag}-${threads}`;
        fixture = await startFaultProxy({
          storeUrl: withApplicationName(`${postgresTestUrl}?prefix=${prefix}`, applicationName),
          threads,
          // A loaded machine's commits (several statements each) must not read as an outage here.
          storeTimeoutMs: 2_000,
        });
        const sessions = Array.from({ length: 6 }, (_, index) => `terminated-${index}`);
        const responses: TimedResponse[] = [];
        let running = true;
        const conversations = Promise.all(
          sessions.map(async (session, index) => {
            for (let turns = 8; turns < 16; turns += 1) {
              responses.push(await fixture!.turn({ apiKey: `sk-${index % 2}`, session, turns }));
            }
          }),
        ).finally(() => {
          running = false;
        });
        let ended = 0;
        for (let round = 0; round < 100 && running; round += 1) {
          await new Promise((resolve) => setTimeout(resolve, 40));
          ended += await terminatePostgresConnections(postgresTestUrl, applicationName);
        }
        await conversations;
        expect(ended).toBeGreaterThan(0);
        expect(responses).toHaveLength(6 * 8);
        for (const response of responses) expectServed(response);
        const resumed = await untilGoverned(fixture, 'after-terminations');
        expect(throughLane(resumed)).toBe(false);
      },
    );
  },
);

describeWithService(
  'a Redis of our own, paused longer than the store deadline under requests',
  await probeRedis(redisTestUrl),
  () => {
    let redis: OwnRedis | undefined;
    afterAll(async () => {
      await redis?.kill();
    });

    it('answers every request within the deadline, inside the window, and governs again after the pause', async () => {
      redis = await startOwnRedis();
      fixture = await startFaultProxy({
        storeUrl: redis.url,
        threads: 2,
        storeTimeoutMs: STORE_TIMEOUT_MS,
        guard: { openMs: 200 },
      });
      const sessions = Array.from({ length: 4 }, (_, index) => `paused-${index}`);
      for (const response of await conversationsUnderLoad(fixture, sessions, 8, 10)) expectServed(response);
      const before = await sidecarOf(fixture, sessions);
      expect(before.size).toBeGreaterThan(0);
      const admin = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
      admin.on('error', () => undefined);
      try {
        // Every command of every client waits for the pause: a hung store, for four seconds.
        await admin.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'ALL');
        const paused = performance.now();
        const during = await conversationsUnderLoad(fixture, sessions, 11, 13);
        expect(performance.now() - paused).toBeLessThan(PAUSE_MS);
        for (const response of during) expectServed(response);
        expect(during.some(throughLane)).toBe(true);
        expect(await untilHealth(fixture, 'degraded', 5)).toMatchObject({ status: 'degraded' });
      } finally {
        admin.disconnect();
      }
      await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
      const resumed = await untilGoverned(fixture, 'after-pause');
      expect(throughLane(resumed)).toBe(false);
      expect(await untilHealth(fixture, 'ok')).toMatchObject({ status: 'ok' });
      const after = await sidecarOf(fixture, sessions);
      for (const [key, record] of before) expect(after.get(key)).toEqual(record);
      expect(unhandled()).toEqual([]);
    });
  },
);

describeWithService(
  'a PostgreSQL cluster of our own, stopped and restarted under requests',
  ownPostgresUnavailable(),
  () => {
    let postgres: OwnPostgres | undefined;
    afterAll(async () => {
      await postgres?.remove();
    });

    it.each([
      ['in worker threads', 2],
      ['on the proxy thread', 0],
    ])(
      'serves inside the window while it is down (%s), governs again once it is back, and loses no record',
      async (_mode, threads) => {
        postgres ??= await startOwnPostgres();
        fixture = await startFaultProxy({
          storeUrl: `${postgres.url}?prefix=selfgc_stop_${threads}_`,
          threads,
          // A loaded machine's commits (several statements each) must not read as an outage here.
          storeTimeoutMs: 1_000,
          guard: { openMs: 200 },
        });
        await outageUnderLoad(fixture, {
          label: `stopped-${threads}`,
          storeKind: 'postgres',
          stop: () => postgres!.stop(),
          restart: () => postgres!.restart(),
        });
        expect(unhandled()).toEqual([]);
      },
    );
  },
);
