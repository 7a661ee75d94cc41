import { afterEach, describe, expect, it } from 'vitest';
import { BadInputError, StoreError } from '../core/errors.js';
import type { SidecarStore } from '../core/store.js';
import { createMemoryStore } from '../stores/memory-store.js';
import { commitRecord, payloadRecord } from '../stores/store-fixtures.case.js';
import { type RetentionSweeper, startRetentionSweeper } from './retention-sweeper.js';
import { until } from './testing/until.js';

let sweeper: RetentionSweeper | undefined;
afterEach(async () => {
  await sweeper?.stop();
  sweeper = undefined;
});

async function writeSession(store: SidecarStore, sessionId: string): Promise<void> {
  await store.putPayloads([payloadRecord(sessionId, 'function:bash:1', { payload: 'AWS_SECRET=abc' })]);
  await store.writeCommit(sessionId, commitRecord(sessionId, 'commit-1', 1), { step: 1 }, 0);
}

describe('startRetentionSweeper', () => {
  it('removes sessions idle longer than the retention on its own, a bounded number per sweep', async () => {
    const store = createMemoryStore();
    for (const name of ['a', 'b', 'c']) await writeSession(store, name);
    await new Promise((resolve) => setTimeout(resolve, 30));
    await writeSession(store, 'recent');
    const sweeps: string[][] = [];
    sweeper = startRetentionSweeper({
      store,
      retainMs: 20,
      intervalMs: 5,
      limit: 2,
      // Frozen just after the recent write: only the three old sessions are idle long enough.
      now: (() => {
        const frozen = Date.now();
        return () => frozen;
      })(),
      onSweep: (outcome) => {
        if ('removed' in outcome) sweeps.push(outcome.removed);
      },
    });
    await until(() => sweeps.flat().length === 3);
    expect(sweeps[0]).toHaveLength(2);
    expect(sweeps.flat().sort()).toEqual(['a', 'b', 'c']);
    expect((await store.listSessions()).map((summary) => summary.sessionId)).toEqual(['recent']);
    expect(await store.getPayload('a', 'function:bash:1')).toBeUndefined();
  });

  it('reports a failed sweep and tries again at the next one', async () => {
    const store = createMemoryStore();
    let calls = 0;
    const failing: SidecarStore = {
      ...store,
      expireBefore: async (cutoff, options) => {
        calls += 1;
        if (calls === 1) throw new StoreError('postgres expireBefore: connect ECONNREFUSED 10.0.0.1:5432');
        return store.expireBefore(cutoff, options);
      },
    };
    await writeSession(store, 'old');
    const outcomes: string[] = [];
    sweeper = startRetentionSweeper({
      store: failing,
      retainMs: 1,
      intervalMs: 5,
      now: () => Date.now() + 1000,
      onSweep: (outcome) => outcomes.push('error' in outcome ? outcome.error.code : outcome.removed.join()),
    });
    await until(() => outcomes.length >= 2);
    expect(outcomes.slice(0, 2)).toEqual(['store-failure', 'old']);
  });

  it('refuses a retention or interval that is not a positive number of milliseconds', () => {
    const store = createMemoryStore();
    expect(() => startRetentionSweeper({ store, retainMs: 0 })).toThrow(BadInputError);
    expect(() => startRetentionSweeper({ store, retainMs: Number.NaN })).toThrow(BadInputError);
    expect(() => startRetentionSweeper({ store, retainMs: 1000, intervalMs: -1 })).toThrow(BadInputError);
  });
});
