import { describe, expect, it } from 'vitest';
import { createPinRule } from '../governor/pins.js';
import { indexTranscript, type Ledger } from '../ledger.js';
import { recentStepsStart } from '../ledger-measures.js';
import type { PlannedOperation, ViewState } from '../operations.js';
import { projectView } from '../project-view.js';
import { latestTurnStart, rehearsePlan } from '../rehearse-plan.js';
import { longSession, moduleSource } from '../testing/long-session.js';
import { assistantMessage, toolRound, userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter } from '../tokens.js';
import { type ImagePart, type Message, text } from '../transcript.js';
import { createEmbeddedPlanner, type EmbeddedPlannerOptions, planEmbedded } from './embedded-planner.js';
import type { PlannerInput } from './planner.js';

function ledgerOf(messages: Message[]): Ledger {
  return indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
}

function inputFor(ledger: Ledger, overrides: Partial<PlannerInput> = {}): PlannerInput {
  const viewTokens = projectView(ledger, overrides.state ?? {}).tokens;
  return {
    ledger,
    state: {},
    protectFrom: latestTurnStart(ledger),
    viewTokens,
    // No pressure unless a test asks for it.
    targetTokens: viewTokens,
    window: viewTokens * 2,
    ...overrides,
  };
}

/**
 * The tuning these tests describe, stated explicitly so that tuning the defaults on the
 * evaluation does not change what the tests mean: keep the 3 latest outputs and those used in
 * the last 4 steps, fold what has been idle for 8 steps, whatever share of it a fold frees.
 */
const TUNING: EmbeddedPlannerOptions = {
  keepRecentOutputs: 3,
  recentUseSteps: 4,
  idleFoldSteps: 8,
  idleWithBudget: true,
  minFoldShare: 0,
};

function plan(
  ledger: Ledger,
  overrides: Partial<PlannerInput> = {},
  options?: EmbeddedPlannerOptions,
): PlannedOperation[] {
  return planEmbedded(inputFor(ledger, overrides), { ...TUNING, ...options });
}

function summary(operations: PlannedOperation[]): Array<[string, string]> {
  return operations.map((operation) => [operation.objectId, operation.operation]);
}

/** A few distinct, small-but-worth-it bash rounds so that outputs of interest are not the latest. */
function filler(from: number, count: number): Message[] {
  const messages: Message[] = [];
  for (let index = from; index < from + count; index += 1) {
    messages.push(...toolRound(`f${index}`, 'bash', { command: `ls dir_${index}` }, `entry_${index}.txt`));
  }
  return messages;
}

