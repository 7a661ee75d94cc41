import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../stores/memory-store.js';
import { countMessageTokens, indexTranscript } from '../ledger.js';
import { isSpanFold } from '../operations.js';
import { createEmbeddedPlanner } from '../planners/embedded-planner.js';
import type { Planner } from '../planners/planner.js';
import { projectView } from '../project-view.js';
import { readSessionState } from '../session-state.js';
import type { SidecarStore } from '../store.js';
import { longSession, moduleSource } from '../testing/long-session.js';
import { assistantMessage, systemMessage, toolRound, userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter, MESSAGE_OVERHEAD_TOKENS } from '../tokens.js';
import type { Message } from '../transcript.js';
import { DEEP_REDUCTION } from '../tuning.js';
import { createGovernor } from './create-governor.js';
import type { GovernorOptions } from './governor-types.js';

const NOW = 1_767_225_600_000;

function transcriptTokens(messages: readonly Message[]): number {
  return indexTranscript(messages, { tokenCounter: approximateTokenCounter }).totalTokens;
}

/** The embedded planner with its tuning spelled out, so that retuning its defaults keeps these tests' meaning. */
const planner = createEmbeddedPlanner({
  keepRecentOutputs: 3,
  recentUseSteps: 4,
  idleFoldSteps: 8,
  idleWithBudget: true,
  minFoldShare: 0,
});

/** A planner that only folds outputs (never spans of work): with tiny outputs it has nothing to free. */
const outputsOnly = createEmbeddedPlanner({
  keepRecentOutputs: 3,
  recentUseSteps: 4,
  idleFoldSteps: 8,
  spanFolds: false,
  minFoldShare: 0,
});

function governor(store: SidecarStore, window: number, options: Partial<GovernorOptions> = {}) {
  return createGovernor({
    provider: 'openai',
    window,
    store,
    planner,
    tokenCounter: approximateTokenCounter,
    now: () => NOW,
    // Each test commits what its rule allows, however small: batching is tested on its own.
    triggers: { milestones: false, minBatch: 0 },
    ...options,
  });
}

/** The planner's own commit, without the deep reduction that may follow it. */
const PLANNER_ONLY = { triggers: { milestones: false, minBatch: 0, deep: false } } as const;

/** Every fold or mask marker of a view, by object id. */
function removedIds(view: readonly Message[]): string[] {
  const ids: string[] = [];
  for (const message of view) {
    for (const part of message.parts) {
      const content = part.type === 'tool-result' && typeof part.content === 'string' ? part.content : '';
      const match =
        /^\[(?:folded|pruned) ([^:\]]+:[^:\]]+:\d+)/.exec(content) ?? /masked \(([^,]+),/.exec(content);
      if (match?.[1]) ids.push(match[1]);
    }
  }
  return ids;
}

