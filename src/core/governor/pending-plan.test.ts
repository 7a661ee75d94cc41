import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../stores/memory-store.js';
import { createPinRule } from '../governor/pins.js';
import { indexTranscript } from '../ledger.js';
import type { Planner, PlannerCost } from '../planners/planner.js';
import { bindingAt } from '../reconcile-state.js';
import { readSessionState } from '../session-state.js';
import type { SidecarStore } from '../store.js';
import { countingPlanner } from '../testing/counting-planner.js';
import { longSession } from '../testing/long-session.js';
import { userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter } from '../tokens.js';
import type { Message } from '../transcript.js';
import { createGovernor } from './create-governor.js';
import type { GovernorOptions } from './governor-types.js';
import { revalidatePendingPlan } from './pending-plan.js';

const NOW = 1_767_225_600_000;
const session = longSession({ rounds: 40 });
/** The transcript after `rounds` file reads, the latest one's output just in. */
const readsUpTo = (rounds: number): Message[] => session.slice(0, 2 + 2 * rounds);
const window = 2 * indexTranscript(session, { tokenCounter: approximateTokenCounter }).totalTokens;

/** A planner call the cost rule refuses to pay for at once. */
const DEAR: PlannerCost = { inputTokens: 1_000_000, outputTokens: 100 };
const OLD_READS = ['function:read_file:2', 'function:read_file:3', 'function:read_file:4'];

function governor(store: SidecarStore, planner: Planner, options: Partial<GovernorOptions> = {}) {
  return createGovernor({
    provider: 'openai',
    window,
    store,
    planner,
    tokenCounter: approximateTokenCounter,
    now: () => NOW,
    // One planner's plan, measured alone: no deep reduction, no batching, no milestones.
    triggers: { milestones: false, minBatch: 0, deep: false },
    ...options,
  });
}

const codes = (warnings: ReadonlyArray<{ code: string }>) => warnings.map((warning) => warning.code);

describe('pending plans under the cost model', () => {
  it('holds a deferred plan that cost a model call, and commits it at the next run without planning again', async () => {
    const store = createMemoryStore();
    const counting = countingPlanner(OLD_READS, DEAR);
    const gc = governor(store, counting.planner);

    const first = await gc.project('s', readsUpTo(30), { force: true });
    expect(first.decision).toMatchObject({ outcome: 'deferred', pending: { since: 62, status: 'held' } });
    expect(first.decision.cache?.gcCost).toBe(1_000_000 + 100 * 4);
    expect(first.commits).toEqual([]);
    const { state } = await readSessionState(store, 's');
    expect(state.pending?.plan.operations.map((operation) => operation.objectId)).toEqual(OLD_READS);
    expect(state.pending?.binding.end).toBe(62);

    const second = await gc.project('s', readsUpTo(32), { force: true });
    expect(counting.calls()).toBe(1);
    expect(second.decision).toMatchObject({
      outcome: 'committed',
      pending: { since: 62, status: 'committed' },
    });
    expect(second.decision.cache?.gcCost).toBe(0);
    expect(second.commit?.pendingSince).toBe(62);
    expect(second.commit?.planner).toBe('llm');
    expect(second.commit?.operations.map((operation) => operation.objectId)).toEqual(OLD_READS);
    expect((await store.listCommits('s'))[0]?.pendingSince).toBe(62);
    expect((await readSessionState(store, 's')).state.pending).toBeUndefined();

    // Nothing is held any more: the next run plans.
    await gc.project('s', readsUpTo(34), { force: true });
    expect(counting.calls()).toBe(2);
  });

  it('holds nothing for a planner that cost nothing: the embedded planner plans again on the longer transcript', async () => {
    const store = createMemoryStore();
    const counting = countingPlanner(OLD_READS);
    // A cache write so dear that no commit pays.
    const gc = governor(store, counting.planner, {
      cache: { input: 1, cacheWrite: 1_000, cacheRead: 0.1, ttlMs: 60_000 },
    });
    const first = await gc.project('s', readsUpTo(30), { force: true });
    expect(first.decision.outcome).toBe('deferred');
    expect(first.decision.pending).toBeUndefined();
    expect((await readSessionState(store, 's')).state.pending).toBeUndefined();
    const second = await gc.project('s', readsUpTo(32), { force: true });
    expect(second.decision.outcome).toBe('deferred');
    expect(counting.calls()).toBe(2);
  });

  it('drops a held plan the commit rule defers again, and plans afresh in the same run', async () => {
    const store = createMemoryStore();
    const counting = countingPlanner(OLD_READS, DEAR);
    const gc = governor(store, counting.planner, {
      cache: { input: 1, cacheWrite: 1_000, cacheRead: 0.1, ttlMs: 60_000 },
    });
    await gc.project('s', readsUpTo(30), { force: true });
    const second = await gc.project('s', readsUpTo(32), { force: true });
    expect(counting.calls()).toBe(2);
    expect(second.warnings).toContainEqual({
      code: 'pending-plan-dropped',
      message:
        'the plan held since message 62 was dropped: the commit rule deferred it again; planned afresh',
    });
    // The fresh plan is held in its place.
    expect(second.decision).toMatchObject({ outcome: 'deferred', pending: { since: 66, status: 'held' } });
    expect((await readSessionState(store, 's')).state.pending?.binding.end).toBe(66);
  });

  it('drops a held plan whose transcript changed, and plans afresh', async () => {
    const store = createMemoryStore();
    const counting = countingPlanner(OLD_READS, DEAR);
    const gc = governor(store, counting.planner);
    await gc.project('s', readsUpTo(30), { force: true });
    const edited = readsUpTo(32).map((message, index) =>
      index === 1 ? userMessage('Review only the handlers that changed.') : message,
    );
    const second = await gc.project('s', edited, { force: true });
    expect(counting.calls()).toBe(2);
    expect(second.warnings.find((warning) => warning.code === 'pending-plan-dropped')?.message).toBe(
      'the plan held since message 62 was dropped: the transcript it was planned on (62 messages) changed; planned afresh',
    );
    expect(second.commit?.pendingSince).toBeUndefined();
  });

  it('drops the operations that no longer apply and commits the rest', async () => {
    const store = createMemoryStore();
    const counting = countingPlanner(OLD_READS, DEAR);
    const gc = governor(store, counting.planner);
    await gc.project('s', readsUpTo(30), { force: true });
    // The agent folds one of them itself before the next run.
    const agent = await gc.applyAgentPlan('s', readsUpTo(31), {
      planner: 'agent',
      operations: [{ objectId: 'function:read_file:3', operation: 'fold', reason: 'done with it' }],
    });
    expect(agent.commit).toBeDefined();
    const second = await gc.project('s', readsUpTo(32), { force: true });
    expect(counting.calls()).toBe(1);
    expect(codes(second.warnings)).toContain('pending-operations-dropped');
    expect(second.warnings.find((warning) => warning.code === 'pending-operations-dropped')?.message).toBe(
      '1 operation(s) of the plan held since message 62 no longer apply: function:read_file:3 (no-op)',
    );
    expect(second.commit?.operations.map((operation) => operation.objectId)).toEqual([
      'function:read_file:2',
      'function:read_file:4',
    ]);
    expect(second.commit?.pendingSince).toBe(62);
  });
});

