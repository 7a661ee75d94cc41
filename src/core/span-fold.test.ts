import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../stores/memory-store.js';
import { commitRehearsal } from './commit-plan.js';
import { createLedger, indexTranscript, type Ledger } from './ledger.js';
import { parseObjectPayload } from './object-payload.js';
import type { PlannedOperation } from './operations.js';
import { projectView } from './project-view.js';
import {
  createVerdictMemo,
  foldWithinBound,
  latestTurnStart,
  type RehearseOptions,
  rehearsePlan,
} from './rehearse-plan.js';
import { emptySessionState, payloadKey } from './session-state.js';
import { longSession } from './testing/long-session.js';
import { longOutput, systemMessage, toolRound, userMessage } from './testing/transcript-builders.js';
import { approximateTokenCounter } from './tokens.js';

function ledgerOf(rounds = 12): Ledger {
  return indexTranscript(longSession({ rounds }), { tokenCounter: approximateTokenCounter });
}

const spanFold = (spanEnd: number, objectId = 'conversation:user:1'): PlannedOperation => ({
  objectId,
  operation: 'fold',
  spanEnd,
  reason: 'test',
});

describe('span folds: the work after a request', () => {
  it('fold the steps of a running, pinned request while the request and later steps stay', () => {
    const ledger = ledgerOf();
    expect(ledger.get('conversation:user:1')?.pinned).toBe(true);
    const rehearsal = rehearsePlan(ledger, {}, { planner: 'test', operations: [spanFold(10)] });
    expect(rehearsal.rejected).toEqual([]);
    const state = rehearsal.stateAfter['conversation:user:1'];
    expect(state).toMatchObject({ operation: 'fold', keepRequest: true, spanEnd: 10 });
    expect(state?.replacement).toMatch(
      /^\[folded conversation:user:1@10: the 8 messages of work that followed conversation:user:1/,
    );
    expect(state?.replacement).toContain('expand("conversation:user:1@10")');
    const view = projectView(ledger, rehearsal.stateAfter);
    expect(view.items.map((item) => item.source)).toEqual([
      0,
      1,
      1,
      ...ledger.messages.map((_, index) => index).slice(10),
    ]);
    expect(view.items[1]?.message).toBe(ledger.messages[1]);
  });

  it('never ends between a call and its result, nor inside the latest turn', () => {
    const ledger = ledgerOf();
    const toolIndex = ledger.messages.findIndex((message, index) => index > 5 && message.role === 'tool');
    const adjusted = rehearsePlan(ledger, {}, { planner: 'test', operations: [spanFold(toolIndex)] });
    expect(adjusted.stateAfter['conversation:user:1']?.spanEnd).toBe(toolIndex - 1);
    const tooFar = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [spanFold(ledger.messages.length)] },
    );
    expect(tooFar.stateAfter['conversation:user:1']?.spanEnd).toBeLessThanOrEqual(latestTurnStart(ledger));
    const nothing = rehearsePlan(ledger, {}, { planner: 'test', operations: [spanFold(2)] });
    expect(nothing.rejected[0]?.reason).toBe('latest-turn');
  });

  it('goes deeper, not back, and covers only the outputs inside it', () => {
    const ledger = ledgerOf();
    const first = rehearsePlan(ledger, {}, { planner: 'test', operations: [spanFold(10)] });
    const back = rehearsePlan(ledger, first.stateAfter, { planner: 'test', operations: [spanFold(6)] });
    expect(back.rejected[0]?.reason).toBe('no-op');
    const outputs = ledger.objects.filter((object) => object.kind === 'function');
    const inside = outputs.find((object) => object.messageIndex < 14)!;
    const outside = outputs.find(
      (object) => object.messageIndex > 16 && object.span.end <= latestTurnStart(ledger),
    )!;
    const deeper = rehearsePlan(ledger, first.stateAfter, {
      planner: 'test',
      operations: [
        spanFold(16),
        { objectId: inside.id, operation: 'fold', reason: 'test' },
        { objectId: outside.id, operation: 'fold', reason: 'test' },
      ],
    });
    expect(deeper.rejected.map((entry) => [entry.operation.objectId, entry.reason])).toEqual([
      [inside.id, 'covered'],
    ]);
    expect(deeper.stateAfter['conversation:user:1']?.spanEnd).toBe(16);
    expect(deeper.tokensAfter).toBeLessThan(first.tokensAfter);
  });

  it('folds the same span again only to give it a smaller index', () => {
    const ledger = ledgerOf();
    const first = rehearsePlan(ledger, {}, { planner: 'test', operations: [spanFold(16)] });
    const same = rehearsePlan(ledger, first.stateAfter, { planner: 'test', operations: [spanFold(16)] });
    expect(same.rejected[0]?.reason).toBe('no-op');
    const tighter = rehearsePlan(
      ledger,
      first.stateAfter,
      { planner: 'test', operations: [spanFold(16)] },
      { spanAnchorTokens: 30 },
    );
    expect(tighter.rejected).toEqual([]);
    expect(tighter.stateAfter['conversation:user:1']?.spanEnd).toBe(16);
    expect(tighter.tokensAfter).toBeLessThan(first.tokensAfter);
  });

  it('keeps its index within its token bound when the folded text takes more tokens a character', () => {
    // Hashes and ids: about two characters a token, where the index budget assumes four.
    const dense = { name: 'dense', count: (text: string) => Math.ceil(text.length / 2) };
    const ledger = indexTranscript(longSession({ rounds: 12 }), { tokenCounter: dense });
    const bound = 120;
    const rehearsal = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [spanFold(latestTurnStart(ledger))] },
      { spanAnchorTokens: bound },
    );
    const state = rehearsal.stateAfter['conversation:user:1'];
    expect(state?.replacement).toContain('anchors: ');
    const frame = state?.replacement.replace(/\nanchors: [^\n]*/, '') ?? '';
    expect(dense.count(state?.replacement ?? '') - dense.count(frame)).toBeLessThanOrEqual(bound);
    expect(state?.tokens).toBe(dense.count(state?.replacement ?? ''));
    // The bound is honoured as counted, not only in characters: the same fold unbounded is bigger.
    const unbounded = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [spanFold(latestTurnStart(ledger))] },
    );
    expect(unbounded.stateAfter['conversation:user:1']?.tokens).toBeGreaterThan(2 * bound);
  });

  it('cuts an index of names to what its bound holds, counting characters as the cut does', () => {
    // Short paths: the rendering puts one blank between names, the index budget counts two.
    const dense = { name: 'dense', count: (text: string) => Math.ceil(text.length / 2) };
    const listing = (round: number) =>
      Array.from({ length: 40 }, (_, index) => `f${round}_${index}.c`).join('\n');
    const messages = [
      systemMessage('You are a coding agent.'),
      userMessage('Find the module that defines parse_config and fix it.'),
      ...Array.from({ length: 8 }, (_, round) =>
        toolRound(`call_${round}`, 'list_files', { dir: `src/${round}` }, listing(round)),
      ).flat(),
      userMessage('Now run the tests.'),
    ];
    const ledger = indexTranscript(messages, { tokenCounter: dense });
    const bound = 150;
    const rehearsal = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [spanFold(latestTurnStart(ledger))] },
      { spanAnchorTokens: bound },
    );
    const replacement = rehearsal.stateAfter['conversation:user:1']?.replacement ?? '';
    const index = /\nanchors: ([^\n]*)/.exec(replacement)?.[1] ?? '';
    expect(index).not.toContain('; ');
    const indexTokens = dense.count(replacement) - dense.count(replacement.replace(/\nanchors: [^\n]*/, ''));
    expect(indexTokens).toBeLessThanOrEqual(bound);
    // The cut keeps its share of the bound (`FOLD_INDEX.cutShare`, 0.9), less a name at most.
    expect(indexTokens).toBeGreaterThanOrEqual(0.85 * bound);
  });

  it('keeps a cut index within its bound when its first entries are longer than the rest', () => {
    // The cut's ratio is the whole index's; here the kept part is denser than the whole.
    const dense = { name: 'dense', count: (text: string) => Math.ceil(text.length / 1.5) };
    const anchors = [
      ...Array.from({ length: 10 }, (_, index) => `long_name_${String(index).padStart(5, '0')}`),
      ...Array.from({ length: 200 }, (_, index) => `n${index.toString(36).padStart(2, '0')}`),
    ];
    const parts = { head: ['[folded x: work]'], anchors, tail: ['(expand("x") recovers it)'] };
    const frame = dense.count('[folded x: work]\n(expand("x") recovers it)');
    for (const bound of [60, 100, 150]) {
      const { replacement, tokens } = foldWithinBound(dense, parts, bound);
      expect(tokens).toBe(dense.count(replacement));
      expect(tokens - frame).toBeLessThanOrEqual(bound);
      expect(replacement).toContain('long_name_00000');
    }
  });

  it('gives every folded step its best anchor, and the latest steps more, when its index is full', () => {
    const ledger = ledgerOf();
    const rehearsal = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [spanFold(latestTurnStart(ledger))] },
      // An index of 720 characters.
      { spanAnchors: 30 },
    );
    const state = rehearsal.stateAfter['conversation:user:1'];
    expect(state?.spanEnd).toBe(26);
    // Each of the twelve folded reads keeps the first handler it defines; the index has room for
    // the second handlers of the latest reads only.
    for (let round = 1; round <= 12; round += 1) expect(state?.replacement).toContain(`handler_${round}_0`);
    expect(state?.replacement).toContain('handler_12_1');
    expect(state?.replacement).not.toContain('handler_1_1');
  });

  it('keeps the exact messages in the sidecar under the span key, and expand brings them back', async () => {
    const ledger = ledgerOf();
    const store = createMemoryStore();
    const rehearsal = rehearsePlan(ledger, {}, { planner: 'test', operations: [spanFold(10)] });
    const outcome = await commitRehearsal(
      { store, sessionId: 's', now: () => 1 },
      ledger,
      { version: 0, state: emptySessionState() },
      rehearsal,
    );
    if (outcome.status !== 'committed') throw new Error(outcome.status);
    const binding = outcome.state.payloads['conversation:user:1@10']!;
    expect(binding).toEqual({ end: 10, link: ledger.chain[9] });
    const record = await store.getPayload('s', payloadKey('conversation:user:1@10', binding));
    const payload = parseObjectPayload(record!.payload, 'test');
    expect(payload.kind === 'conversation' && payload.messages).toEqual(ledger.messages.slice(1, 10));
    const expanded = rehearsePlan(ledger, rehearsal.stateAfter, {
      planner: 'test',
      operations: [{ objectId: 'conversation:user:1', operation: 'expand', reason: 'test' }],
    });
    expect(projectView(ledger, expanded.stateAfter).items.map((item) => item.message)).toEqual(
      ledger.messages,
    );
  });
});