describe('createGovernor: pressure', () => {
  it('does nothing below the threshold', async () => {
    const store = createMemoryStore();
    const messages = longSession({ rounds: 30 });
    const total = transcriptTokens(messages);
    const result = await governor(store, total * 2).project('s', messages);
    expect(result.decision).toEqual({ trigger: 'none', outcome: 'below-threshold' });
    expect(result.view).toEqual(messages);
    expect(result.viewTokens).toBe(total);
    expect(result.transcriptTokens).toBe(total);
    expect(result.commit).toBeUndefined();
    expect(result.warnings).toEqual([]);
    expect(await store.listCommits('s')).toEqual([]);
  });

  it('commits over soft pressure and the view shrinks', async () => {
    const store = createMemoryStore();
    const messages = longSession({ rounds: 30 });
    const total = transcriptTokens(messages);
    const window = Math.ceil(total / 0.8);
    const result = await governor(store, window, PLANNER_ONLY).project('s', messages);
    expect(result.decision.trigger).toBe('pressure');
    expect(result.decision.outcome).toBe('committed');
    expect(result.commit).toBeDefined();
    expect(result.commit?.planner).toBe('embedded');
    expect(result.commit?.trigger).toBe('pressure');
    expect(result.commit?.tokensBefore).toBe(total);
    expect(result.commit?.tokensAfter).toBe(result.viewTokens);
    expect(result.viewTokens).toBeLessThan(total);
    expect(result.viewTokens).toBeLessThanOrEqual(window * 0.7);
    expect(result.transcriptTokens).toBe(total);
    expect(removedIds(result.view).length).toBeGreaterThan(0);
    // The latest outputs stay whole.
    expect(result.view.at(-2)).toEqual(messages.at(-2));
    expect(await store.listCommits('s')).toEqual([result.commit]);
    const state = await readSessionState(store, 's');
    expect(Object.keys(state.state.objects).sort()).toEqual(
      result.commit?.operations.map((entry) => entry.objectId).sort(),
    );
  });

  it('keeps the latest turn and the pins', async () => {
    const store = createMemoryStore();
    const messages = longSession({ rounds: 30 });
    const result = await governor(store, Math.ceil(transcriptTokens(messages) / 0.8)).project('s', messages);
    expect(result.view.slice(0, 2)).toEqual(messages.slice(0, 2));
    expect(result.view.at(-1)).toBe(messages.at(-1));
  });

  it('keeps the outputs a compaction prompt follows as the tools wrote them', async () => {
    const store = createMemoryStore();
    // A client compacting its own history (Codex, Claude Code) asks for a summary right after
    // the latest tool result, before the model has seen it.
    const messages = [
      ...longSession({ rounds: 30 }).slice(0, -1),
      userMessage('Summarize the conversation so far for another model that will resume the task.'),
    ];
    const window = Math.floor(transcriptTokens(messages) / 4);
    const result = await governor(store, window, { planner: outputsOnly }).project('s', messages);
    expect(result.commit).toBeDefined();
    expect(result.viewTokens).toBeLessThanOrEqual(window);
    expect(result.view.slice(-3)).toEqual(messages.slice(-3));
  });

  it('brings a view far over the window under it with the fallback reduction, in one commit', async () => {
    const store = createMemoryStore();
    const messages = longSession({ rounds: 30 });
    const total = transcriptTokens(messages);
    const window = Math.floor(total / 4);
    const result = await governor(store, window, { planner: outputsOnly }).project('s', messages);
    expect(result.decision.trigger).toBe('overflow');
    expect(result.viewTokens).toBeLessThanOrEqual(window);
    expect(result.decision.outcome).toBe('fallback');
    expect(result.commit?.planner).toBe('embedded+fallback');
    expect(result.commit?.trigger).toBe('overflow');
    expect(result.warnings.map((warning) => warning.code)).toEqual(['fallback-reduction']);
    expect(result.warnings[0]?.message).toContain('the embedded planner left');
    // One cache break, not two: the planner's folds and the fallback commit together.
    const commits = await store.listCommits('s');
    expect(commits.map((commit) => commit.planner)).toEqual(['embedded+fallback']);
    expect(commits.map((commit) => commit.sequence)).toEqual([1]);
    expect(result.view.slice(0, 2)).toEqual(messages.slice(0, 2));
  });

  it('folds the outputs of a latest turn that alone is bigger than the window, recoverably', async () => {
    const store = createMemoryStore();
    const huge = moduleSource(999, 400);
    const messages = [
      ...longSession({ rounds: 10 }),
      ...toolRound('last', 'read_file', { path: 'huge.log' }, huge),
    ];
    const latestTurn = transcriptTokens(messages.slice(-2));
    const window = Math.floor(latestTurn / 2);
    const gc = governor(store, window);
    const result = await gc.project('s', messages);
    expect(result.viewTokens).toBeLessThanOrEqual(window);
    expect(result.warnings.map((warning) => warning.code)).toContain('latest-turn-folded');
    expect(result.warnings.map((warning) => warning.code)).not.toContain('over-window');
    const folded = result.commit?.operations.map((entry) => entry.objectId) ?? [];
    expect(folded).toContain('function:read_file:11');
    // The call stays; its output is a fold summary the agent can expand byte-exact.
    // Two commits in this call: the planner's (with its fallback), then the latest turn's folds.
    expect(result.commits.map((entry) => entry.planner)).toEqual(['embedded+fallback', 'fallback']);
    expect(result.commits.at(-1)).toBe(result.commit);
    expect(result.view.at(-2)).toEqual(messages.at(-2));
    expect(JSON.stringify(result.view.at(-1))).toContain('expand(\\"function:read_file:11\\")');
    expect(await gc.expand('s', 'function:read_file:11')).toBe(huge);
  });

  it('shares its bound on one index among the indexes of folded work when pinned requests keep them all', async () => {
    // Six requests that state a rule (pinned: they stay, and so do the indexes of their work).
    const messages: Message[] = [userMessage('Review every handler module under src/handlers.')];
    for (let batch = 0; batch < 6; batch += 1) {
      messages.push(userMessage(`Batch ${batch + 1}: always report the line of each problem.`));
      for (let round = 1; round <= 4; round += 1) {
        const index = batch * 4 + round;
        messages.push(
          ...toolRound(
            `call_${index}`,
            'read_file',
            { path: `src/handlers/module_${index}.py` },
            moduleSource(index, 20),
          ),
        );
      }
    }
    messages.push(assistantMessage('Reviewed all modules.'));
    const window = Math.floor(transcriptTokens(messages) * 0.3);
    const result = await governor(createMemoryStore(), window).project('s', messages);
    expect(result.viewTokens).toBeLessThanOrEqual(window);
    expect(result.warnings.map((warning) => warning.code)).not.toContain('over-window');
    const folds =
      result.commit?.operations.filter((entry) => entry.objectId.startsWith('conversation:')) ?? [];
    expect(folds).toHaveLength(6);
    // The six share the window evenly (no model): none takes more than a sixth of it, with its
    // header and pointer, though one index alone may take a third.
    for (const fold of folds) expect(fold.tokensAfter).toBeLessThanOrEqual(window / 6 + 60);
  });

  it('shrinks the indexes of earlier folded work before it prunes a request with its index', async () => {
    // Instructions that take half the window, as a coding agent's do, then three requests each
    // followed by many reads, governed call by call: the work of each folds while it is current.
    const instructions = systemMessage(`You are a coding agent. ${moduleSource(500, 80)}`);
    const window = Math.floor(transcriptTokens([instructions]) * 2);
    const gc = governor(createMemoryStore(), window, { planner: createEmbeddedPlanner() });
    const messages: Message[] = [instructions];
    const pruned = new Set<string>();
    let call = 0;
    for (let request = 1; request <= 3; request += 1) {
      messages.push(userMessage(`Request ${request}: review the next handler modules.`));
      for (let round = 0; round < 12; round += 1) {
        call += 1;
        messages.push(
          ...toolRound(
            `call_${call}`,
            'read_file',
            { path: `src/handlers/module_${call}.py` },
            moduleSource(call, 30),
          ),
        );
        const result = await gc.project('s', [...messages, assistantMessage('Reading on.')]);
        expect(result.viewTokens).toBeLessThanOrEqual(window);
        for (const commit of result.commits)
          for (const entry of commit.operations) if (entry.operation === 'prune') pruned.add(entry.objectId);
      }
    }
    expect([...pruned].filter((id) => id.startsWith('conversation:'))).toEqual([]);
  });

  it('shrinks the index of the folded work when a long latest step leaves no room for it', async () => {
    const base = longSession({ rounds: 20 }).slice(0, -1);
    const thought = assistantMessage(`Plan: ${moduleSource(77, 60)}`);
    const messages = [...base, thought];
    const window = transcriptTokens([...base.slice(0, 2), thought]) + 300;
    const result = await governor(createMemoryStore(), window).project('s', messages);
    expect(result.viewTokens).toBeLessThanOrEqual(window);
    expect(result.warnings.map((warning) => warning.code)).not.toContain('over-window');
    // The work before the latest step is one span fold, with what index the window leaves room for.
    expect(result.view.at(-1)).toEqual(thought);
    expect(JSON.stringify(result.view)).toContain('expand(\\"conversation:user:1@');
  });

  it('keeps the latest tool result whole while the indexes of older work can shrink to their headers', async () => {
    const pinned = [
      systemMessage(`You are a coding agent. ${moduleSource(500, 20)}`),
      userMessage('Review the handlers.'),
    ];
    const latest = toolRound('last', 'read_file', { path: 'src/last.py' }, moduleSource(999, 30));
    const messages = [...pinned, ...longSession({ rounds: 12, lines: 8 }).slice(2, -1), ...latest];
    // Room for the pins, the latest turn and the header of one fold of the work between them.
    const window = transcriptTokens([...pinned, ...latest]) + 60;
    const result = await governor(createMemoryStore(), window).project('s', messages);
    expect(result.viewTokens).toBeLessThanOrEqual(window);
    expect(result.warnings.map((warning) => warning.code)).toEqual(['fallback-reduction']);
    expect(result.view.slice(-2)).toEqual(latest);
    expect(JSON.stringify(result.view)).toContain('expand(\\"conversation:user:1@');
  });

  it('folds the latest turn only when it does not fit beside what no reduction removes', async () => {
    const pinned = [
      systemMessage(`You are a coding agent. ${moduleSource(500, 20)}`),
      userMessage('Review the handlers.'),
    ];
    const latest = toolRound('last', 'read_file', { path: 'src/last.py' }, moduleSource(999, 30));
    const messages = [...pinned, ...longSession({ rounds: 12, lines: 8 }).slice(2, -1), ...latest];
    const window = transcriptTokens([...pinned, ...latest]);
    const result = await governor(createMemoryStore(), window).project('s', messages);
    expect(result.viewTokens).toBeLessThanOrEqual(window);
    expect(result.warnings.map((warning) => warning.code)).toEqual([
      'fallback-reduction',
      'latest-turn-folded',
    ]);
    expect(result.view.at(-2)).toEqual(latest[0]);
    expect(JSON.stringify(result.view.at(-1))).toContain('expand(\\"function:read_file:13\\")');
  });

  it('warns when even that cannot fit the window', async () => {
    const store = createMemoryStore();
    const messages = [...longSession({ rounds: 3 }), userMessage(moduleSource(999, 400))];
    const window = Math.floor(transcriptTokens(messages.slice(-1)) / 2);
    const result = await governor(store, window).project('s', messages);
    expect(result.viewTokens).toBeGreaterThan(window);
    const warning = result.warnings.find((entry) => entry.code === 'over-window')?.message;
    expect(warning).toContain(`${window}-token window`);
    expect(warning).toContain(`the latest turn alone is ${transcriptTokens(messages.slice(-1))} tokens`);
    // The request itself is never edited.
    expect(result.view.at(-1)).toEqual(messages.at(-1));
  });

  it('says how much is pinned when the instructions alone are over the window', async () => {
    const instructions = systemMessage(`You are a coding agent. ${moduleSource(500, 200)}`);
    const messages = [instructions, ...longSession({ rounds: 6 }).slice(1)];
    const window = Math.floor(transcriptTokens([instructions]) / 2);
    const result = await governor(createMemoryStore(), window).project('s', messages);
    const warning = result.warnings.find((entry) => entry.code === 'over-window')?.message ?? '';
    const pinned = Number(
      /what is pinned \(instructions, requests that state rules\) (\d+)/.exec(warning)?.[1],
    );
    expect(pinned).toBeGreaterThanOrEqual(transcriptTokens([instructions]));
    expect(pinned).toBeLessThan(transcriptTokens(messages));
  });
});