describe('the paper commit policy', () => {
  it('commits at once a plan that frees at least 0.3 of the view', async () => {
    const store = createMemoryStore();
    const reads = Array.from({ length: 20 }, (_, index) => `function:read_file:${index + 2}`);
    const counting = countingPlanner(reads, DEAR);
    const result = await governor(store, counting.planner, { commitPolicy: 'paper' }).project(
      's',
      readsUpTo(30),
      {
        force: true,
      },
    );
    expect(result.viewTokens / result.commit!.tokensBefore).toBeLessThanOrEqual(0.7);
    expect(result.decision.outcome).toBe('committed');
    expect(result.decision.pending).toBeUndefined();
    expect(result.commit?.pendingSince).toBeUndefined();
  });

  it('holds a smaller plan, the embedded planner’s too, and commits it at the next run', async () => {
    const store = createMemoryStore();
    const counting = countingPlanner(OLD_READS);
    const gc = governor(store, counting.planner, { commitPolicy: 'paper' });
    const first = await gc.project('s', readsUpTo(30), { force: true });
    expect(first.decision).toMatchObject({ outcome: 'deferred', pending: { since: 62, status: 'held' } });
    const second = await gc.project('s', readsUpTo(32), { force: true });
    expect(counting.calls()).toBe(1);
    expect(second.commit?.pendingSince).toBe(62);
    expect(second.decision.pending).toEqual({ since: 62, status: 'committed' });
  });

  it('leaves the default, cost, policy as it was: the same plan commits at once there', async () => {
    const store = createMemoryStore();
    const counting = countingPlanner(OLD_READS);
    const result = await governor(store, counting.planner).project('s', readsUpTo(30), { force: true });
    expect(result.decision.outcome).toBe('committed');
  });
});

describe('revalidatePendingPlan', () => {
  const ledger = indexTranscript(readsUpTo(30), {
    tokenCounter: approximateTokenCounter,
    pin: createPinRule(),
  });
  const operation = (objectId: string) => ({ objectId, operation: 'fold' as const, reason: 'old' });

  it('keeps what still applies, under its planner', () => {
    const pending = {
      plan: { planner: 'llm', operations: [operation('function:read_file:2')] },
      binding: bindingAt(ledger, 62),
    };
    expect(revalidatePendingPlan(ledger, {}, pending, {})).toEqual({
      status: 'valid',
      plan: pending.plan,
      dropped: [],
    });
  });

  it('drops a plan none of whose operations applies, and says why', () => {
    const pending = {
      plan: {
        planner: 'llm',
        operations: [operation('function:read_file:99'), operation('function:read_file:30')],
      },
      binding: bindingAt(ledger, 62),
    };
    expect(revalidatePendingPlan(ledger, {}, pending, {})).toEqual({
      status: 'dropped',
      reason:
        'none of its operations applies any more (function:read_file:99 (unknown-object), function:read_file:30 (latest-turn))',
    });
  });

  it('drops a plan made for a transcript that is not this one', () => {
    const pending = {
      plan: { planner: 'llm', operations: [operation('function:read_file:2')] },
      binding: { end: 62, link: 'other' },
    };
    expect(revalidatePendingPlan(ledger, {}, pending, {})).toMatchObject({ status: 'dropped' });
    const longer = { ...pending, binding: { end: 80, link: ledger.chain[61]! } };
    expect(revalidatePendingPlan(ledger, {}, longer, {})).toMatchObject({ status: 'dropped' });
  });
});
