import { describe, expect, expectTypeOf, it } from 'vitest';
import { BadInputError, StoreError } from '../core/errors.js';
import {
  SIDECAR_STORE_OPERATIONS,
  type SidecarStore,
  type SidecarStoreOperation,
  type UnlistedStoreOperation,
} from '../core/store.js';
import { guardStore, type StoreHealth } from './guard-store.js';
import { createMemoryStore } from './memory-store.js';
import { describeStoreContract } from './store-contract.case.js';

/** A store whose every method records its call and answers `answer(operation)`. */
function recordingStore(answer: (operation: string) => Promise<unknown>) {
  const calls: Array<{ operation: string; args: unknown[] }> = [];
  const store = new Proxy({ kind: 'recording' } as SidecarStore, {
    get(target, property) {
      if (property === 'kind') return target.kind;
      // Not a thenable: a promise resolved with the store must not call it.
      if (typeof property !== 'string' || property === 'then') return undefined;
      return (...args: unknown[]) => {
        calls.push({ operation: property, args });
        return answer(property);
      };
    },
  });
  return { store, calls };
}

/** A store that never answers. */
const hungStore = () => recordingStore(() => new Promise<never>(() => undefined)).store;
const failingStore = () =>
  recordingStore(async () => Promise.reject(new StoreError('connection refused'))).store;

/** A clock the test moves. */
function testClock() {
  let time = 1_000_000;
  return {
    now: () => time,
    advance: (ms: number) => {
      time += ms;
    },
  };
}

describe('guardStore: every operation is forwarded', () => {
  it('lists every method of SidecarStore', () => {
    expectTypeOf<UnlistedStoreOperation>().toBeNever();
    const memory = createMemoryStore() as unknown as Record<string, unknown>;
    const methods = Object.keys(memory).filter((key) => typeof memory[key] === 'function');
    expect([...methods].sort()).toEqual([...SIDECAR_STORE_OPERATIONS].sort());
  });

  it('forwards each listed operation with its arguments and returns its answer', async () => {
    const { store, calls } = recordingStore(async (operation) => `answer of ${operation}`);
    const guarded = guardStore(store);
    for (const operation of SIDECAR_STORE_OPERATIONS) {
      if (operation === 'close') continue;
      const method = guarded[operation] as (...args: unknown[]) => Promise<unknown>;
      expect(typeof method, operation).toBe('function');
      const args = [`${operation}-a`, { n: 1 }];
      expect(await method(...args)).toBe(`answer of ${operation}`);
      expect(calls.at(-1)).toEqual({ operation, args });
    }
    await guarded.close();
    expect(calls.at(-1)?.operation).toBe('close' satisfies SidecarStoreOperation);
    expect(calls.map((call) => call.operation).sort()).toEqual([...SIDECAR_STORE_OPERATIONS].sort());
  });
});

describeStoreContract('guarded memory', async () => guardStore(createMemoryStore()));