describe('createGovernor: loops that make no progress', () => {
  /** One pinned request, then rounds of tiny outputs: nothing worth freeing. */
  function tinyRounds(count: number, from = 0): Message[] {
    const messages: Message[] = [];
    for (let index = from; index < from + count; index += 1) {
      messages.push(...toolRound(`c${index}`, 'bash', { command: `echo ${index}` }, 'ok'));
    }
    return messages;
  }

  it('runs no more than once per cooldown and opens the breaker after fruitless runs', async () => {
    const store = createMemoryStore();
    let messages: Message[] = [userMessage('keep echoing'), ...tinyRounds(60)];
    const window = Math.ceil(transcriptTokens(messages) / 0.72);
    const gc = governor(store, window, {
      planner: outputsOnly,
      triggers: { milestones: false, minBatch: 0, deep: false },
    });
    const outcomes: string[] = [];
    let next = 60;
    const step = async (rounds: number) => {
      messages = [...messages, ...tinyRounds(rounds, next)];
      next += rounds;
      const result = await gc.project('s', messages);
      outcomes.push(result.decision.outcome);
      expect(result.decision.trigger).toBe('pressure');
      expect(result.view).toEqual(messages);
    };
    await step(0); // first fruitless run
    await step(1); // 2 messages since: within the cooldown of 4
    await step(1); // 4 since: second fruitless run
    await step(2); // third fruitless run
    await step(2); // the breaker opens
    await step(2);
    await step(2);
    await step(2); // 16 messages since the last run: try again
    expect(outcomes).toEqual([
      'nothing-to-free',
      'cooldown',
      'nothing-to-free',
      'nothing-to-free',
      'breaker-open',
      'breaker-open',
      'breaker-open',
      'nothing-to-free',
    ]);
    expect(await store.listCommits('s')).toEqual([]);
    expect((await readSessionState(store, 's')).state.triggers.fruitlessRuns).toBe(4);
    expect(transcriptTokens(messages)).toBeLessThan(window);
  });

  it('fits the window by folding old work when tiny outputs are all there is', async () => {
    const store = createMemoryStore();
    const messages: Message[] = [userMessage('keep echoing'), ...tinyRounds(60)];
    const total = transcriptTokens(messages);
    const window = Math.floor(total / 2);
    const result = await governor(store, window, { planner: outputsOnly }).project('s', messages);
    expect(result.decision.trigger).toBe('overflow');
    expect(result.decision.outcome).toBe('fallback');
    expect(result.commit?.operations.map((operation) => operation.objectId)).toEqual(['conversation:user:1']);
    expect(result.view[1]?.parts[0]).toMatchObject({
      type: 'text',
      text: expect.stringMatching(/^\[folded conversation:user:1@\d+/),
    });
    expect(result.viewTokens).toBeLessThanOrEqual(window);
    expect(result.warnings.map((warning) => warning.code)).toContain('fallback-reduction');
    expect(result.warnings.map((warning) => warning.code)).not.toContain('over-window');
    // The latest step and the task stay; no tool result lost its call.
    expect(result.view.at(-1)).toBe(messages.at(-1));
    expect(result.view[0]).toBe(messages[0]);
  });
});

describe('createGovernor: cache rule', () => {
  /** One large idle output early, then many outputs too small to touch: a small, early edit. */
  function earlySmallEdit(): Message[] {
    const messages: Message[] = [
      userMessage('audit the handlers'),
      ...toolRound('big', 'read_file', { path: 'src/big.py' }, moduleSource(0, 8)),
    ];
    for (let index = 1; index <= 30; index += 1) {
      messages.push(
        ...toolRound(
          `c${index}`,
          'bash',
          { command: `wc -l src/file_${index}.py` },
          `${index * 17} src/file_${index}.py (under the limit)`,
        ),
      );
    }
    messages.push(assistantMessage('Audit done.'));
    return messages;
  }

  it('defers a small commit while the cache is warm', async () => {
    const store = createMemoryStore();
    const messages = earlySmallEdit();
    const result = await governor(store, 1_000_000, { provider: 'anthropic' }).project('s', messages, {
      force: true,
    });
    expect(result.decision.trigger).toBe('request');
    expect(result.decision.outcome).toBe('deferred');
    expect(result.decision.cache?.breakCost).toBeGreaterThan(
      result.decision.cache?.saving ?? Number.POSITIVE_INFINITY,
    );
    expect(result.view).toEqual(messages);
    expect(await store.listCommits('s')).toEqual([]);
  });

  it('weighs a commit the window does not force yet only until the window would force one', async () => {
    const messages = longSession({ rounds: 30 });
    const total = transcriptTokens(messages);
    const project = (share: number) =>
      governor(createMemoryStore(), Math.ceil(total / share), { provider: 'anthropic' }).project(
        's',
        messages,
      );
    // Room for several more calls: the saving over them pays for breaking the cache.
    const roomy = await project(0.75);
    expect(roomy.decision.trigger).toBe('pressure');
    expect(roomy.decision.outcome).toBe('committed');
    // The next output or two reach the window, which forces a commit then: committing now would
    // save on those calls only, less than the break costs. (Counting the 30 calls made so far,
    // the saving would be over ten times larger and the commit would go ahead.)
    const near = await project(0.97);
    expect(near.decision.trigger).toBe('pressure');
    expect(near.decision.outcome).toBe('deferred');
    const { saving, breakCost } = near.decision.cache!;
    expect(saving).toBeLessThan(breakCost);
    expect((saving * 30) / 2).toBeGreaterThan(breakCost);
    expect(near.view).toEqual(messages);
    // Over the window the commit is forced, whatever it costs.
    const over = await project(1.05);
    expect(over.decision.trigger).toBe('overflow');
    expect(over.viewTokens).toBeLessThan(total / 1.05);
  });

  it('batches: a plan that frees less than minBatch of the window waits, unless blind', async () => {
    const messages = longSession({ rounds: 30 });
    const window = Math.ceil(transcriptTokens(messages) / 0.8);
    const held = await governor(createMemoryStore(), window, {
      triggers: { milestones: false, minBatch: 0.9 },
    }).project('s', messages);
    expect(held.decision.trigger).toBe('pressure');
    expect(held.decision.outcome).toBe('deferred');
    expect(held.view).toEqual(messages);
    const blind = await governor(createMemoryStore(), window, {
      cache: 'blind',
      triggers: { milestones: false, minBatch: 0.9, deep: false },
    }).project('s', messages);
    expect(blind.decision.outcome).toBe('committed');
  });

  it('goes deep by default: planner and fallback down to the target in one commit', async () => {
    const messages = longSession({ rounds: 30 });
    const total = transcriptTokens(messages);
    const window = Math.ceil(total / 0.8);
    const stores = { plain: createMemoryStore(), deep: createMemoryStore() };
    const plain = await governor(stores.plain, window, {
      planner: outputsOnly,
      triggers: { milestones: false, minBatch: 0, target: 0.2, deep: false },
    }).project('s', messages);
    const deep = await governor(stores.deep, window, {
      planner: outputsOnly,
      triggers: { milestones: false, minBatch: 0, target: 0.2 },
    }).project('s', messages);
    expect(plain.viewTokens).toBeGreaterThan(window * 0.2);
    // The planner folds outputs alone; going deep folds the work after requests too, in the
    // same commit, and the indexes of that work take back room under the margin.
    const spanFolds = async (store: SidecarStore) =>
      Object.values((await readSessionState(store, 's')).state.objects).filter(isSpanFold);
    expect(await spanFolds(stores.plain)).toEqual([]);
    expect((await spanFolds(stores.deep)).length).toBeGreaterThan(0);
    expect(deep.viewTokens).toBeLessThanOrEqual(window * DEEP_REDUCTION.shrinkMargin);
    expect(deep.commit?.planner).toBe('embedded+fallback');
    expect(deep.decision.outcome).toBe('fallback');
  });

  it('reaches for a deep target with span folds only: nothing is pruned while the view fits', async () => {
    // A short aside from the user, answered by nothing: no work after it to fold.
    const messages = [
      ...longSession({ rounds: 15 }),
      userMessage('An aside: the loader is settings_loader_v2.'),
      ...longSession({ rounds: 15 }).slice(1),
    ];
    const window = Math.ceil(transcriptTokens(messages) / 0.8);
    const result = await governor(createMemoryStore(), window, {
      triggers: { milestones: false, minBatch: 0, target: 0.02 },
    }).project('s', messages);
    expect(result.commit).toBeDefined();
    expect(result.viewTokens).toBeLessThanOrEqual(window);
    expect(result.commit?.operations.filter((entry) => entry.operation === 'prune')).toEqual([]);
  });

  it('commits the same plan in cache-blind mode', async () => {
    const store = createMemoryStore();
    const messages = earlySmallEdit();
    const result = await governor(store, 1_000_000, { provider: 'anthropic', cache: 'blind' }).project(
      's',
      messages,
      { force: true },
    );
    expect(result.decision.outcome).toBe('committed');
    expect(result.commit?.operations.map((entry) => entry.objectId)).toEqual(['function:read_file:1']);
    expect(result.viewTokens).toBeLessThan(result.transcriptTokens);
  });

  it('commits it once the cache has gone cold', async () => {
    const store = createMemoryStore();
    const messages = earlySmallEdit();
    let time = NOW;
    const gc = governor(store, 1_000_000, { provider: 'anthropic', now: () => time });
    expect((await gc.project('s', messages, { force: true })).decision.outcome).toBe('deferred');
    time += 6 * 60_000;
    const later = await gc.project('s', messages, { force: true });
    expect(later.decision.outcome).toBe('committed');
    expect(later.decision.cache?.breakCost).toBe(0);
  });

  it('keeps the cache clock on every call, not only on the calls that govern', async () => {
    const messages = longSession({ rounds: 30 });
    const window = Math.ceil(transcriptTokens(messages) / 0.8);
    let clock = NOW;
    const gc = governor(createMemoryStore(), window, { provider: 'anthropic', now: () => clock });
    // Governance runs once at the start (on request), then ten minutes of calls a minute apart
    // stay under the threshold: none of them governs.
    await gc.project('s', messages.slice(0, 6), { force: true });
    for (let call = 1; call <= 10; call += 1) {
      clock += 60_000;
      const below = await gc.project('s', messages.slice(0, 6 + call * 4));
      expect(below.decision.trigger).toBe('none');
    }
    // The cache is warm (the last call was a minute ago): breaking it has its price.
    clock += 60_000;
    const warm = await gc.project('s', messages);
    expect(warm.decision.trigger).toBe('pressure');
    expect(warm.decision.cache?.breakCost).toBeGreaterThan(0);
    // After a pause longer than the cache's five minutes, it is cold: breaking it costs nothing.
    const paused = governor(createMemoryStore(), window, { provider: 'anthropic', now: () => clock });
    await paused.project('s', messages.slice(0, 46));
    clock += 6 * 60_000;
    const cold = await paused.project('s', messages);
    expect(cold.decision.trigger).toBe('pressure');
    expect(cold.decision.cache?.breakCost).toBe(0);
  });

  it('reads the cache clock from message timestamps when present', async () => {
    const store = createMemoryStore();
    const stamp = (messages: Message[], at: number): Message[] => [
      ...messages.slice(0, -1),
      { ...messages.at(-1)!, providerData: { timestamp: new Date(at).toISOString() } },
    ];
    const gc = governor(store, 1_000_000, { provider: 'anthropic' });
    expect(
      (await gc.project('s', stamp(earlySmallEdit(), NOW - 3_600_000), { force: true })).decision.outcome,
    ).toBe('deferred');
    // The governor's clock has not moved, but the recorded session has: 10 minutes later.
    const later = await gc.project('s', stamp(earlySmallEdit(), NOW - 3_000_000), { force: true });
    expect(later.decision.outcome).toBe('committed');
  });

  it('counts the cached prefix at its folded size after an earlier commit', async () => {
    // A first commit folds what it can; for the second, the prefix before its earliest edit is
    // cached at its folded size. Counted at transcript size, it would exceed the whole view and
    // the break cost would come out as zero.
    const store = createMemoryStore();
    const messages = [
      ...longSession({ rounds: 30 }),
      userMessage('and one more'),
      ...earlySmallEdit().slice(1),
    ];
    const first = await governor(store, 1_000_000, { cache: 'blind' }).project('s', messages.slice(0, 62), {
      force: true,
    });
    expect(first.decision.outcome).toBe('committed');
    const before = await readSessionState(store, 's');
    const second = await governor(store, 1_000_000, { provider: 'anthropic' }).project('s', messages, {
      force: true,
    });
    expect(second.decision.outcome).toBe('committed');
    const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter });
    const earliest = Math.min(
      ...(second.commit?.operations ?? []).map((entry) => ledger.get(entry.objectId)?.messageIndex ?? 0),
    );
    const prefix = projectView(ledger, before.state.objects)
      .items.filter((item) => item.source < earliest)
      .reduce((sum, item) => sum + countMessageTokens(approximateTokenCounter, item.message), 0);
    expect(prefix).toBeLessThan(
      ledger.messageTokens.slice(0, earliest).reduce((sum, value) => sum + value, 0),
    );
    expect(second.decision.cache?.breakCost).toBeCloseTo((second.viewTokens - prefix) * (1.25 - 0.1));
    expect(second.decision.cache?.breakCost).toBeGreaterThan(0);
  });
});

