/**
 * The LLM planner's real usage, as the scripted upstream reports it in each provider's wire
 * format, priced by the governor's commit rule: a prompt read from the cache costs its read
 * rate, so the same plan can commit where an uncached one is deferred — and a deferred plan is
 * held, so the next run does not call the model again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defaultPricing, plannerCallCost } from '../core/governor/cache-cost.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { indexTranscript } from '../core/ledger.js';
import { longSession } from '../core/testing/long-session.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { createMemoryStore } from '../stores/memory-store.js';
import type { ScriptedReply } from '../testing/scripted-reply.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { createLlmClient } from './llm-client.js';
import { createLlmPlanner } from './llm-planner.js';
import type { LlmProvider } from './llm-types.js';

let upstream: ScriptedUpstream | undefined;
afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

const session = longSession({ rounds: 34 });
const readsUpTo = (rounds: number) => session.slice(0, 2 + 2 * rounds);
const window = 2 * indexTranscript(session, { tokenCounter: approximateTokenCounter }).totalTokens;
// Reads near the end: the cache break after them is short enough to pay at Anthropic's write price.
const answer = {
  operations: [25, 26, 27, 28].map((index) => ({
    id: `function:read_file:${index}`,
    operation: 'fold',
    reason: 'read, not used since',
  })),
};

/** A planner answering `answer` with each usage in turn, through the real client and wire format. */
async function governorWith(provider: LlmProvider, usages: Array<NonNullable<ScriptedReply['usage']>>) {
  upstream = await startScriptedUpstream({ script: usages.map((usage) => ({ json: answer, usage })) });
  const client = createLlmClient({
    provider,
    baseUrl: provider === 'openai' ? `${upstream.url}/v1` : upstream.url,
    model: 'planner-test',
    maxRetries: 0,
  });
  return createGovernor({
    provider,
    window,
    store: createMemoryStore(),
    planner: createLlmPlanner({ client }),
    tokenCounter: approximateTokenCounter,
    now: () => 1_767_225_600_000,
    triggers: { milestones: false, minBatch: 0, deep: false },
  });
}

describe.each(['openai', 'anthropic'] as const)(
  'the LLM planner’s usage in the commit rule (%s)',
  (provider) => {
    it('prices cache reads at the read rate: the cached call commits where the uncached one is deferred', async () => {
      const pricing = defaultPricing(provider);
      // What the plan is worth beside its planner's call, measured with a call that cost nothing.
      const free = await (await governorWith(provider, [{ inputTokens: 0, outputTokens: 0 }])).project(
        'free',
        readsUpTo(30),
        { force: true },
      );
      const margin = free.decision.cache!.saving - free.decision.cache!.breakCost;
      expect(free.decision.outcome).toBe('committed');
      expect(margin).toBeGreaterThan(0);
      await upstream?.close();

      // A prompt that costs more than the margin uncached, and less read from the cache.
      const prompt = Math.ceil(1.5 * margin);
      const cached = {
        inputTokens: prompt,
        outputTokens: 40,
        cachedInputTokens: prompt - 100,
        cacheWriteInputTokens: 0,
      };
      const uncached = {
        inputTokens: prompt,
        outputTokens: 40,
        cachedInputTokens: 0,
        cacheWriteInputTokens: 0,
      };
      const gc = await governorWith(provider, [cached, uncached]);
      const fromCache = await gc.project('cached', readsUpTo(30), { force: true });
      const fresh = await gc.project('uncached', readsUpTo(30), { force: true });

      expect(fromCache.decision.cache?.gcCost).toBeCloseTo(plannerCallCost(cached, pricing));
      expect(fromCache.decision.cache?.gcCost).toBeCloseTo(
        100 + (prompt - 100) * pricing.cacheRead + 40 * pricing.output!,
      );
      expect(fresh.decision.cache?.gcCost).toBeCloseTo(prompt + 40 * pricing.output!);
      expect(fromCache.decision.outcome).toBe('committed');
      expect(fresh.decision.outcome).toBe('deferred');
    });

    it('holds the deferred plan: the next run commits it without calling the model again', async () => {
      const dear = {
        inputTokens: 5_000_000,
        outputTokens: 40,
        cachedInputTokens: 0,
        cacheWriteInputTokens: 0,
      };
      const gc = await governorWith(provider, [dear, dear]);
      const first = await gc.project('s', readsUpTo(30), { force: true });
      expect(first.decision).toMatchObject({ outcome: 'deferred', pending: { since: 62, status: 'held' } });
      const second = await gc.project('s', readsUpTo(32), { force: true });
      expect(upstream?.requests).toHaveLength(1);
      expect(second.decision).toMatchObject({
        outcome: 'committed',
        pending: { since: 62, status: 'committed' },
      });
      expect(second.commit?.pendingSince).toBe(62);
      expect(second.commit?.planner).toBe('llm');
    });
  },
);