describe('planEmbedded: proven staleness', () => {
  it('folds an earlier read of a file read again by default, and prunes it when asked', () => {
    const ledger = ledgerOf([
      userMessage('refactor src/handlers/module_1.py'),
      ...toolRound('r1', 'read_file', { path: 'src/handlers/module_1.py' }, moduleSource(1, 10)),
      ...toolRound('e1', 'edit_file', { path: 'src/handlers/module_1.py', old: 'a', new: 'b' }, 'edited'),
      ...toolRound('r2', 'read_file', { path: 'src/handlers/module_1.py' }, moduleSource(2, 10)),
      ...filler(0, 2),
      assistantMessage('done'),
    ]);
    const operations = plan(ledger);
    expect(operations).toContainEqual({
      objectId: 'function:read_file:1',
      operation: 'fold',
      reason: 'superseded by function:read_file:3',
    });
    expect(operations.find((operation) => operation.objectId === 'function:read_file:3')).toBeUndefined();
    expect(plan(ledger, {}, { supersededOperation: 'prune' })).toContainEqual({
      objectId: 'function:read_file:1',
      operation: 'prune',
      reason: 'superseded by function:read_file:3',
    });
  });

  it('supersedes a failed run by a later successful run of the same command, not the reverse', () => {
    const failing = `${moduleSource(7, 6)}\nerror: build failed`;
    const ledger = ledgerOf([
      userMessage('make the build pass'),
      ...toolRound('b1', 'bash', { command: 'make build' }, failing),
      ...toolRound('b2', 'bash', { command: 'make build' }, moduleSource(8, 6)),
      ...toolRound('b3', 'bash', { command: 'make test' }, moduleSource(9, 6)),
      ...toolRound('b4', 'bash', { command: 'make test' }, `${moduleSource(10, 6)}\nFAILED test_x`),
      ...filler(0, 2),
      assistantMessage('done'),
    ]);
    const operations = plan(ledger, {}, { supersededOperation: 'prune' });
    expect(operations).toContainEqual({
      objectId: 'function:bash:1',
      operation: 'prune',
      reason: 'superseded by function:bash:2',
    });
    expect(operations.find((operation) => operation.objectId === 'function:bash:3')).toBeUndefined();
  });

  it('prunes an earlier output identical to a later one', () => {
    const listing = moduleSource(3, 8);
    const ledger = ledgerOf([
      userMessage('look around'),
      ...toolRound('a', 'bash', { command: 'ls -la src' }, listing),
      ...toolRound('b', 'bash', { command: 'ls -la ./src' }, listing),
      ...filler(0, 2),
      assistantMessage('done'),
    ]);
    expect(plan(ledger)).toContainEqual({
      objectId: 'function:bash:1',
      operation: 'prune',
      reason: 'same output as function:bash:2',
    });
  });

  it('tells images apart by what they show, not by their text: two screenshots are two outputs', () => {
    const shot = (data: string): ImagePart => ({
      type: 'image',
      ref: `data:image/png;base64,${data}`,
      source: 'data',
    });
    const screenshot = (id: string, data: string, after: boolean): Message[] => [
      {
        role: 'assistant',
        parts: [{ type: 'tool-call', id, name: 'screenshot', arguments: `{"url":"/${id}"}` }],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: id,
            name: 'screenshot',
            content: after ? 'Image read.' : [shot(data)],
          },
        ],
      },
      // opencode sends a result's images after it, to providers that take none in one.
      ...(after
        ? [{ role: 'user' as const, parts: [text('Attached image(s) from tool result:'), shot(data)] }]
        : []),
    ];
    for (const after of [false, true]) {
      const sent = (data: string) =>
        ledgerOf([
          userMessage('Check the login page, then the signup page.'),
          ...screenshot('login', data, after),
          ...screenshot('signup', 'BBBB', after),
          ...filler(0, 2),
          assistantMessage('Both pages checked.'),
        ]);
      const copies = (ledger: Ledger) =>
        plan(ledger).filter((operation) => operation.reason.startsWith('same output'));
      expect(copies(sent('AAAA'))).toEqual([]);
      // The same screenshot twice is one output twice.
      expect(copies(sent('BBBB'))).toHaveLength(1);
    }
  });

  it('leaves outputs too small to be worth an operation', () => {
    const ledger = ledgerOf([
      userMessage('check twice'),
      ...toolRound('a', 'bash', { command: 'git status' }, 'clean'),
      ...toolRound('b', 'bash', { command: 'git status' }, 'clean'),
      ...filler(0, 2),
      assistantMessage('done'),
    ]);
    expect(plan(ledger)).toEqual([]);
  });

  it('never touches the very last output, even when it duplicates an earlier one', () => {
    const listing = moduleSource(4, 8);
    const ledger = ledgerOf([
      userMessage('look'),
      ...toolRound('a', 'bash', { command: 'cat x' }, listing),
      ...toolRound('b', 'bash', { command: 'cat x' }, listing),
      assistantMessage('same'),
    ]);
    const operations = plan(ledger);
    expect(summary(operations)).toEqual([['function:bash:1', 'prune']]);
  });
});