describe('createGovernor: counting deferred', () => {
  /** The approximate count, bound by characters, remembering what it counted. */
  function boundedCounter() {
    const counted: string[] = [];
    return {
      counted,
      tokenCounter: {
        name: 'chars/4, bound by chars',
        count: (text: string) => {
          counted.push(text);
          return approximateTokenCounter.count(text);
        },
        bound: (text: string) => text.length,
      },
    };
  }

  it('sends an appended turn uncounted when the window is far, and counts it once told to', async () => {
    const messages = longSession({ rounds: 20 });
    const { counted, tokenCounter } = boundedCounter();
    const gc = governor(createMemoryStore(), transcriptTokens(messages) * 10, { tokenCounter });
    const first = await gc.project('s', messages.slice(0, -2), { deferCounting: true });
    // A transcript the governor has not indexed is counted.
    expect(first.settle).toBeUndefined();
    expect(first.transcriptTokens).toBe(transcriptTokens(messages.slice(0, -2)));
    counted.length = 0;
    const next = await gc.project('s', messages, { deferCounting: true });
    expect(counted).toEqual([]);
    expect(next.decision).toEqual({ trigger: 'none', outcome: 'below-threshold' });
    expect(next.view).toEqual(messages);
    expect(next.viewTokens).toBeGreaterThan(transcriptTokens(messages));
    expect(next.transcriptTokens).toBe(next.viewTokens);
    next.settle?.();
    expect(counted.length).toBeGreaterThan(0);
    const again = await gc.project('s', messages, { deferCounting: true });
    expect(again.settle).toBeUndefined();
    expect(again.viewTokens).toBe(transcriptTokens(messages));
  });

  it("keeps a session's ledger when another conversation calls under its id: only what was appended is counted", async () => {
    const messages = longSession({ rounds: 20 });
    const { counted, tokenCounter } = boundedCounter();
    const gc = governor(createMemoryStore(), transcriptTokens(messages) * 10, { tokenCounter });
    // What indexing the whole transcript counts.
    await governor(createMemoryStore(), transcriptTokens(messages) * 10, { tokenCounter }).project(
      't',
      messages,
    );
    const whole = counted.length;
    await gc.project('s', messages.slice(0, -2));
    await gc.project('s', [{ role: 'user', parts: [{ type: 'text', text: 'Write a title for this.' }] }]);
    counted.length = 0;
    await gc.project('s', messages);
    expect(counted.length).toBeGreaterThan(0);
    expect(counted.length).toBeLessThan(whole / 4);
    // An edit at the start is indexed anew, as before.
    const edited = [
      { ...messages[0]!, parts: [{ type: 'text' as const, text: 'another task' }] },
      ...messages.slice(1),
    ];
    counted.length = 0;
    await gc.project('s', edited);
    expect(counted.length).toBe(whole);
  });

  it("leaves the valuator's statistics of new messages for after the view is sent, changing no view", async () => {
    const messages = longSession({ rounds: 30, requestEvery: 5 });
    const window = Math.ceil(transcriptTokens(messages) / 2);
    const prepared = governor(createMemoryStore(), window);
    const plain = governor(createMemoryStore(), window);
    const kindOrder = governor(createMemoryStore(), window, { entryModel: 'none' });
    let commits = 0;
    for (let end = 3; end <= messages.length; end += 2) {
      const transcript = messages.slice(0, end);
      const early = await prepared.project('s', transcript);
      const late = await plain.project('s', transcript);
      expect(early.afterSend).toBeTypeOf('function');
      expect((await kindOrder.project('s', transcript)).afterSend).toBeUndefined();
      expect(early.view).toEqual(late.view);
      commits += early.commits.length;
      early.afterSend?.();
    }
    expect(commits).toBeGreaterThan(0);
  });

  it.each([
    ['without milestones', { milestones: false, minBatch: 0 }],
    ['with milestones', { minBatch: 0 }],
  ])('decides, commits and projects as it does on counts, settled or not (%s)', async (_, triggers) => {
    const messages = longSession({ rounds: 40, requestEvery: 6 });
    const window = Math.ceil(transcriptTokens(messages) / 1.5);
    const counting = governor(createMemoryStore(), window, { triggers });
    const deferring = governor(createMemoryStore(), window, {
      triggers,
      tokenCounter: boundedCounter().tokenCounter,
    });
    let deferred = 0;
    let commits = 0;
    for (let end = 3; end <= messages.length; end += 2) {
      const transcript = messages.slice(0, end);
      const exact = await counting.project('s', transcript);
      const bounded = await deferring.project('s', transcript, { deferCounting: true });
      expect(bounded.decision).toEqual(exact.decision);
      expect(bounded.view).toEqual(exact.view);
      expect(bounded.commits.map((commit) => commit.operations)).toEqual(
        exact.commits.map((commit) => commit.operations),
      );
      expect(bounded.warnings).toEqual(exact.warnings);
      commits += exact.commits.length;
      if (bounded.settle === undefined) {
        expect(bounded.viewTokens).toBe(exact.viewTokens);
        expect(bounded.transcriptTokens).toBe(exact.transcriptTokens);
      } else {
        deferred += 1;
        expect(bounded.viewTokens).toBeGreaterThanOrEqual(exact.viewTokens);
        expect(bounded.viewTokens).toBeLessThanOrEqual(window);
        // Some calls leave the count to the next one.
        if (end % 3 !== 0) bounded.settle();
      }
    }
    expect(deferred).toBeGreaterThan(3);
    expect(commits).toBeGreaterThan(0);
  });
});

