import { describe, expect, it } from 'vitest';
import { indexTranscript, type Ledger } from '../ledger.js';
import type { ViewState } from '../operations.js';
import { projectView } from '../project-view.js';
import { latestTurnStart, rehearsePlan } from '../rehearse-plan.js';
import { longSession } from '../testing/long-session.js';
import { toolRound, userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter } from '../tokens.js';
import type { Message } from '../transcript.js';
import { planFallback } from './fallback-plan.js';
import { createPinRule } from './pins.js';

function ledgerOf(messages: Message[]): Ledger {
  return indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
}

function rehearse(ledger: Ledger, state: ViewState, operations: ReturnType<typeof planFallback>) {
  return rehearsePlan(ledger, state, { planner: 'fallback', operations });
}

describe('planFallback: span folds first', () => {
  it('folds the oldest work just far enough, keeping the request and the latest steps', () => {
    const ledger = ledgerOf(longSession({ rounds: 20 }));
    const viewTokens = projectView(ledger, {}).tokens;
    const target = Math.floor(viewTokens * 0.6);
    const operations = planFallback(ledger, {}, viewTokens, target);
    expect(operations).toHaveLength(1);
    expect(operations[0]).toMatchObject({ objectId: 'conversation:user:1', operation: 'fold' });
    const spanEnd = operations[0]!.spanEnd!;
    expect(spanEnd).toBeLessThan(latestTurnStart(ledger));
    const rehearsal = rehearse(ledger, {}, operations);
    expect(rehearsal.rejected).toEqual([]);
    expect(rehearsal.tokensAfter).toBeLessThanOrEqual(target);
    const view = projectView(ledger, rehearsal.stateAfter);
    // System prompt, the pinned request verbatim, the fold, then the later steps untouched.
    expect(view.items[0]?.message).toBe(ledger.messages[0]);
    expect(view.items[1]?.message).toBe(ledger.messages[1]);
    expect(view.items[2]?.changed).toBe(true);
    expect(view.items[3]?.source).toBe(spanEnd);
    expect(view.items.at(-1)?.message).toBe(ledger.messages.at(-1));
  });

  it('goes as far as the latest turn when the target needs it, for every request', () => {
    const ledger = ledgerOf(longSession({ rounds: 20, requestEvery: 5 }));
    const operations = planFallback(ledger, {}, projectView(ledger, {}).tokens, 0);
    const folds = operations.filter((operation) => operation.operation === 'fold');
    expect(folds.map((operation) => operation.objectId)).toEqual([
      'conversation:user:1',
      'conversation:user:2',
      'conversation:user:3',
      'conversation:user:4',
    ]);
    const rehearsal = rehearse(ledger, {}, operations);
    const view = projectView(ledger, rehearsal.stateAfter);
    // Every request stays in the view, byte for byte.
    for (const object of ledger.objects.filter((candidate) => candidate.kind === 'conversation')) {
      expect(view.items.some((item) => item.message === ledger.messages[object.messageIndex])).toBe(true);
    }
    expect(view.items.at(-1)?.message).toBe(ledger.messages.at(-1));
  });

  it('proposes nothing when the view is already at the target', () => {
    const ledger = ledgerOf(longSession({ rounds: 5 }));
    expect(planFallback(ledger, {}, 100, 100)).toEqual([]);
  });

  it('folds a span deeper on a later call', () => {
    const ledger = ledgerOf(longSession({ rounds: 20 }));
    const viewTokens = projectView(ledger, {}).tokens;
    const first = rehearse(ledger, {}, planFallback(ledger, {}, viewTokens, Math.floor(viewTokens * 0.8)));
    const second = planFallback(ledger, first.stateAfter, first.tokensAfter, Math.floor(viewTokens * 0.4));
    expect(second[0]?.objectId).toBe('conversation:user:1');
    expect(second[0]?.spanEnd).toBeGreaterThan(first.stateAfter['conversation:user:1']?.spanEnd ?? 0);
    expect(rehearse(ledger, first.stateAfter, second).tokensAfter).toBeLessThan(first.tokensAfter);
  });
});

describe('planFallback: when work cannot fold', () => {
  /** A rules file read early pins its output: work can fold only up to it. */
  function pinnedEarly(): Message[] {
    const messages: Message[] = [
      userMessage('go'),
      ...toolRound('rules', 'read_file', { path: 'AGENTS.md' }, 'Never push.'),
    ];
    for (let index = 0; index < 10; index += 1) {
      messages.push(...toolRound(`c${index}`, 'bash', { command: `echo ${index}` }, 'ok'));
    }
    messages.push(...longSession({ rounds: 3 }).slice(2));
    return messages;
  }

  it('prunes outputs whose tombstone saves something, then drops old steps with their shells', () => {
    const ledger = ledgerOf(pinnedEarly());
    expect(ledger.get('skill:read_file:1')?.pinned).toBe(true);
    const operations = planFallback(ledger, {}, projectView(ledger, {}).tokens, 0);
    // No span fold: the pinned read sits right after the request.
    expect(operations.some((operation) => operation.operation === 'fold')).toBe(false);
    expect(operations.every((operation) => operation.operation === 'prune')).toBe(true);
    expect(operations.map((operation) => operation.objectId)).not.toContain('skill:read_file:1');
    // The reads save something as tombstones and come first; the tiny echoes leave with their shells.
    expect(operations[0]?.objectId).toMatch(/^function:read_file:/);
    const shells = operations.filter((operation) => operation.dropShell === true);
    expect(shells.length).toBeGreaterThan(3);
    expect(shells.some((operation) => operation.objectId.startsWith('function:bash:'))).toBe(true);
    const rehearsal = rehearse(ledger, {}, operations);
    expect(rehearsal.rejected.filter((entry) => entry.reason !== 'duplicate')).toEqual([]);
    expect(rehearsal.tokensAfter).toBeLessThan(projectView(ledger, {}).tokens);
  });

  it('prunes nothing when prunes are not allowed', () => {
    const ledger = ledgerOf(pinnedEarly());
    const viewTokens = projectView(ledger, {}).tokens;
    expect(planFallback(ledger, {}, viewTokens, 0, 0, false)).toEqual([]);
  });

  it('counts an object already folded at its folded size', () => {
    const ledger = ledgerOf(pinnedEarly());
    const folded = rehearse(ledger, {}, [
      { objectId: 'function:read_file:12', operation: 'fold', reason: 'test' },
    ]).stateAfter;
    const viewTokens = projectView(ledger, folded).tokens;
    const raw = ledger.get('function:read_file:12')!.tokens;
    // Counted at its raw size, pruning the folded read alone would look like enough.
    const operations = planFallback(ledger, folded, viewTokens, viewTokens - raw + 50);
    expect(operations[0]?.objectId).toBe('function:read_file:12');
    expect(operations.length).toBeGreaterThan(1);
  });
});