describe('planEmbedded: idle outputs', () => {
  it('folds old, unused outputs and keeps the recent ones', () => {
    const ledger = ledgerOf(longSession({ rounds: 14 }));
    const operations = plan(ledger);
    // 14 reads; read k is followed by 15 − k assistant steps: idle from 8 steps, so reads 1–7.
    expect(summary(operations)).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((index) => [`function:read_file:${index}`, 'fold'] as [string, string]),
    );
    for (const operation of operations) expect(operation.reason).toMatch(/^idle for \d+ steps$/);
  });

  it('keeps outputs the agent referred to recently', () => {
    const messages = longSession({ rounds: 14 });
    // The agent mentions a handler of module 2 near the end.
    messages.splice(messages.length - 4, 0, assistantMessage('handler_2_5 in module_2.py needs a fix'));
    const operations = plan(ledgerOf(messages));
    expect(operations.map((operation) => operation.objectId)).not.toContain('function:read_file:2');
    expect(operations.map((operation) => operation.objectId)).toContain('function:read_file:1');
  });

  it('acts only on proven staleness when idle folding is off', () => {
    expect(
      plan(ledgerOf(longSession({ rounds: 14 })), {}, { idleFoldSteps: Number.POSITIVE_INFINITY }),
    ).toEqual([]);
  });

  it('masks large, regular outputs instead of folding them', () => {
    const messages = longSession({ rounds: 14, lines: 20 });
    messages.splice(3, 1, {
      role: 'tool',
      parts: [{ type: 'tool-result', callId: 'call_1', name: 'read_file', content: moduleSource(1, 200) }],
    });
    const operations = plan(ledgerOf(messages));
    expect(operations[0]).toMatchObject({ objectId: 'function:read_file:1', operation: 'mask' });
  });

  it('skips objects already folded or pruned', () => {
    const ledger = ledgerOf(longSession({ rounds: 14 }));
    const state: ViewState = {
      'function:read_file:1': { operation: 'fold', replacement: 'folded', commitId: 'c1' },
      'function:read_file:2': { operation: 'prune', replacement: '', commitId: 'c1' },
    };
    const ids = plan(ledger, { state }).map((operation) => operation.objectId);
    expect(ids).not.toContain('function:read_file:1');
    expect(ids).not.toContain('function:read_file:2');
    expect(ids).toContain('function:read_file:3');
  });
});

describe('planEmbedded: pressure', () => {
  it('reaches the target, least-needed first, and never touches pins or the latest turn', () => {
    const ledger = ledgerOf(longSession({ rounds: 30, requestEvery: 10 }));
    const viewTokens = projectView(ledger, {}).tokens;
    // Not lower: the indexes of the whole work (its names, lines of code and calls) take half of
    // this session.
    const target = Math.floor(viewTokens * 0.6);
    const operations = plan(ledger, {
      viewTokens,
      targetTokens: target,
      window: Math.floor(viewTokens * 0.8),
    });
    const rehearsal = rehearsePlan(ledger, {}, { planner: 'embedded', operations });
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(target);
    for (const entry of rehearsal.rejected) expect(entry.reason).toMatch(/^(duplicate|covered)$/);
    const protectFrom = latestTurnStart(ledger);
    for (const operation of operations) {
      const object = ledger.get(operation.objectId);
      // A span fold leaves its request in the view: it may fold the work after a pinned one.
      if (operation.spanEnd === undefined) expect(object?.pinned).toBe(false);
      expect(operation.spanEnd ?? object?.span.end).toBeLessThanOrEqual(protectFrom);
    }
  });

  it('goes as far as folding past conversations when outputs are not enough', () => {
    const ledger = ledgerOf(longSession({ rounds: 30, requestEvery: 10 }));
    const viewTokens = projectView(ledger, {}).tokens;
    const operations = plan(ledger, { viewTokens, targetTokens: 0 });
    expect(
      operations.some(
        (operation) => operation.objectId.startsWith('conversation:') && operation.operation === 'fold',
      ),
    ).toBe(true);
    // Then the old work after the first request folds while the request stays (a span fold).
    expect(operations).toContainEqual(
      expect.objectContaining({ objectId: 'conversation:user:1', spanEnd: expect.any(Number) }),
    );
    expect(
      operations.filter(
        (operation) => operation.objectId === 'conversation:user:1' && operation.spanEnd === undefined,
      ),
    ).toEqual([]);
  });

  it('keeps the recent steps whole unless told to fold the recent work too', () => {
    const ledger = ledgerOf(longSession({ rounds: 30 }));
    const viewTokens = projectView(ledger, {}).tokens;
    // Not lower: the index of the whole work (its names, lines of code and calls) takes half of
    // this session.
    const target = Math.floor(viewTokens * 0.55);
    const recent = recentStepsStart(ledger, latestTurnStart(ledger), 6);
    // Idle outputs stay, and an output folds alone only when that frees 90% of it: span folds do
    // the work.
    const spans: EmbeddedPlannerOptions = {
      keepRecentSteps: 6,
      idleFoldSteps: Number.POSITIVE_INFINITY,
      minFoldShare: 0.9,
    };
    const kept = plan(ledger, { viewTokens, targetTokens: target }, spans);
    const keptSpan = kept.find((operation) => operation.objectId === 'conversation:user:1');
    expect(keptSpan?.spanEnd).toBeLessThanOrEqual(recent + 1);
    const operations = plan(ledger, { viewTokens, targetTokens: target }, { ...spans, foldRecentWork: true });
    expect(operations.filter((operation) => operation.operation === 'prune')).toEqual([]);
    const span = operations.find((operation) => operation.objectId === 'conversation:user:1');
    // Past the six steps kept otherwise, up to the latest turn.
    expect(span?.spanEnd).toBeGreaterThan(recent + 1);
    expect(span?.spanEnd).toBeLessThanOrEqual(latestTurnStart(ledger));
    const rehearsal = rehearsePlan(ledger, {}, { planner: 'embedded', operations });
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(target);
  });

  it('stops once the estimate reaches the target', () => {
    const ledger = ledgerOf(longSession({ rounds: 30 }));
    const viewTokens = projectView(ledger, {}).tokens;
    const light = plan(
      ledger,
      { viewTokens, targetTokens: viewTokens - 1 },
      { idleFoldSteps: Number.POSITIVE_INFINITY },
    );
    const heavy = plan(
      ledger,
      { viewTokens, targetTokens: Math.floor(viewTokens / 3) },
      { idleFoldSteps: Number.POSITIVE_INFINITY },
    );
    expect(light).toHaveLength(1);
    expect(heavy.length).toBeGreaterThan(light.length);
  });
});