describe('createGovernor: durability and recovery', () => {
  it('keeps its state across a restart on the same store', async () => {
    const store = createMemoryStore();
    const messages = longSession({ rounds: 30 });
    const window = Math.ceil(transcriptTokens(messages) / 0.8);
    const first = await governor(store, window, PLANNER_ONLY).project('s', messages);
    expect(first.decision.outcome).toBe('committed');
    const restarted = governor(store, window, PLANNER_ONLY);
    const again = await restarted.project('s', messages);
    expect(again.view).toEqual(first.view);
    expect(again.viewTokens).toBe(first.viewTokens);
    expect(again.commit).toBeUndefined();
    expect(await store.listCommits('s')).toHaveLength(1);
    // And it continues from there when the transcript grows.
    const grown = [...messages, userMessage('one more thing'), assistantMessage('sure')];
    const third = await restarted.project('s', grown);
    expect(third.view.slice(0, first.view.length)).toEqual(first.view);
  });

  it('gives the same view whether the transcript arrives at once or call by call', async () => {
    const messages = longSession({ rounds: 30 });
    const window = Math.ceil(transcriptTokens(messages) / 0.8);
    const incremental = governor(createMemoryStore(), window);
    for (let end = 2; end < messages.length; end += 7) await incremental.project('s', messages.slice(0, end));
    const last = await incremental.project('s', messages);
    const fresh = await governor(createMemoryStore(), window).project('s', messages);
    expect(last.viewTokens).toBeLessThanOrEqual(window);
    expect(fresh.viewTokens).toBeLessThanOrEqual(window);
    expect(last.transcriptTokens).toBe(fresh.transcriptTokens);
  });

  it('re-indexes when the transcript is not a continuation of the cached one', async () => {
    const store = createMemoryStore();
    const gc = governor(store, 1_000_000);
    const first = longSession({ rounds: 3 });
    await gc.project('s', first);
    const other: Message[] = [userMessage('a different session under the same id'), assistantMessage('ok')];
    const result = await gc.project('s', other);
    expect(result.view).toEqual(other);
    expect(result.transcriptTokens).toBe(transcriptTokens(other));
  });

  it('expands the exact payload and finds it by search', async () => {
    const store = createMemoryStore();
    const messages = longSession({ rounds: 30 });
    const gc = governor(store, Math.ceil(transcriptTokens(messages) / 0.8), { planner: outputsOnly });
    const result = await gc.project('s', messages);
    const folded = result.commit?.operations.find((entry) => entry.objectId === 'function:read_file:3');
    expect(folded).toBeDefined();
    expect(await gc.expand('s', 'function:read_file:3')).toBe(moduleSource(3, 20));
    expect(await gc.expand('s', 'function:read_file:999')).toBeUndefined();
    const hits = await gc.searchContext('s', 'handler_3_7');
    expect(hits[0]?.objectId).toBe('function:read_file:3');
    expect(hits[0]?.snippet).toContain('handler_3_');
    expect(await gc.searchContext('s', 'handler_3_7', 0)).toEqual([]);
  });

  it('falls back to the embedded planner when the planner fails', async () => {
    const store = createMemoryStore();
    const messages = longSession({ rounds: 30 });
    const failing: Planner = {
      name: 'llm',
      plan: async () => {
        throw new Error('endpoint unreachable');
      },
    };
    const result = await governor(store, Math.ceil(transcriptTokens(messages) / 0.8), {
      ...PLANNER_ONLY,
      planner: failing,
    }).project('s', messages);
    expect(result.warnings.map((warning) => warning.code)).toContain('planner-failed');
    expect(result.warnings[0]?.message).toContain('endpoint unreachable');
    expect(result.decision.outcome).toBe('committed');
    expect(result.commit?.planner).toBe('embedded');
  });

  it('charges a planner for the tokens it spent and passes its warnings on', async () => {
    const store = createMemoryStore();
    const messages = longSession({ rounds: 30 });
    const costly: Planner = {
      name: 'llm',
      plan: async (input) => ({
        plan: {
          planner: 'llm',
          operations: [{ objectId: 'function:read_file:2', operation: 'fold', reason: 'old' }],
        },
        cost: { inputTokens: input.viewTokens * 100, outputTokens: 10 },
        warnings: [{ code: 'llm-retry', message: 'retried once' }],
      }),
    };
    const result = await governor(store, Math.ceil(transcriptTokens(messages) / 0.8), {
      planner: costly,
    }).project('s', messages);
    expect(result.decision.cache?.gcCost).toBe(transcriptTokens(messages) * 100 + 40);
    expect(result.decision.outcome).toBe('deferred');
    expect(result.warnings).toContainEqual({ code: 'llm-retry', message: 'retried once' });
  });

  it('shows ids as metadata when asked', async () => {
    const store = createMemoryStore();
    const messages = longSession({ rounds: 3 });
    const result = await governor(store, 1_000_000, { showIds: true }).project('s', messages);
    expect(result.view[1]?.parts[0]).toEqual({ type: 'text', text: '[id: conversation:user:1]' });
    expect(result.viewTokens).toBeGreaterThan(transcriptTokens(messages));
    expect(result.viewTokens - transcriptTokens(messages)).toBeGreaterThan(MESSAGE_OVERHEAD_TOKENS);
  });

  it('tells the planner whether the view shows ids, so that a fork of it is the same view', async () => {
    const messages = longSession({ rounds: 30 });
    const seen: Array<boolean | undefined> = [];
    const watching: Planner = {
      name: 'watching',
      plan: async (input) => {
        seen.push(input.showIds);
        return { plan: { planner: 'watching', operations: [] } };
      },
    };
    const window = Math.ceil(transcriptTokens(messages) / 0.8);
    for (const showIds of [true, false]) {
      await governor(createMemoryStore(), window, { planner: watching, showIds }).project('s', messages);
    }
    expect(seen).toEqual([true, undefined]);
  });
});