describe('guardStore: deadline and breaker', () => {
  it('fails a call past its deadline with a StoreError, and opens after the failures in a row', async () => {
    const changes: StoreHealth[] = [];
    const guarded = guardStore(hungStore(), {
      timeoutMs: 20,
      failures: 3,
      onChange: (health) => changes.push(health),
    });
    for (let attempt = 0; attempt < 3; attempt += 1) {
      await expect(guarded.readSession('s')).rejects.toThrow(/no answer within 20 ms/);
    }
    expect(guarded.health()).toMatchObject({
      kind: 'recording',
      status: 'down',
      breaker: 'open',
      failures: 3,
    });
    expect(changes.map((health) => health.breaker)).toEqual(['open']);
    // Open: refused at once, without waiting for the deadline.
    const started = performance.now();
    await expect(guarded.getPayload('s', 'o')).rejects.toThrow(/circuit open after 3 failures/);
    expect(performance.now() - started).toBeLessThan(20);
  });

  it('lets one probe through once the open time has passed; its answer closes the breaker', async () => {
    const clock = testClock();
    let down = true;
    const { store, calls } = recordingStore(async () => {
      if (down) throw new StoreError('connection refused');
      return undefined;
    });
    const guarded = guardStore(store, { failures: 2, openMs: 500, now: clock.now });
    await expect(guarded.readSession('a')).rejects.toThrow(StoreError);
    expect(guarded.health()).toMatchObject({ status: 'down', breaker: 'closed', failures: 1 });
    await expect(guarded.readSession('a')).rejects.toThrow(StoreError);
    expect(guarded.health().breaker).toBe('open');
    const reached = calls.length;
    clock.advance(499);
    await expect(guarded.readSession('a')).rejects.toThrow(/circuit open/);
    expect(calls).toHaveLength(reached);

    // The probe fails: open again, for another full period.
    clock.advance(1);
    await expect(guarded.readSession('a')).rejects.toThrow(/connection refused/);
    expect(guarded.health().breaker).toBe('open');
    clock.advance(499);
    await expect(guarded.readSession('a')).rejects.toThrow(/circuit open/);

    down = false;
    clock.advance(1);
    expect(await guarded.readSession('a')).toBeUndefined();
    expect(guarded.health()).toMatchObject({ status: 'ok', breaker: 'closed', failures: 0 });
  });

  it('refuses other calls while the probe is in flight', async () => {
    const clock = testClock();
    let release: () => void = () => undefined;
    let mode: 'fail' | 'hold' = 'fail';
    const { store } = recordingStore(() =>
      mode === 'fail'
        ? Promise.reject(new StoreError('down'))
        : new Promise((resolve) => {
            release = () => resolve(undefined);
          }),
    );
    const guarded = guardStore(store, { failures: 1, openMs: 100, now: clock.now, timeoutMs: 5_000 });
    await expect(guarded.readSession('a')).rejects.toThrow(StoreError);
    mode = 'hold';
    clock.advance(100);
    const probe = guarded.readSession('a');
    expect(guarded.health().breaker).toBe('half-open');
    await expect(guarded.readSession('b')).rejects.toThrow(/circuit open/);
    release();
    await probe;
    expect(guarded.health().breaker).toBe('closed');
  });

  it('counts an answer that is not a store failure (bad input) as the store answering', async () => {
    const { store } = recordingStore(async () => {
      throw new BadInputError('query too long');
    });
    const guarded = guardStore(store, { failures: 1 });
    await expect(guarded.searchPayloads('s', 'q')).rejects.toThrow(BadInputError);
    expect(guarded.health()).toMatchObject({ status: 'ok', breaker: 'closed' });
  });

  it('gives maintenance calls their own, longer deadline', async () => {
    let finish: () => void = () => undefined;
    const { store } = recordingStore(
      () =>
        new Promise((resolve) => {
          finish = () => resolve([]);
        }),
    );
    const guarded = guardStore(store, { timeoutMs: 10, maintenanceTimeoutMs: 5_000 });
    const listing = guarded.listSessions();
    await new Promise((resolve) => setTimeout(resolve, 40));
    finish();
    expect(await listing).toEqual([]);
  });

  it('refuses options that are not positive integers', () => {
    expect(() => guardStore(createMemoryStore(), { timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => guardStore(createMemoryStore(), { failures: 1.5 })).toThrow(/failures/);
  });
});

describe('guardStore: a store opened on first use', () => {
  it('starts down when the store cannot be opened, and opens it when it can', async () => {
    let attempts = 0;
    const clock = testClock();
    const guarded = guardStore(
      {
        kind: 'postgres',
        open: async () => {
          attempts += 1;
          if (attempts === 1) throw new StoreError('postgres open failed: connect ECONNREFUSED');
          return createMemoryStore();
        },
      },
      { failures: 1, openMs: 50, now: clock.now },
    );
    expect(guarded.kind).toBe('postgres');
    expect(await guarded.probe()).toMatchObject({ kind: 'postgres', status: 'down', breaker: 'open' });
    expect(guarded.health().lastError).toContain('ECONNREFUSED');
    // Still open: the probe does not try again yet.
    expect(await guarded.probe()).toMatchObject({ status: 'down' });
    expect(attempts).toBe(1);
    clock.advance(50);
    expect(await guarded.probe()).toMatchObject({ status: 'ok', breaker: 'closed' });
    await guarded.writeState('s', { step: 1 }, 0);
    expect(await guarded.readSession('s')).toEqual({ version: 1, state: { step: 1 } });
    expect(attempts).toBe(2);
    await guarded.close();
  });

  it('counts an open that outlives the deadline as a failure, and keeps the open going', async () => {
    let resolveOpen: (store: SidecarStore) => void = () => undefined;
    let attempts = 0;
    const guarded = guardStore(
      {
        kind: 'redis',
        open: () => {
          attempts += 1;
          return new Promise((resolve) => {
            resolveOpen = resolve;
          });
        },
      },
      { timeoutMs: 10, failures: 5 },
    );
    await expect(guarded.readSession('s')).rejects.toThrow(/no answer within 10 ms/);
    await expect(guarded.readSession('s')).rejects.toThrow(/no answer within 10 ms/);
    expect(attempts).toBe(1);
    resolveOpen(createMemoryStore());
    expect(await guarded.readSession('s')).toBeUndefined();
    expect(guarded.health()).toMatchObject({ status: 'ok', failures: 0 });
  });

  it('throws from probe an open error no retry can fix', async () => {
    const guarded = guardStore({
      kind: 'redis',
      open: async () => {
        throw new BadInputError('this store needs the "ioredis" package');
      },
    });
    await expect(guarded.probe()).rejects.toThrow(BadInputError);
    expect(guarded.health().status).toBe('down');
  });

  it('closes a store whose open lands after close', async () => {
    let resolveOpen: (store: SidecarStore) => void = () => undefined;
    const inner = recordingStore(async () => undefined);
    const guarded = guardStore(
      {
        kind: 'redis',
        open: () =>
          new Promise((resolve) => {
            resolveOpen = resolve;
          }),
      },
      { timeoutMs: 10 },
    );
    await expect(guarded.readSession('s')).rejects.toThrow(StoreError);
    const closing = guarded.close();
    resolveOpen(inner.store);
    await closing;
    await expect(guarded.readSession('s')).rejects.toThrow(/after close/);
    expect(inner.calls.map((call) => call.operation)).toEqual(['close']);
  });

  it('reports a failing or hung store down, and refuses calls while open', async () => {
    const guarded = guardStore(failingStore(), { failures: 1 });
    await expect(guarded.readSession('s')).rejects.toThrow(/connection refused/);
    await expect(guarded.readSession('s')).rejects.toThrow(/circuit open/);
    const hung = guardStore(hungStore(), { failures: 1, timeoutMs: 10 });
    await expect(hung.readSession('s')).rejects.toThrow(/no answer/);
    expect((await hung.probe()).status).toBe('down');
  });
});