describe('planEmbedded: determinism', () => {
  it('gives the same plan for the same input, and for the same transcript indexed again', () => {
    const messages = longSession({ rounds: 30, requestEvery: 7 });
    const ledger = ledgerOf(messages);
    const viewTokens = projectView(ledger, {}).tokens;
    const overrides = { viewTokens, targetTokens: Math.floor(viewTokens / 2) };
    const first = plan(ledger, overrides);
    expect(plan(ledger, overrides)).toEqual(first);
    expect(plan(ledgerOf(structuredClone(messages)), overrides)).toEqual(first);
    expect(first.length).toBeGreaterThan(0);
  });
});

describe('createEmbeddedPlanner', () => {
  it('wraps planEmbedded behind the planner contract', async () => {
    const ledger = ledgerOf(longSession({ rounds: 14 }));
    const planner = createEmbeddedPlanner();
    expect(planner.name).toBe('embedded');
    const result = await planner.plan(inputFor(ledger));
    expect(result.plan).toEqual({ planner: 'embedded', operations: planEmbedded(inputFor(ledger)) });
    expect(result.cost).toBeUndefined();
  });

  it('passes its options on', async () => {
    const ledger = ledgerOf(longSession({ rounds: 14 }));
    const result = await createEmbeddedPlanner({ ...TUNING, keepRecentOutputs: 10 }).plan(inputFor(ledger));
    expect(result.plan.operations.map((operation) => operation.objectId)).toEqual([
      'function:read_file:1',
      'function:read_file:2',
      'function:read_file:3',
      'function:read_file:4',
    ]);
  });
});

