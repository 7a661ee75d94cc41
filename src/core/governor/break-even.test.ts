import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../stores/memory-store.js';
import { indexTranscript } from '../ledger.js';
import { parseSessionState, readSessionState } from '../session-state.js';
import { countingPlanner } from '../testing/counting-planner.js';
import { longSession } from '../testing/long-session.js';
import { userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter } from '../tokens.js';
import type { Message } from '../transcript.js';
import { breakEvenGrowth } from './commit-policy.js';
import { createGovernor } from './create-governor.js';

const NOW = 1_767_225_600_000;
const TTL_MS = 60_000;
const session = longSession({ rounds: 40 });
/** The transcript after `rounds` file reads, the latest one's output just in. */
const readsUpTo = (rounds: number): Message[] => session.slice(0, 2 + 2 * rounds);
const tokensAt = (rounds: number) =>
  indexTranscript(readsUpTo(rounds), { tokenCounter: approximateTokenCounter }).totalTokens;
/** Reads 30 to 36 are under soft pressure (0.7 of the window) and within the window. */
const window = Math.ceil(tokensAt(36) * 1.05);
const OLD_READS = ['function:read_file:2', 'function:read_file:3', 'function:read_file:4'];

/** A governor whose cache writes are so dear that no commit pays while the cache is warm. */
function setup() {
  const store = createMemoryStore();
  const counting = countingPlanner(OLD_READS);
  const clock = { now: NOW };
  const governor = createGovernor({
    provider: 'openai',
    window,
    store,
    planner: counting.planner,
    tokenCounter: approximateTokenCounter,
    now: () => clock.now,
    cache: { input: 1, cacheWrite: 1_000, cacheRead: 0.1, ttlMs: TTL_MS },
    triggers: { milestones: false, minBatch: 0, deep: false },
  });
  return { store, counting, clock, governor };
}

describe('soft pressure under a warm cache waits for the growth a deferred plan lacked', () => {
  it('records what the deferred plan lacked, and skips pressure until the view has grown by it', async () => {
    expect(tokensAt(30)).toBeGreaterThan(0.7 * window);
    const { store, counting, governor } = setup();
    const first = await governor.project('s', readsUpTo(30));
    expect(first.decision).toMatchObject({ trigger: 'pressure', outcome: 'deferred' });
    const { state } = await readSessionState(store, 's');
    const deferral = state.triggers.deferral;
    expect(deferral).toBeDefined();
    // The plan could not touch the latest turn; it lacked more than the window holds.
    expect(deferral!.reach).toBeLessThan(first.viewTokens);
    expect(deferral!.shortfall).toBeGreaterThan(window);
    // The bookkeeping survives the store's schema.
    expect(parseSessionState(JSON.parse(JSON.stringify(state)), 'test').triggers.deferral).toEqual(deferral);

    const second = await governor.project('s', readsUpTo(32));
    expect(second.decision).toEqual({ trigger: 'pressure', outcome: 'below-break-even' });
    expect(counting.calls()).toBe(1);
    // A skipped run is no run: the cooldown and the breaker count from the one before.
    expect((await readSessionState(store, 's')).state.triggers).toEqual(state.triggers);
  });

  it('runs under a cold cache, and a commit clears what was weighed on the view it changed', async () => {
    const { store, counting, clock, governor } = setup();
    await governor.project('s', readsUpTo(30));
    clock.now += 2 * TTL_MS;
    const cold = await governor.project('s', readsUpTo(32));
    expect(counting.calls()).toBe(2);
    expect(cold.decision).toMatchObject({ trigger: 'pressure', outcome: 'committed' });
    expect((await readSessionState(store, 's')).state.triggers.deferral).toBeUndefined();
  });

  it('forgets a deferral once the agent commits a plan of its own', async () => {
    const { store, governor } = setup();
    await governor.project('s', readsUpTo(30));
    expect((await readSessionState(store, 's')).state.triggers.deferral).toBeDefined();
    const applied = await governor.applyAgentPlan('s', readsUpTo(30), {
      planner: 'agent',
      operations: [{ objectId: 'function:read_file:5', operation: 'fold', reason: 'done with it' }],
    });
    expect(applied.commit).toBeDefined();
    expect((await readSessionState(store, 's')).state.triggers.deferral).toBeUndefined();
  });

  it('forgets a deferral when the transcript diverges', async () => {
    const { governor } = setup();
    await governor.project('s', readsUpTo(30));
    const edited = readsUpTo(32).map((message, index) =>
      index === 1 ? userMessage('Review only the handlers that changed.') : message,
    );
    const after = await governor.project('s', edited);
    expect(after.divergence).toBeDefined();
    expect(after.decision.outcome).not.toBe('below-break-even');
  });
});

describe('breakEvenGrowth', () => {
  it('is the saving lacked at the saving per token, or what the batch lacked', () => {
    // 100 tokens freed saved 50; the break cost 200 and the planner 50: 200 more saving, 400 tokens.
    expect(breakEvenGrowth({ saving: 50, breakCost: 200, gcCost: 50 }, 100, 0)).toBe(400);
    expect(breakEvenGrowth({ saving: 50, breakCost: 200, gcCost: 50 }, 100, 600)).toBe(500);
    // A plan that paid lacks nothing but the batch; one that freed nothing lacks only the batch.
    expect(breakEvenGrowth({ saving: 300, breakCost: 200, gcCost: 0 }, 100, 0)).toBe(0);
    expect(breakEvenGrowth({ saving: 0, breakCost: 200, gcCost: 0 }, 0, 80)).toBe(80);
  });
});