describe('span fold indexes list what the view does not show elsewhere', () => {
  const listed = (replacement: string | undefined) =>
    (replacement ?? '').split('\n').find((line) => line.startsWith('anchors: ')) ?? '';

  function twoRequests(): Ledger {
    const round = (id: string, text: string) =>
      toolRound(id, 'read_file', { path: text.split(' ')[0] }, `${text}\n${longOutput(id, 30)}`);
    return indexTranscript(
      [
        systemMessage('You are a coding agent. Settings live in config/agent_settings.yaml.'),
        userMessage('Fix the parser.'),
        ...round('c1', 'src/alpha_module.py reads config/agent_settings.yaml'),
        ...round('c2', 'src/beta_module.py calls alpha_parse'),
        userMessage('Now the renderer.'),
        ...round('c3', 'src/alpha_module.py again, and src/gamma_module.py'),
        ...round('c4', 'src/delta_module.py renders'),
        userMessage('And the tests.'),
        ...round('c5', 'tests/test_render.py'),
      ],
      { tokenCounter: approximateTokenCounter },
    );
  }

  it('leaves out what the pinned instructions show, and what an older fold lists', () => {
    const ledger = twoRequests();
    const first = rehearsePlan(ledger, {}, { planner: 'test', operations: [spanFold(6)] });
    const older = listed(first.stateAfter['conversation:user:1']?.replacement);
    expect(older).toContain('src/alpha_module.py');
    expect(older).not.toContain('config/agent_settings.yaml');
    const second = rehearsePlan(ledger, first.stateAfter, {
      planner: 'test',
      operations: [spanFold(11, 'conversation:user:2')],
    });
    const newer = listed(second.stateAfter['conversation:user:2']?.replacement);
    expect(newer).toContain('src/gamma_module.py');
    expect(newer).not.toContain('src/alpha_module.py');
    // Every name stays in the view, once.
    const view = projectView(ledger, second.stateAfter).items.map((item) => JSON.stringify(item.message));
    expect(view.some((text) => text.includes('src/alpha_module.py'))).toBe(true);
    expect(view.some((text) => text.includes('config/agent_settings.yaml'))).toBe(true);
  });

  it('never leaves a name to a later fold, whose index may go first', () => {
    const ledger = twoRequests();
    const later = rehearsePlan(
      ledger,
      {},
      { planner: 'test', operations: [spanFold(11, 'conversation:user:2')] },
    );
    expect(listed(later.stateAfter['conversation:user:2']?.replacement)).toContain('src/alpha_module.py');
    const earlier = rehearsePlan(ledger, later.stateAfter, { planner: 'test', operations: [spanFold(6)] });
    expect(listed(earlier.stateAfter['conversation:user:1']?.replacement)).toContain('src/alpha_module.py');
  });
});