describe('planEmbedded: with a budget, just enough', () => {
  it('leaves idle outputs alone while the view is within a finite target, and folds them all without one', () => {
    const ledger = ledgerOf(longSession({ rounds: 14 }));
    const defaults = { keepRecentOutputs: 3, recentUseSteps: 4, idleFoldSteps: 8, minFoldShare: 0 };
    expect(planEmbedded(inputFor(ledger), defaults)).toEqual([]);
    const unbudgeted = planEmbedded(inputFor(ledger, { targetTokens: Number.POSITIVE_INFINITY }), defaults);
    expect(unbudgeted.length).toBeGreaterThan(0);
    expect(unbudgeted.every((operation) => operation.reason.startsWith('idle for'))).toBe(true);
  });

  it('folds oldest first and stops near the target', () => {
    const ledger = ledgerOf(longSession({ rounds: 14 }));
    const viewTokens = projectView(ledger, {}).tokens;
    const light = planEmbedded(inputFor(ledger, { targetTokens: Math.floor(viewTokens * 0.9) }), {
      minFoldShare: 0,
    });
    const heavy = planEmbedded(inputFor(ledger, { targetTokens: Math.floor(viewTokens * 0.5) }), {
      minFoldShare: 0,
    });
    expect(light.length).toBeGreaterThan(0);
    expect(heavy.length).toBeGreaterThan(light.length);
    // The light plan is the start of the heavy one: the same order, least needed first.
    expect(heavy.slice(0, light.length).map((operation) => operation.objectId)).toEqual(
      light.map((operation) => operation.objectId),
    );
    expect(light[0]?.objectId).toBe('function:read_file:1');
  });
});

describe('planEmbedded: an output folds alone only when that frees most of it', () => {
  /** A long output with hardly an anchor: its fold frees nearly all of it. */
  const bulky = Array.from({ length: 120 }, (_, line) => `step ${line % 7} went fine, moving on`).join('\n');

  it('leaves an output whose anchor index would keep much of it to the span fold of its step', () => {
    const messages = longSession({ rounds: 14 });
    // Read 2 becomes bulky output: the only output whose fold frees 90% of it.
    messages.splice(5, 1, {
      role: 'tool',
      parts: [{ type: 'tool-result', callId: 'call_2', name: 'read_file', content: bulky }],
    });
    const ledger = ledgerOf(messages);
    const viewTokens = projectView(ledger, {}).tokens;
    const operations = planEmbedded(
      inputFor(ledger, { viewTokens, targetTokens: Math.floor(viewTokens * 0.6) }),
    );
    const outputFolds = operations.filter((operation) => operation.objectId.startsWith('function:'));
    // Read 2 alone, then the span fold of the old steps; a read the span holds is not planned
    // again (its saving would count twice); the last pass may fold a recent read.
    expect(outputFolds[0]).toMatchObject({ objectId: 'function:read_file:2', operation: 'fold' });
    const span = operations.find((operation) => operation.objectId === 'conversation:user:1');
    for (const operation of outputFolds.slice(1)) {
      expect(ledger.get(operation.objectId)!.messageIndex).toBeGreaterThanOrEqual(span!.spanEnd!);
    }
    expect(operations).toContainEqual(
      expect.objectContaining({ objectId: 'conversation:user:1', spanEnd: expect.any(Number) }),
    );
    // Told otherwise, the reads fold one by one, oldest first, and no span folds.
    const anyShare = planEmbedded(
      inputFor(ledger, { viewTokens, targetTokens: Math.floor(viewTokens * 0.6) }),
      { minFoldShare: 0 },
    );
    expect(anyShare[0]?.objectId).toBe('function:read_file:1');
    expect(anyShare.every((operation) => operation.objectId.startsWith('function:'))).toBe(true);
  });

  it('still folds outputs one by one when the recent steps are all there is', () => {
    // Four reads: all within the six steps that span folds keep.
    const ledger = ledgerOf(longSession({ rounds: 4, lines: 60 }));
    const viewTokens = projectView(ledger, {}).tokens;
    const target = Math.floor(viewTokens * 0.6);
    const operations = planEmbedded(inputFor(ledger, { viewTokens, targetTokens: target }));
    expect(operations.length).toBeGreaterThan(0);
    expect(operations.every((operation) => operation.objectId.startsWith('function:read_file:'))).toBe(true);
    const rehearsal = rehearsePlan(ledger, {}, { planner: 'embedded', operations });
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(target);
  });
});
