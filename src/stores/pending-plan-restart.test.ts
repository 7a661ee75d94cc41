/**
 * A plan held pending lives in the session state, so it outlives the process that planned it: a
 * new governor on the reopened store commits it at the next run without asking the planner.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createGovernor } from '../core/governor/create-governor.js';
import { indexTranscript } from '../core/ledger.js';
import type { Planner } from '../core/planners/planner.js';
import { readSessionState } from '../core/session-state.js';
import type { SidecarStore } from '../core/store.js';
import { countingPlanner } from '../core/testing/counting-planner.js';
import { longSession } from '../core/testing/long-session.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { createMemoryStore } from './memory-store.js';
import { createSqliteStore } from './sqlite-store.js';

const directory = mkdtempSync(join(tmpdir(), 'selfgc-pending-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const session = longSession({ rounds: 34 });
const readsUpTo = (rounds: number) => session.slice(0, 2 + 2 * rounds);
const OLD_READS = ['function:read_file:2', 'function:read_file:3'];

/** A planner whose call the cost rule refuses to pay for at once, counting its calls. */
const dearPlanner = () => countingPlanner(OLD_READS, { inputTokens: 1_000_000, outputTokens: 0 });

function governorOn(store: SidecarStore, planner: Planner) {
  return createGovernor({
    provider: 'openai',
    window: 2 * indexTranscript(session, { tokenCounter: approximateTokenCounter }).totalTokens,
    store,
    planner,
    tokenCounter: approximateTokenCounter,
    now: () => 1_767_225_600_000,
    triggers: { milestones: false, minBatch: 0, deep: false },
  });
}

/** Plan and hold with one governor, then go on with a new one on `reopen()`'s store. */
async function holdThenRestart(open: () => SidecarStore, reopen: () => SidecarStore) {
  const before = open();
  const planning = dearPlanner();
  const first = await governorOn(before, planning.planner).project('s', readsUpTo(30), { force: true });
  expect(first.decision.pending).toEqual({ since: 62, status: 'held' });
  await before.close();

  const store = reopen();
  try {
    expect((await readSessionState(store, 's')).state.pending?.binding.end).toBe(62);
    const restarted = dearPlanner();
    const second = await governorOn(store, restarted.planner).project('s', readsUpTo(32), { force: true });
    expect(restarted.calls()).toBe(0);
    expect(second.commit?.pendingSince).toBe(62);
    expect(second.commit?.operations.map((operation) => operation.objectId)).toEqual(OLD_READS);
    expect((await store.listCommits('s')).map((commit) => commit.pendingSince)).toEqual([62]);
    expect((await readSessionState(store, 's')).state.pending).toBeUndefined();
  } finally {
    await store.close();
  }
}

describe('a pending plan across a restart', () => {
  it('survives reopening the SQLite file', async () => {
    const path = join(directory, 'pending.db');
    await holdThenRestart(
      () => createSqliteStore({ path }),
      () => createSqliteStore({ path }),
    );
  });

  it('survives a new governor on the same memory store', async () => {
    const store = createMemoryStore();
    // The memory store lives as long as its object: closing it here would end it.
    const kept: SidecarStore = { ...store, close: async () => {} };
    await holdThenRestart(
      () => kept,
      () => kept,
    );
  });
});