describe('a reduction judges each operation once per committed state and options', () => {
  /** A ledger whose counter tallies the fold indexes it counts (`[folded …` texts). */
  function countedLedger(rounds = 12) {
    const counted = { folds: 0 };
    const tokenCounter = {
      name: 'approximate',
      count(text: string) {
        if (text.startsWith('[folded ')) counted.folds += 1;
        return approximateTokenCounter.count(text);
      },
    };
    const messages = longSession({ rounds });
    const ledger = createLedger({ tokenCounter });
    ledger.append(messages.slice(0, -2));
    return { ledger, counted, rest: messages.slice(-2) };
  }

  it('takes an operation judged before from the memo, and judges anew what changed', () => {
    const { ledger, counted } = countedLedger();
    const verdicts = createVerdictMemo();
    const plan = { planner: 'test', operations: [spanFold(10)] };
    const state = {};
    const fresh = rehearsePlan(ledger, state, plan);
    const judged = counted.folds;
    expect(judged).toBeGreaterThan(0);

    const first = rehearsePlan(ledger, state, plan, { verdicts });
    const second = rehearsePlan(ledger, state, plan, { verdicts });
    expect(first).toEqual(fresh);
    expect(second).toEqual(fresh);
    // The second rehearsal rendered nothing: the fold came from the memo.
    expect(counted.folds).toBe(2 * judged);

    // Another bound, another committed state: judged anew.
    const before = counted.folds;
    const bounded = rehearsePlan(ledger, state, plan, { verdicts, spanAnchorTokens: 40 });
    expect(bounded).toEqual(rehearsePlan(ledger, state, plan, { spanAnchorTokens: 40 }));
    expect(counted.folds).toBeGreaterThan(before);
    const again = counted.folds;
    rehearsePlan(ledger, { ...state }, plan, { verdicts });
    expect(counted.folds).toBeGreaterThan(again);
  });

  it('keeps a fold judged across options it does not read, and judges a prune anew under them', () => {
    const { ledger, counted } = countedLedger();
    const verdicts = createVerdictMemo();
    // An output after the folded span, before the latest turn.
    const output = ledger.objects.find(
      (object) => object.kind !== 'conversation' && !object.pinned && object.messageIndex > 12,
    );
    expect(output).toBeDefined();
    const prune: PlannedOperation = { objectId: output!.id, operation: 'prune', reason: 'test' };
    const plan = { planner: 'test', operations: [spanFold(10), prune] };
    const state = {};
    rehearsePlan(ledger, state, plan, { verdicts });
    const judged = counted.folds;
    /** The fold indexes a memoized rehearsal renders, after checking it against a fresh one. */
    const rendered = (operations: PlannedOperation[], options: RehearseOptions) => {
      const before = counted.folds;
      const memoized = rehearsePlan(ledger, state, { planner: 'test', operations }, { verdicts, ...options });
      const renders = counted.folds - before;
      expect(memoized).toEqual(rehearsePlan(ledger, state, { planner: 'test', operations }, options));
      return { renders, memoized };
    };
    // Tombstone options are a prune's alone: the fold comes from the memo, the prune does not.
    for (const options of [{ namedTombstones: false }, { tombstones: false }, { renameTombstones: true }])
      expect(rendered(plan.operations, options).renders).toBe(0);
    const { memoized: bare } = rendered(plan.operations, { tombstones: false });
    expect(bare.stateAfter[output!.id]?.replacement).toBe('');
    expect(rendered(plan.operations, {}).memoized.stateAfter[output!.id]?.replacement).not.toBe('');
    expect(judged).toBeGreaterThan(0);

    // A fold with its own index bound does not read the shared one; a fold without one does.
    const bounded = [{ ...spanFold(10), indexTokens: 60 }];
    expect(rendered(bounded, { spanAnchorTokens: 400 }).renders).toBeGreaterThan(0);
    expect(rendered(bounded, { spanAnchorTokens: 300 }).renders).toBe(0);
    expect(rendered(plan.operations, { spanAnchorTokens: 300 }).renders).toBeGreaterThan(0);
  });

  it('judges anew once the ledger has grown', () => {
    const { ledger, counted, rest } = countedLedger();
    const verdicts = createVerdictMemo();
    const plan = { planner: 'test', operations: [spanFold(30)] };
    const state = {};
    const short = rehearsePlan(ledger, state, plan, { verdicts });
    ledger.append(rest);
    const before = counted.folds;
    const grown = rehearsePlan(ledger, state, plan, { verdicts });
    expect(counted.folds).toBeGreaterThan(before);
    expect(grown).toEqual(rehearsePlan(ledger, state, plan));
    expect(grown.accepted[0]?.operation.spanEnd).not.toBe(short.accepted[0]?.operation.spanEnd);
  });

  it('serves one ledger: another one is judged without it', () => {
    const one = countedLedger();
    const other = countedLedger();
    const verdicts = createVerdictMemo();
    const plan = { planner: 'test', operations: [spanFold(10)] };
    rehearsePlan(one.ledger, {}, plan, { verdicts });
    const state = {};
    rehearsePlan(other.ledger, state, plan, { verdicts });
    const before = other.counted.folds;
    rehearsePlan(other.ledger, state, plan, { verdicts });
    expect(other.counted.folds).toBeGreaterThan(before);
  });
});
