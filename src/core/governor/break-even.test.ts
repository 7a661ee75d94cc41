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
import type { GovernorOptions } from './governor-types.js';

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

/**
 * A governor whose cache writes are so dear that no commit pays while the cache is warm (unless
 * `options` say otherwise), and its planner's calls.
 */
function setup(
  options: Partial<GovernorOptions> = {},
  counting = countingPlanner(OLD_READS),
  store = createMemoryStore(),
) {
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
    ...options,
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
    const { counting, governor } = setup();
    await governor.project('s', readsUpTo(30));
    const edited = readsUpTo(32).map((message, index) =>
      index === 1 ? userMessage('Review only the handlers that changed.') : message,
    );
    const after = await governor.project('s', edited);
    expect(after.divergence).toBeDefined();
    expect(after.decision.outcome).not.toBe('below-break-even');
    expect(counting.calls()).toBe(2);
  });

  it('keeps the stored cache clock within half a TTL while it skips', async () => {
    const { store, clock, governor } = setup();
    await governor.project('s', readsUpTo(30));
    const ran = await readSessionState(store, 's');
    clock.now += TTL_MS / 4;
    expect((await governor.project('s', readsUpTo(32))).decision.outcome).toBe('below-break-even');
    // Within half a TTL of the stored time: nothing written.
    expect((await readSessionState(store, 's')).version).toBe(ran.version);
    clock.now += TTL_MS / 2;
    expect((await governor.project('s', readsUpTo(34))).decision.outcome).toBe('below-break-even');
    const kept = await readSessionState(store, 's');
    expect(kept.state.triggers).toEqual({ ...ran.state.triggers, lastCallTime: clock.now });
    // Another governor on the store (another instance) takes the cache as warm, and skips too.
    const other = setup({}, countingPlanner(OLD_READS), store);
    other.clock.now = clock.now + TTL_MS / 2;
    expect((await other.governor.project('s', readsUpTo(36))).decision.outcome).toBe('below-break-even');
  });

  it('lets the next run weigh a plan held pending', async () => {
    // Default prices: the planner's call is what the plan could not pay for at once.
    const counting = countingPlanner(OLD_READS, { inputTokens: 1_000_000, outputTokens: 100 });
    const { store, governor } = setup({ cache: 'aware' }, counting);
    const first = await governor.project('s', readsUpTo(30));
    expect(first.decision).toMatchObject({ outcome: 'deferred', pending: { status: 'held' } });
    expect((await readSessionState(store, 's')).state.triggers.deferral).toBeDefined();
    // The next pressure run takes the held plan up (here the rule defers it again, and the
    // planner plans afresh) instead of skipping on a shortfall that counted the planner's call.
    const second = await governor.project('s', readsUpTo(32));
    expect(second.decision.trigger).toBe('pressure');
    expect(second.decision.outcome).not.toBe('below-break-even');
    expect(second.warnings.map((warning) => warning.code)).toContain('pending-plan-dropped');
    expect(counting.calls()).toBe(2);
  });

  it('records nothing for a run that frees nothing, or under the paper rule', async () => {
    const { store, governor } = setup();
    await governor.project('s', readsUpTo(30));
    expect((await readSessionState(store, 's')).state.triggers.deferral).toBeDefined();
    // Another planner on the same session, whose plan frees nothing: the run leaves no deferral.
    const idle = setup({}, countingPlanner([]), store);
    const nothing = await idle.governor.project('s', readsUpTo(32), { force: true });
    expect(nothing.decision.outcome).toBe('nothing-to-free');
    expect((await readSessionState(store, 's')).state.triggers.deferral).toBeUndefined();

    const paper = setup({ commitPolicy: 'paper' });
    expect((await paper.governor.project('s', readsUpTo(30))).decision.outcome).toBe('deferred');
    expect((await readSessionState(paper.store, 's')).state.triggers.deferral).toBeUndefined();
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
